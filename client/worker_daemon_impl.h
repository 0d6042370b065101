// WorkerDaemon::Impl: the worker daemon's state, private to client/.
// worker_daemon.cpp holds its life (the connection, the messages, the runs'
// sessions, the builds); worker_resources.cpp what it tells the server of
// itself (hello, each executor's free memory, load and kept rows).
#pragma once

#include <atomic>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "buildstore/build_share.h"
#include "client/aborted_runs.h"
#include "client/ahead_builds.h"
#include "client/fold_links.h"
#include "client/row_staging.h"
#include "client/run_session.h"
#include "client/session_routes.h"
#include "client/worker_connection.h"
#include "client/worker_daemon.h"
#include "client/worker_hooks.h"
#include "common/mailbox.h"
#include "protocol/messages.h"

namespace lizard {

struct WorkerDaemon::Impl {
  // Ahead builds first: their threads offer builds through `conn`.
  ~Impl() { ahead.reset(); }

  WorkerOptions opts;
  DataRoots data_roots;  // from opts.data_roots, at init
  std::vector<std::unique_ptr<ExecutorHandle>> executors;
  std::unique_ptr<UploadCache> uploads;
  KeptRowsCatalog kept_catalog;        // what the executors' kept rows are
  std::unique_ptr<WorkerHooks> hooks;  // before `sessions`: their loops hold its processes
  std::string backend_note;
  std::mutex programs_mu;
  std::map<std::string, std::shared_ptr<const ProgramImage>> programs;  // GUARDED_BY(programs_mu)
  // Builds taken from and given to the server's build store; null: none
  // (executors that keep no compile cache).  Before `ahead` and `sessions`,
  // which use it.
  std::unique_ptr<BuildShare> shared_builds;
  // Queued runs' variants built ahead of them; null: none (before `sessions`,
  // which ask it whether they compile).
  std::unique_ptr<AheadBuilds> ahead;
  // The CPU backend's precompiled runtime headers
  // (precompile_runtime_once_needed), waited for at the end.
  std::shared_ptr<const VariantCompiler> runtime_compiler;
  int programs_compiled = 0;  // on the build thread
  std::future<void> precompiling;
  // Runs' fold trees' links (before `sessions`, which hold some); null: none.
  std::unique_ptr<FoldLinks> fold_links;
  std::string worker_id;  // from the server's welcome; on the daemon's thread
  // The runs being served, by wire id; touched on the daemon's thread only.
  std::map<std::string, std::unique_ptr<RunSession>> sessions;
  // Which of them the io thread hands their frames to directly.
  SessionRoutes routes;
  // Rows of uploaded fields that arrived ahead of their run_start: by run, then field.
  std::map<std::string, std::map<size_t, std::shared_ptr<UploadRows>>> chunks;
  // Runs the server aborted: a run_start of one arriving later starts nothing.
  AbortedRuns aborted;
  // What the connection's io thread hands the daemon's thread, in order.
  struct InboxItem {
    // kStaged: rows were staged or dropped; `frame`, the answer to send
    // once the kept rows are reported anew (empty: none).
    enum Kind { kConnected, kFrame, kLost, kStaged, kRefused } kind;
    std::string frame;
  };
  Mailbox<InboxItem> inbox;
  std::string refused;  // why run() stopped on its own (WorkerDaemon::refused)
  // Programs to build, in the order they came: built on a thread of their
  // own, so that a long compile never holds up the runs' messages.
  Mailbox<std::string> builds;
  std::atomic<bool> builds_stopped{false};
  std::thread builder;
  // Per executor: its latest measurement, and what the server was last told.
  struct Resources {
    uint64_t free_memory = 0;
    double utilization = -1, launch_delay_us = -1;
    std::vector<std::string> kept;  // keys of the rows it keeps
  };
  std::vector<Resources> measured, reported;
  std::unique_ptr<WorkerConnection> conn;
  std::atomic<bool> stopping{false};
  std::unique_ptr<RowStaging> staging;  // stage_rows and drop_rows, on a thread of its own

  Executor& executor(size_t i) { return *executors[i]->executor; }
  HelloMsg hello();
  void send(const Message& m) { conn->send(encode(m)); }
  void measure(size_t i);  // with the executor's lock held
  void refresh_resources();
  void handle(std::string frame);
  // A program or program_removed frame, on the builder thread: in the order
  // they came.
  void on_program_frame(const std::string& frame);
  void build_program(const MessageView& m);
  void precompile_runtime_once_needed();
  void build_ahead(const MessageView& m);
  void on_build_fetched(const MessageView& m);
  // Takes what `variant`'s build lacks from the server; whether it must
  // still be compiled here (and then offered).
  bool fetch_build(const ProgramVariant& variant);
  // Offers the server what the cache holds of `variant`'s build, each tier.
  void offer_build(const ProgramVariant& variant);
  // Lets the build in progress end; drops those not begun.
  void stop_builder() {
    builds_stopped = true;
    builds.close();
    if (builder.joinable()) builder.join();
  }
  void on_chunk(const MessageView& m);
  void to_session(const std::string& run_id, std::string frame, bool starts);
  void on_frame(std::string frame);  // on the io thread
  void reap_sessions();
  void abort_sessions();
};

}  // namespace lizard
