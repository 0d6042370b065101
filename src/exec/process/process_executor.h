// ProcessExecutor: an Executor whose device lives in a process of its own
// (an executor host, executor_host.h), so that a kernel that faults, calls
// exit() or never ends costs that process and not the worker.  Every call
// is forwarded over the process's channel (executor_protocol.h); info() is
// fetched when the process starts.
//
//   auto e = ProcessExecutor::start({{"executor-host", "--backend", "cpu"}, "the CPU backend"});
//   (*e)->begin_run(program, params, std::move(rows));
//   (*e)->send_iterate(state, iteration, 0, -1);  ...  (*e)->receive_iterate(&aggregate, &stats);
//   other_thread: (*e)->kill_process();   // the blocked call returns an error
//
// When the process ends during a call, the call fails with how it ended
// ("the executor process for GPU 0 ended during iterate: killed by signal
// 11 (SIGSEGV, a segmentation fault)"); the run it held is gone, and the
// next build, begin_run or refresh (or restart_if_ended()) starts a new
// process.  A device the process reports lost (a GPU context that keeps a
// fault) is handled the same way, so lost() stays false.
//
// What the process prints (a CPU kernel's printf, a GPU kernel's device
// printf, on stdout or stderr) is captured: the process flushes it before
// each answer, so take_output() after a call returns what that call printed.
//
// Calls are serialised by the caller (ExecutorHandle's lock), except
// kill_process() and take_output(), which any thread may call at any time.
#pragma once

#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/child_process.h"
#include "exec/executor.h"
#include "exec/process/executor_protocol.h"
#include "runlog/output_pipe.h"

namespace lizard {

struct ExecutorProcessSpec {
  std::vector<std::string> args;  // after the binary: {"executor-host", ...}
  std::string label;              // "GPU 0", "the CPU backend": named in errors
  std::string program;            // the binary; empty: this process's own
};

class ProcessExecutor : public Executor {
 public:
  // Starts the process and fetches its info(); fails with the host's error
  // when it cannot create its executor.
  static Result<std::unique_ptr<ProcessExecutor>> start(ExecutorProcessSpec spec);
  ~ProcessExecutor() override;

  const ExecutorInfo& info() const override { return info_; }
  Status build(const ProgramImage& program) override;
  Status begin_run(const ProgramImage& program, const ParamValues& params,
                   PartitionData data) override;
  Status iterate(const SectionBuffer& state, int64_t iteration, SectionBuffer* aggregate,
                 IterationStats* stats) override;
  Status iterate_rows(const SectionBuffer& state, int64_t iteration, SectionBuffer* aggregate,
                      IterationStats* stats, int64_t first, int64_t count) override;
  Result<std::vector<std::vector<uint8_t>>> end_run(bool want_outputs) override;
  // Large outputs stay in the memory file the process sent them in, mapped here.
  Result<OutputFieldBytes> end_run_in_place(bool want_outputs) override;
  CompileStats run_compile_stats() const override { return compile_stats_; }
  void refresh_free_memory() override;
  void refresh_load() override;
  std::vector<std::string> kept_rows() const override {
    return {kept_rows_.begin(), kept_rows_.end()};
  }
  Status keep_file_rows(const std::string& key, const FileRows& where) override;
  void forget_kept_rows(const std::set<std::string>& keys) override;

  // An iteration in two halves, so that a worker starts it on all of its
  // executor processes before it waits for any: sends the state and the
  // iteration (rows [first, first + count) of the partition; count < 0: all
  // of them), then waits for the aggregate.  Each send_iterate is followed by
  // one receive_iterate.
  Status send_iterate(const SectionBuffer& state, int64_t iteration, int64_t first, int64_t count);
  Status receive_iterate(SectionBuffer* aggregate, IterationStats* stats);

  // What the process printed since the last take (also a process that has
  // ended since: what it printed before it ended).
  OutputPipe::Taken take_output();

  // The process serves `owner` only (an OwnerProcessExecutor's owner) from
  // now on, and so does every process started after it: its builds go among
  // that owner's cache entries and its sandbox narrows to them
  // (executor_host.h).  Before any build or run.
  Status serve_owner(const std::string& owner);

  // SIGKILL to the process, from any thread; a call blocked on it returns.
  void kill_process();
  // Starts a new process when the current one has ended (a no-op otherwise).
  Status restart_if_ended();
  // Whether the process still runs (one that ended is reaped here).
  bool process_running();
  pid_t pid() const;
  // Whether a run is begun on the current process and not yet ended.
  bool in_run() const { return in_run_; }
  const ExecutorProcessSpec& spec() const { return spec_; }

 private:
  explicit ProcessExecutor(ExecutorProcessSpec spec) : spec_(std::move(spec)) {}
  Status spawn();
  Status send_owner();
  // Sends a request and waits for its reply; `reply` is left past the reply's
  // head.  A process that ended makes this the error that says how.
  Status call(ExecutorOp op, const std::string_view* parts, size_t count, std::string* frame);
  // With `files`, their descriptors go with the request (at most
  // FrameChannel::kMaxDescriptors).
  Status send_request(ExecutorOp op, const std::string_view* parts, size_t count,
                      const std::vector<OwnedFd>& files = {});
  // One begin_run request; with `name_kept`, rows the process keeps are
  // named by key instead of sent.  `rows_missing`: it no longer kept some.
  Status send_begin_run(const ProgramImage& program, const ParamValues& params,
                        const PartitionData& data, bool name_kept, bool* rows_missing);
  Status receive_reply(ExecutorOp op, std::string* frame);
  Status ended_during(ExecutorOp op);
  void reap();  // the process has ended or must: reaps it, notes how it ended
  // The process reported its device lost: it is ended, the next call starts another.
  void end_lost_process();
  Status no_process(ExecutorOp op) const;
  // A call whose reply ends with the keys the process keeps now.
  Status call_for_kept_rows(ExecutorOp op, std::string_view request,
                            const std::vector<OwnedFd>& files = {});

  ExecutorProcessSpec spec_;
  std::unique_ptr<ChildProcess> child_;  // null once the process has ended
  // The latest process's stdout and stderr; replaced when another starts.
  std::shared_ptr<OutputPipe> output_;  // GUARDED_BY(pid_mu_)
  std::string last_end_;                // how the previous process ended
  mutable std::mutex pid_mu_;
  pid_t pid_ = -1;  // GUARDED_BY(pid_mu_): the live process, -1 once it is being reaped
  ExecutorInfo info_;
  std::string owner_;                    // serve_owner's, told to each process
  std::set<std::string> programs_sent_;  // hashes the current process holds
  std::set<std::string> kept_rows_;      // keys of the rows it keeps (Executor::kept_rows)
  // The current process's loans of output memory that the worker is done
  // with, given back with the next end_run; its own per process.
  struct GivenBackLoans {
    std::mutex mu;
    std::vector<uint64_t> ids;  // GUARDED_BY(mu)
    void give_back(uint64_t id) {
      std::lock_guard<std::mutex> l(mu);
      ids.push_back(id);
    }
    std::vector<uint64_t> take() {
      std::lock_guard<std::mutex> l(mu);
      return std::exchange(ids, {});
    }
  };
  std::shared_ptr<GivenBackLoans> loans_ = std::make_shared<GivenBackLoans>();
  bool in_run_ = false;        // the current process holds a run's rows
  bool iterated_ = false;      // an iterate of the run was sent
  std::string iterate_reply_;  // reused by every iteration's reply
  CompileStats compile_stats_;
};

}  // namespace lizard
