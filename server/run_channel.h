// RunChannel: one run's link to its workers, shared by the parts of its
// driver (RunLoader, RunLoop, the outputs' gathering).  The coordinator
// routes the run's worker messages, worker losses, new placements and
// wake-ups (cancel) into its mailbox with deliver(); the driver's thread
// reads them back: one message of a kind from each of a set of workers
// (collect), or the next event from them (next_event_from), either failing
// when one of them is lost, the run is cancelled, past its time limit, or
// the server stops.  A worker's answers have deadlines (expect_answers):
// one that misses one is dropped from the run as a lost worker is, told to
// abort it, and left out of placement until it answers again.
//
//   RunChannel ch(run, ctx);
//   ch.start_clock();
//   ch.expect_answers("run_start", 0, ch.load_deadline_s(rows), workers);
//   auto ready = ch.collect(wire_id, MessageType::kRunReady, workers);
//   ch.end_on_workers(wire_id, workers, /*want_outputs=*/false);
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/frame_pool.h"
#include "common/mailbox.h"
#include "common/status.h"
#include "hooks/hook_process.h"
#include "protocol/wire.h"
#include "server/run_book.h"
#include "server/run_logs.h"
#include "server/worker_registry.h"

namespace lizard {

class ServerMetrics;

struct DriverEvent {
  enum class Kind { kMessage, kResult, kWorkerLost, kPlacement, kWake };
  Kind kind = Kind::kWake;
  std::string worker_id;
  Message msg{MessageType::kHeartbeat, nullptr};  // kMessage
  std::vector<ExecutorRef> executors;             // kPlacement
  std::string worker_name{};                      // kWorkerLost: its hostname, when known
  std::string reason{};                           // kWorkerLost: why its connection ended
  // kResult: an iteration_result frame as it was received.  The driver
  // decodes it where it lies, so that the message of every iteration is
  // neither copied nor parsed into a Message; it gives the buffer back to
  // DriverContext::frames once folded.
  std::string frame{};

  static DriverEvent result(std::string worker_id, std::string frame) {
    DriverEvent ev;
    ev.kind = Kind::kResult;
    ev.worker_id = std::move(worker_id);
    ev.frame = std::move(frame);
    return ev;
  }
};

// What a driver uses of the rest of the server.
struct DriverContext {
  RunBook* book = nullptr;
  WorkerRegistry* workers = nullptr;
  int worker_wait_s = 60;                // how long to wait for new executors
  double run_timeout_s = 0;              // time limit of runs whose request sets none (0: none)
  bool worker_loop = true;               // a run on one worker: that worker drives the loop
  HookProcessOptions hooks;              // bounds the run's host hook calls
  RunLogs* logs = nullptr;               // where the run's hooks' output goes; may be null
  ServerMetrics* metrics = nullptr;      // iteration times and compiles; may be null
  std::function<bool()> stopping;        // the server is shutting down
  std::function<void()> wake_scheduler;  // after asking for executors again
  std::shared_ptr<FramePool> frames;     // where folded results' frames go back; may be null
  std::vector<std::string> data_roots;   // the server's --data-root, sent with each run_start
  // Deadlines for a worker's answers, each counted from when the server has
  // handed the worker everything it needs (its link's queue is empty) or
  // from the worker's last progress report.  Loading (run_start, and
  // run_outputs at the end): load_timeout_s plus the rows' bytes at
  // load_bytes_per_s.  An iteration: iteration_timeout_s plus
  // kIterationSlowdown times the slowest iteration of the run so far.
  double load_timeout_s = 60;
  double load_bytes_per_s = 50e6;
  double iteration_timeout_s = 300;
  static constexpr double kIterationSlowdown = 10;
  // Runs on more workers than this fold their results along a tree of this
  // fan-in before the server folds them (server/run_fold_tree.h); < 2: never.
  int fold_fan_in = 16;
};

class RunChannel {
 public:
  // `ctx` must outlive the channel.
  RunChannel(std::shared_ptr<RunRecord> run, const DriverContext& ctx)
      : run_(std::move(run)), ctx_(ctx) {}

  void deliver(DriverEvent ev) { inbox_.push(std::move(ev)); }
  void close() { inbox_.close(); }
  // The run's time limit counts from now.
  void start_clock();
  SteadyClock::time_point started() const { return started_; }

