// OwnerProcessExecutor: one device of a worker (a GPU, or a CPU executor)
// whose kernels run in executor processes (ProcessExecutor) of their own,
// one per owner, so that a kernel shares its process — and on a GPU its
// context — only with its owner's builds and the rows its owner's runs
// keep.  The owner of a program is its checksum (owner_of()): a program's
// kernels never see another program's kept rows, not even to read them.
//
// A program's first build or run on the device takes the spare process (one
// started ahead, so that it pays no process or GPU context start), and a
// new spare starts in the background.  At most `max_owners` processes are
// kept; one more ends the one used longest ago that serves no run, with the
// rows it kept.  A GPU run that does not fit its device (kTooLarge) beside
// the other processes' contexts and kept rows is begun once more after those
// that serve no run end.  Every call of a run goes to the process its
// begin_run chose; kill_process(), take_output() and pid() name that
// process too.
//
//   OwnerProcessExecutor e(std::move(started), 8);
//   e.build(program);                          // in the program's own process
//   auto kept = e.kept_rows_for(program.hash);   // what its runs may name by key
//   e.begin_run(program, params, std::move(rows));
//   e.send_iterate(state, 0, 0, -1);  e.receive_iterate(&aggregate, &stats);
//   e.end_run(true);
//
// Calls are serialised by the caller (ExecutorHandle's lock), except
// kill_process(), take_output() and pid(), which any thread may call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <future>
#include <list>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "exec/executor.h"
#include "exec/process/process_executor.h"

namespace lizard {

class OwnerProcessExecutor : public Executor {
 public:
  // `first`: a started process, whose info() this executor reports and
  // which becomes the spare.  `max_owners` (at least 1): processes kept.
  OwnerProcessExecutor(std::unique_ptr<ProcessExecutor> first, size_t max_owners);
  ~OwnerProcessExecutor() override;

  // Whose processes run the kernels of the program of this checksum.
  static const std::string& owner_of(const std::string& program_hash) { return program_hash; }

  const ExecutorInfo& info() const override { return info_; }
  Status build(const ProgramImage& program) override;
  Status begin_run(const ProgramImage& program, const ParamValues& params,
                   PartitionData data) override;
  Status iterate(const SectionBuffer& state, int64_t iteration, SectionBuffer* aggregate,
                 IterationStats* stats) override;
  Status iterate_rows(const SectionBuffer& state, int64_t iteration, SectionBuffer* aggregate,
                      IterationStats* stats, int64_t first, int64_t count) override;
  Result<std::vector<std::vector<uint8_t>>> end_run(bool want_outputs) override;
  Result<OutputFieldBytes> end_run_in_place(bool want_outputs) override;
  CompileStats run_compile_stats() const override;
  void refresh_free_memory() override;
  void refresh_load() override;
  // Every owner's kept rows (what the worker reports and the server places by).
  std::vector<std::string> kept_rows() const override;
  // Without an owner there is no process to keep them in: kConflict.  Use
  // keep_file_rows_for().
  Status keep_file_rows(const std::string& key, const FileRows& where) override;
  void forget_kept_rows(const std::set<std::string>& keys) override;

  // The rows the process of `owner` keeps (none when it has no process).
  std::vector<std::string> kept_rows_for(const std::string& owner) const;
  // Keeps these rows in the process of `owner`, starting it if needed.
  Status keep_file_rows_for(const std::string& owner, const std::string& key,
                            const FileRows& where);
  // Ends the process of `owner` (its program was deleted), unless it serves a run.
  void forget_owner(const std::string& owner);
  // The owners with a process now, the one used most recently first.
  std::vector<std::string> owners() const;

  // ProcessExecutor's calls, on the process of the latest begin_run; before
  // the first (or once that process ended for the cap or its owner), the
  // iterations fail with "no run", pid() is -1 and the rest do nothing.
  Status send_iterate(const SectionBuffer& state, int64_t iteration, int64_t first, int64_t count);
  Status receive_iterate(SectionBuffer* aggregate, IterationStats* stats);
  OutputPipe::Taken take_output();
  void kill_process();
  Status restart_if_ended();
  bool process_running();
  pid_t pid() const;

 private:
  struct Owned {
    std::string owner;
    std::unique_ptr<ProcessExecutor> process;
  };
  // The process of `owner`, moved to the front of the list: its own, the
  // spare, or a new one; ends processes beyond max_owners_.
  Result<ProcessExecutor*> process_for(const std::string& owner);
  std::unique_ptr<ProcessExecutor> take_spare();
  void start_spare();
  // Processes beyond max_owners_ that serve no run, the oldest first; the
  // caller ends them outside mu_.
  std::vector<std::unique_ptr<ProcessExecutor>> over_capacity();
  // Ends every process but `keep` that serves no run, and the spare; how many.
  size_t end_idle_others(const ProcessExecutor* keep);
  // Any process to ask about the device (the current one, else any).
  ProcessExecutor* any_process() const;
  Status no_run() const;

  const size_t max_owners_;
  const ExecutorProcessSpec spec_;
  ExecutorInfo info_;
  mutable std::mutex mu_;
  std::list<Owned> owned_;                  // GUARDED_BY(mu_): most recently used first
  ProcessExecutor* current_ = nullptr;      // GUARDED_BY(mu_): the latest begin_run's (or build's)
  std::unique_ptr<ProcessExecutor> spare_;  // GUARDED_BY(mu_)
  std::future<Result<std::unique_ptr<ProcessExecutor>>>
      spare_starting_;  // only on callers' threads
};

}  // namespace lizard
