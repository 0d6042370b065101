// RunDriver: drives one run on the executors the scheduler gave it, on a
// thread of its own, so that many runs proceed at once.  It plans the run's
// rows over its executors, loads them (uploaded rows as paced chunks), runs
// the iterations — state out, aggregates back, folded with the program's
// reducers and hooks; or, for a run on one worker, that worker drives them
// and reports each — and gathers the output fields.  When a worker it uses
// is lost, it re-plans over the executors it still holds (or waits for the
// scheduler to give it others) and resumes at the interrupted iteration, or
// starts over where kernels keep per-row values.  After every completed
// iteration it checkpoints the run's state in the run store, so that a
// restarted server resumes the run there (or starts it over, by the same
// rule as for a lost worker).  A worker's answers have deadlines (loading
// and each iteration, see AnswerDeadline): one that misses one is dropped
// from the run as a lost worker is, and left out of placement until it
// answers again.
//
// The coordinator routes the run's worker messages, worker losses, new
// placements and wake-ups (cancel) into the driver's mailbox with deliver();
// nothing else touches the driver's state, so it has no lock: the mailbox
// is the one part shared between threads.  Records change through the
// RunBook, under its lock.
//
//   RunDriver d(run, ctx);
//   d.start([&](const std::string& id) { ...give its executors back... });
//   d.deliver({DriverEvent::Kind::kMessage, "w1", std::move(msg)});
//   d.deliver(DriverEvent::result("w1", std::move(iteration_result_frame)));
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/clock.h"
#include "common/frame_pool.h"
#include "common/mailbox.h"
#include "common/status.h"
#include "hooks/hook_process.h"
#include "program/layout.h"
#include "protocol/iteration_messages.h"
#include "protocol/wire.h"
#include "server/ordered_fold.h"
#include "server/run_book.h"
#include "server/worker_registry.h"

namespace lizard {

class RunHooks;
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
};

class RunDriver {
 public:
  RunDriver(std::shared_ptr<RunRecord> run, DriverContext ctx);
  ~RunDriver();
  RunDriver(const RunDriver&) = delete;
  RunDriver& operator=(const RunDriver&) = delete;

  // Starts the run's thread.  `release` runs on it once the run no longer
  // uses its executors, just before its record is finished.
  void start(std::function<void(const std::string& run_id)> release);
  void deliver(DriverEvent ev) { inbox_.push(std::move(ev)); }
  bool exited() const { return exited_; }
  void join();