  // Cancelled, past its time limit, or the server stopping.  A cancel or a
  // time limit also marks the run aborting, so that its workers are told to
  // stop its kernels (run_abort) rather than to end it.
  Status interrupted();
  bool aborting() const { return abort_; }
  // The next event of any kind, or none within `wait`.
  std::optional<DriverEvent> pop_for(std::chrono::milliseconds wait) {
    return inbox_.pop_for(wait);
  }
  // Where each worker of the collection under way lies in its `from`.
  using ParticipantIndex = std::unordered_map<std::string, size_t>;
  // The next event from a worker of `from` (or none after a quiet moment);
  // the loss of one of them is an error.  `index`, when given, is `from`'s.
  Result<std::optional<DriverEvent>> next_event_from(const std::vector<std::string>& from,
                                                     const ParticipantIndex* index = nullptr);
  // One message of `type` from each worker of `from`; a message whose `ok` is
  // false fails the collection unless `keep_failures`.
  Result<std::map<std::string, Message>> collect(const std::string& wire_id, MessageType type,
                                                 const std::vector<std::string>& from,
                                                 bool keep_failures = false);
  // A message of `worker_id` that does not parse or does not fit the run
  // (`what`: `a run_ready that does not parse: ...`): the worker is marked
  // (WorkerRegistry::sent_bad_message) and the error to fail the run with
  // names it.
  Status refuse_message(const std::string& worker_id, const std::string& what);
  // From now on next_event_from() also fails on the loss of any of
  // `workers` (a fold tree's, whose results reach the server through others).
  void watch_losses_of(std::vector<std::string> workers) { watched_ = std::move(workers); }
  // Drops the executors of a lost worker from those the run holds.
  void drop_executors_of(const std::string& worker_id);
  // The workers dropped since the last call, in the order they were lost.
  std::vector<std::string> take_lost_workers() { return std::exchange(lost_workers_, {}); }
  // Ends the run on `participants`: run_end (asking for `outputs` when
  // `want_outputs`), or run_abort when the run is aborting.
  void end_on_workers(const std::string& wire_id, const std::vector<std::string>& participants,
                      bool want_outputs, const std::vector<std::string>& outputs = {});

  // Deadlines for workers' answers (run_channel_deadlines.cpp).  Answers from
  // each of `from` are awaited from now on, for `seconds` each.
  void expect_answers(const char* what, int64_t iteration, double seconds,
                      const std::vector<std::string>& from);
  double load_deadline_s(int64_t rows) const;
  double iteration_deadline_s() const;
  // An iteration of `ms` completed: later iterations' deadlines allow for it.
  void note_iteration_ms(double ms) { slowest_iteration_ms_ = std::max(slowest_iteration_ms_, ms); }
  // A progress report of `worker_id`: its clock starts again.
  void heard_from(const std::string& worker_id);
  // kWorkerLost for the first worker of `from` that has not answered
  // (`answered(k)` false) and is past its deadline; that worker is dropped
  // from the run, told to abort it, and left out of placement.
  template <typename Answered>
  Status check_deadlines(const std::string& wire_id, const std::vector<std::string>& from,
                         const Answered& answered);

 private:
  Status missed_deadline(const std::string& wire_id, const std::string& worker_id);

  std::shared_ptr<RunRecord> run_;
  const DriverContext& ctx_;
  Mailbox<DriverEvent> inbox_;
  SteadyClock::time_point started_;
  double time_limit_s_ = 0;  // 0: none
  bool abort_ = false;
  // The answers awaited now: for what ("run_start", "iteration"), how long
  // each worker of `from` may take, and when its clock started (kept,
  // so that the deadlines of every iteration allocate nothing).
  struct AnswerDeadline {
    const char* what = "";
    int64_t iteration = 0;
    double seconds = 0;  // 0: none
    std::vector<std::string> from;
    std::vector<SteadyClock::time_point> since;
    SteadyClock::time_point next_check;
  } deadline_;
  double slowest_iteration_ms_ = 0;
  std::vector<std::string> lost_workers_;  // dropped since take_lost_workers
  std::vector<std::string> watched_;       // watch_losses_of()
};

template <typename Answered>
Status RunChannel::check_deadlines(const std::string& wire_id, const std::vector<std::string>& from,
                                   const Answered& answered) {
  if (deadline_.seconds <= 0) return Status::Ok();
  const auto now = SteadyClock::now();
  if (now < deadline_.next_check) return Status::Ok();
  deadline_.next_check = now + std::chrono::milliseconds(100);
  for (size_t k = 0; k < from.size(); ++k) {
    if (answered(k)) continue;
    // Awaited from the same list as a rule: then its place is k.
    size_t d = k < deadline_.from.size() && deadline_.from[k] == from[k] ? k : 0;
    if (d != k)
      while (d < deadline_.from.size() && deadline_.from[d] != from[k]) ++d;
    if (d == deadline_.from.size()) continue;  // not awaited with a deadline
    std::shared_ptr<WorkerLink> link = ctx_.workers->link(from[k]);
    if (link && link->queued_bytes() > 0) {  // still being sent what it needs
      deadline_.since[d] = now;
      continue;
    }
    if (now - deadline_.since[d] > std::chrono::duration<double>(deadline_.seconds))
      return missed_deadline(wire_id, from[k]);
  }
  return Status::Ok();
}

}  // namespace lizard
