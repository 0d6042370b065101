// Coordinator::Impl: the head node's modules and threads, shared by the
// files that implement the coordinator (coordinator.cpp: programs, runs,
// workers and durability; coordinator_scheduling.cpp: the scheduling thread
// and the run drivers it starts).  Private to those files.
#pragma once

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

#include "buildstore/build_service.h"
#include "common/clock.h"
#include "exec/host_compiler.h"
#include "server/build_ahead_requests.h"
#include "server/coordinator.h"
#include "server/dataset_store.h"
#include "server/file_visibility.h"
#include "server/http_routes.h"
#include "server/program_registry.h"
#include "server/row_stager.h"
#include "server/run_book.h"
#include "server/run_driver.h"
#include "server/run_logs.h"
#include "server/scheduler.h"
#include "server/server_metrics.h"
#include "server/usage_ledger.h"
#include "server/worker_registry.h"

namespace lizard {

// What bounds a program's host hooks, in its check and in its runs.
inline HookProcessOptions hook_options(const CoordinatorOptions& opts) {
  HookProcessOptions h;
  h.call_timeout_ms = opts.hook_timeout_s * 1000;
  h.timeout_setting = "--hook-timeout";
  return h;
}

struct Coordinator::Impl : RouteActions {
  CoordinatorOptions opts;
  HostCompiler compiler;
  RunLogs logs;  // before the programs, whose hook processes write here
  ProgramRegistry programs;
  WorkerRegistry workers;
  RunBook runs;
  DatasetStore datasets;
  Scheduler scheduler;
  UsageLedger usage;  // each user's recent executor-seconds; the scheduling thread's
  ServerMetrics metrics{&workers, &runs};
  RowStager stager;           // POST /datasets/stage and /datasets/drop
  FileVisibility visibility;  // POST /datasets/probe
  BuildAheadRequests ahead;   // queued runs' variants the workers were asked to build
  BuildService builds;        // builds workers share (after `programs` and `workers`, its hooks')
  HttpRoutes routes;
  // The request pool: POST /programs and /runtime/... work off the io
  // thread; nothing on it waits on user code.
  boost::asio::thread_pool pool{4};
  // Runs `work` on the request pool; once the server is stopping (the pool
  // joined or about to be), on the caller's thread, so that it still answers.
  void offload(std::function<void()> work) {
    if (stopping) return work();
    boost::asio::post(pool, std::move(work));
  }
  // Compiles and loads programs' host.cpp (each compile bounded by
  // --compile-timeout, each load by --hook-timeout); a registration that
  // waits longer than the compile time-out for a thread here is answered
  // 503 at that deadline (slot_deadlines runs those timers).
  static constexpr int kHostCodeThreads = 2;
  boost::asio::thread_pool host_code_pool{kHostCodeThreads};
  boost::asio::thread_pool slot_deadlines{1};
  std::atomic<bool> stopping{false};
  // Workers' frames are read into these buffers; each goes back once its
  // message is handled (an iteration result's, by the run's driver).
  std::shared_ptr<FramePool> frames = std::make_shared<FramePool>();

  std::mutex drivers_mu;
  std::map<std::string, std::unique_ptr<RunDriver>, std::less<>> drivers;  // GUARDED_BY(drivers_mu)

  // Held while a run of a program is queued and while a program is deleted,
  // so that no run is queued for a program on its way out.
  std::mutex programs_mu;

  SteadyClock::time_point resumed_until;  // set at start, before the scheduling thread

  std::mutex sched_mu;
  std::condition_variable sched_cv;
  bool sched_dirty = false;  // GUARDED_BY(sched_mu)
  std::thread sched_thread;