 private:
  // The run's state and aggregate sections, kept across attempts, and its
  // host hooks (their process ends with the run).
  struct Sections {
    SectionBuffer state, agg, partial, initial_state;
    std::unique_ptr<RunHooks> hooks;
  };
  Status drive();
  Status run_attempts(Sections* s);
  void resume_after_restart(bool per_row_values, Sections* s, int64_t* it, bool* done);
  void save_checkpoint(int64_t iterations, bool done, const Sections& s);
  Status wait_for_placement();
  Result<std::vector<std::string>> start_partitions(const std::string& wire_id);
  Result<std::map<std::string, Message>> load_workers(
      const std::string& wire_id,
      const std::map<std::string, std::vector<const PlanEntry*>>& by_worker,
      const std::vector<std::string>& which, bool stream_uploads);
  Status start_worker(const std::string& wire_id, const std::string& worker_id,
                      const std::vector<const PlanEntry*>& entries, bool stream_uploads);
  Status limit_rows_to_memory(std::vector<ExecutorSlot>* slots) const;
  Status iterate(const std::string& wire_id, const std::vector<std::string>& participants,
                 int64_t it, Sections* s, bool* done);
  // The run's one worker drives iterations [*it, max) (run_driver_loop.cpp);
  // `unsupported` when it cannot, and nothing ran.
  Status loop_on_worker(const std::string& wire_id, const std::string& worker, int64_t* it,
                        Sections* s, bool* done, bool* unsupported);
  bool can_loop_on_worker(const std::vector<std::string>& participants) const;
  // Records a finished iteration: timings, metrics, progress.
  void record_iteration(IterationTiming timing);
  // The record and checkpoint of the iteration iterate() finished last,
  // kept until the next iteration's frames are sent: building them (the
  // state's fields as JSON, the checkpoint's copies) then overlaps the
  // workers' kernels rather than lying between two iterations.  Done once
  // the next frames are sent, or when the iterations stop.
  void record_finished_iteration(const Sections& s);
  // The state's scalar fields, for the iteration's timing.
  nlohmann::json state_scalars(const Sections& s) const;
  Status gather_outputs(const std::string& wire_id, const std::vector<std::string>& participants,
                        const Sections& s);
  void end_on_workers(const std::string& wire_id, const std::vector<std::string>& participants,
                      bool want_outputs, const std::vector<std::string>& outputs = {});
  // One message of `type` from each worker of `from`; a message whose `ok` is
  // false fails the collection unless `keep_failures`.
  Result<std::map<std::string, Message>> collect(const std::string& wire_id, MessageType type,
                                                 const std::vector<std::string>& from,
                                                 bool keep_failures = false);
  // The iteration_result of each worker of `from`, each folded into the
  // aggregate (s->agg, set to its identity first) as soon as the results of
  // the workers before it in `from` are (OrderedFold): the fold overlaps the
  // wait for the rest, and its order is always that of `from`.  A result
  // that reports a failure fails the collection.  Allocates nothing once
  // results_ has grown: the frames are kept as they came until folded.
  Status collect_and_fold(const std::string& wire_id, const std::vector<std::string>& from,
                          int64_t it, Sections* s);
  // Folds the k-th result (from `worker_id`) into s->agg, with the
  // program's aggregate hook where it has custom reducers.
  Status fold_result(const std::string& worker_id, size_t k, int64_t it, Sections* s);
  // Where each worker of the collection under way lies in its `from`.
  using ParticipantIndex = std::unordered_map<std::string, size_t>;
  // The next event from a worker of `from` (or none after a quiet moment);
  // the loss of one of them is an error.  `index`, when given, is `from`'s.
  Result<std::optional<DriverEvent>> next_event_from(const std::vector<std::string>& from,
                                                     const ParticipantIndex* index = nullptr);
  // Cancelled, past its time limit, or the server stopping.  A cancel or a
  // time limit also sets abort_, so that the run's workers are told to stop
  // its kernels (run_abort) rather than to end it.
  Status interrupted();
  void drop_executors_of(const std::string& worker_id);
  // Deadlines for workers' answers (run_driver_deadlines.cpp).  Answers from
  // each of `from` are awaited from now on, for `seconds` each.
  void expect_answers(const char* what, int64_t iteration, double seconds,
                      const std::vector<std::string>& from);
  double load_deadline_s(int64_t rows) const;
  double iteration_deadline_s() const;
  // A progress report of `worker_id`: its clock starts again.
  void heard_from(const std::string& worker_id);
  // kWorkerLost for the first worker of `from` that has not answered
  // (`answered(k)` false) and is past its deadline; that worker is dropped
  // from the run, told to abort it, and left out of placement.
  template <typename Answered>
  Status check_deadlines(const std::string& wire_id, const std::vector<std::string>& from,
                         const Answered& answered);
  Status missed_deadline(const std::string& wire_id, const std::string& worker_id);

  std::shared_ptr<RunRecord> run_;
  DriverContext ctx_;
  Mailbox<DriverEvent> inbox_;
  std::thread thread_;
  std::atomic<bool> exited_{false};
  // The driver's thread only: why the run last lost a worker, and whether it
  // starts over (the record's timings go at its first new iteration).
  std::string last_loss_;
  bool restart_pending_ = false;
  bool checkpoints_ = false;  // the run resumes from checkpoints after a restart
  struct FinishedIteration {
    bool due = false;
    IterationTiming timing;  // its state left out: read when recorded
    bool done = false;
  } finished_;
  // The iterate frame, shared by the sends to every worker and reused by
  // the next iteration once they are written.
  std::shared_ptr<std::string> iterate_frame_;
  // An iteration's results, by participant (collect_and_fold()): the frames
  // as they came until folded, their payloads (views into them), the
  // slowest kernel time, the time spent folding, and the header last read.
  // Kept, so that folding allocates nothing.
  std::vector<std::string> results_;
  std::vector<std::string_view> payloads_;
  ParticipantIndex participant_index_;  // of indexed_
  std::vector<std::string> indexed_;
  OrderedFold fold_order_;
  double results_kernel_ms_ = 0;
  double results_fold_ms_ = 0;
  IterationResultMsg result_;
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
};

template <typename Answered>
Status RunDriver::check_deadlines(const std::string& wire_id, const std::vector<std::string>& from,
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
