// RunDriver: drives one run on the executors the scheduler gave it, on a
// thread of its own, so that many runs proceed at once.  A thin
// orchestrator of the run's attempts, each of which
//  - loads the run: plans its rows over the executors it holds and loads
//    them on the workers (RunLoader);
//  - runs its iterations: state out, partial aggregates back, folded and
//    passed to the hooks by the run's IterationStep; or, for a run on one
//    worker, that worker drives them and reports each (RunLoop);
//  - gathers the output fields (gather_outputs).
// When a worker it uses is lost, the next attempt re-plans over the
// executors it still holds (or waits for the scheduler to give it others)
// and resumes at the interrupted iteration, or starts over where kernels
// keep per-row values; a restarted server resumes the run from its last
// checkpoint (RunRecovery).  A worker's answers have deadlines: one that
// misses one is dropped from the run as a lost worker is (RunChannel).
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
#include <memory>
#include <string>
#include <thread>

#include "common/status.h"
#include "server/run_channel.h"
#include "server/run_loader.h"
#include "server/run_loop.h"
#include "server/run_record.h"
#include "server/run_recovery.h"
#include "server/run_sections.h"

namespace lizard {

class RunDriver {
 public:
  RunDriver(std::shared_ptr<RunRecord> run, DriverContext ctx);
  ~RunDriver();
  RunDriver(const RunDriver&) = delete;
  RunDriver& operator=(const RunDriver&) = delete;

  // Starts the run's thread.  `release` runs on it once the run no longer
  // uses its executors, just before its record is finished.
  void start(std::function<void(const std::string& run_id)> release);
  void deliver(DriverEvent ev) { channel_.deliver(std::move(ev)); }
  bool exited() const { return exited_; }
  void join();

 private:
  Status drive();
  Status run_attempts(RunSections* s);

  std::shared_ptr<RunRecord> run_;
  DriverContext ctx_;
  RunChannel channel_;
  RunRecovery recovery_;
  RunLoader loader_;
  RunLoop loop_;
  std::thread thread_;
  std::atomic<bool> exited_{false};
};

}  // namespace lizard