  explicit Impl(CoordinatorOptions o)
      : opts(std::move(o)),
        compiler((std::filesystem::path(opts.state_dir) / "hooks").string(),
                 CompileCache::kDefaultMaxBytes, opts.compile_timeout_s),
        logs(opts.state_dir),
        programs(opts.state_dir, &compiler, hook_options(opts), opts.max_state_bytes),
        runs(opts.state_dir),
        datasets(opts.state_dir),
        scheduler({opts.max_bypass}),
        stager(&workers, opts.data_roots.roots(), {opts.load_timeout_s, 50e6}),
        visibility(&workers, &opts.data_roots),
        builds((std::filesystem::path(opts.state_dir) / "builds").string(),
               build_service_options(opts), build_service_hooks()),
        routes({opts.token, opts.read_token, opts.users.get()},
               {&programs, &workers, &runs, &datasets, this, &metrics,
                [this](std::function<void()> f) { offload(std::move(f)); }, &stager,
                &opts.data_roots, &visibility, &logs}) {}

  static BuildServiceOptions build_service_options(const CoordinatorOptions& o) {
    BuildServiceOptions b;
    b.max_bytes = o.build_store_bytes;
    b.max_build_bytes = std::min(b.max_build_bytes, o.build_store_bytes);
    return b;
  }
  BuildServiceHooks build_service_hooks() {
    BuildServiceHooks h;
    h.find_program = [this](const std::string& hash) -> std::shared_ptr<const ProgramImage> {
      std::shared_ptr<const ProgramEntry> e = programs.find(hash);
      return e ? std::shared_ptr<const ProgramImage>(e, &e->image) : nullptr;
    };
    h.send = [this](const std::string& worker_id, std::string frame) {
      (void)workers.send(worker_id, OutgoingFrame(std::move(frame)));
    };
    return h;
  }

  // ---- RouteActions --------------------------------------------------------
  void register_program(std::string body, const User& caller, Responder respond) override;
  void register_now(const std::string& body, const std::string& owner, const Responder& respond);
  // Builds the host.cpp of `entry` on host_code_pool, or answers 503 when
  // no thread there takes it within the compile time-out.
  void build_host_code(std::shared_ptr<ProgramEntry> entry, const Responder& respond);
  void finish_registration(std::shared_ptr<ProgramEntry> prepared, const Responder& respond);
  void submit_run(const std::string& hash, std::string body, bool wait, const User& caller,
                  Responder respond) override;
  // The uploads a run of `caller` may read: their own, or anyone's for an admin.
  UploadLookup upload_lookup_for(const User& caller);
  void cancel_run(const std::string& id, Responder respond) override;
  void watch_run(const std::string& id, int wait_ms, Responder respond) override;
  void delete_program(const std::string& hash, Responder respond) override;

  // ---- durability ----------------------------------------------------------
  void resume_runs();
  void close_silent_connections();
  void prune();

  // ---- workers -------------------------------------------------------------
  void on_frame(const std::string& worker_id, std::string frame);
  void on_hello(const std::string& worker_id, const nlohmann::json& header);
  void on_log_chunk(const std::string& worker_id, const nlohmann::json& header);
  // Answers a worker of another wire version with a refusal naming both
  // versions, and closes its connection.
  void refuse_version(const std::string& worker_id, int64_t theirs);
  void to_driver(std::string_view run_id, DriverEvent ev);

  // ---- scheduling ----------------------------------------------------------
  void wake_scheduler();
  // The users whose runs wait or run, as the scheduler weighs them: recent
  // usage, executors held, quota.
  std::map<std::string, UserShare> user_shares(const std::vector<PendingRun>& pending);
  // Each waiting run's record says why, where it is its user's quota or share.
  void note_waiting(const std::map<std::string, std::string>& reasons);
  void schedule_loop();
  void schedule_once();
  void start_driver(const std::shared_ptr<RunRecord>& run);
  void request_builds_ahead(const std::vector<PendingRun>& pending, const SchedulePass& pass,
                            const std::vector<WorkerView>& cluster);
  void fail_unservable_waits(const std::vector<PendingRun>& pending,
                             const std::vector<WorkerView>& cluster);
  void reap_drivers();
};

}  // namespace lizard
