// RunSession: one run on this worker, on a thread of its own, so that runs
// placed on different executors of the worker proceed at the same time.  It
// loads the worker's rows onto the run's executors (run_start), runs each
// iteration on them at once (its IterationEngine) and replies with their
// aggregates (iterate), and returns the output fields (run_end).  A run on
// this worker alone may have its iterations driven here (loop): the same
// engine, then the run's IterationStep, with no round trip to the server
// between them.  The daemon hands it
// the run's messages in order with post(); the session replies through
// `send` and is done after run_end (or abort()).  abort() also kills the
// processes of the executors the run holds (when executors run in processes
// of their own), so that a kernel that never ends cannot keep the worker.
//
//   RunSession s(ctx, program, std::move(uploaded_rows));
//   s.post(run_start_frame);  s.post(iterate_frame);  ...  s.post(run_end_frame);
//   if (s.finished()) ...;    // the daemon then drops it
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "client/executor_handle.h"
#include "client/fold_links.h"
#include "client/iteration_engine.h"
#include "client/kept_rows_catalog.h"
#include "client/loop_hooks.h"
#include "client/run_output.h"
#include "client/upload_cache.h"
#include "common/frame_pool.h"
#include "common/mailbox.h"
#include "common/status.h"
#include "dataset/data_roots.h"
#include "dataset/file_format.h"
#include "exec/executor.h"
#include "exec/process/process_executor.h"
#include "exec/program_variant.h"
#include "net/outgoing_frame.h"
#include "protocol/messages.h"

namespace lizard {

struct SessionContext {
  std::vector<std::unique_ptr<ExecutorHandle>>* executors = nullptr;
  std::function<void(OutgoingFrame frame)> send;  // a whole frame converts
  // Buffers for the frames given to `send`, which gives them back once
  // written (common/frame_pool.h); null: each frame is allocated.
  std::shared_ptr<FramePool> frames;
  // The program a run_start names, when this worker has built it.
  std::function<std::shared_ptr<const ProgramImage>(const std::string& hash)> find_program;
  // Uploaded rows kept for later runs; null: none are kept.
  UploadCache* uploads = nullptr;
  // The update hook for loops this worker drives; unset: the server drives them.
  OpenLoopHooks open_hooks;
  const DataRoots* data_roots = nullptr;  // dataset paths must lie in these; null: any
  // What the rows executors keep are (for the server's listing); null: not noted.
  KeptRowsCatalog* kept_catalog = nullptr;
  // Whether a run of this variant has its kernels compiled when it begins
  // (client/ahead_builds.h); unset: not known, and not reported.
  std::function<bool(const ProgramVariant&)> needs_compile;
  // Whether a run whose build is missing begins on a quick build (GPU
  // executors with quick builds on) rather than waiting for the optimised one.
  bool begins_on_quick_builds = false;
  // Takes the variant's build from the server's build store when the cache
  // lacks it; true when it must still be compiled here.  Unset: not shared.
  std::function<bool(const ProgramVariant&)> fetch_build;
  // Offers the server the variant's build that this run compiled.
  std::function<void(const ProgramVariant&)> offer_build;
  // The links of runs' fold trees (client/fold_links.h); null: this worker
  // takes part in none, and a run_start that places it in one fails.
  FoldLinks* fold_links = nullptr;
  std::string worker_id;  // the id the server knows this worker by
};

class RunSession {
 public:
  // `uploaded` holds the rows of uploaded fields that arrived ahead of the
  // run_start, by field index.
  RunSession(SessionContext ctx, std::map<size_t, std::shared_ptr<UploadRows>> uploaded);
  ~RunSession();
  RunSession(const RunSession&) = delete;
  RunSession& operator=(const RunSession&) = delete;

  void post(std::string frame) { inbox_.push(std::move(frame)); }
  // Ends the run without replying (the server went away, cancelled the run
  // or stopped it at its time limit), from any thread: kills the processes
  // of the executors it holds, which the session then restarts and lets go.
  void abort();
  bool finished() const { return finished_; }

 private:
  void loop();
  void handle(const MessageView& m);
  Status start(const MessageView& m, const RunStartMsg& h, CompileStats* compile);
  // Runs an iteration the server sent and replies with its result.
  void iterate(const MessageView& m);
  Status iterate_here(const MessageView& m);
  // Drives iterations here until the update hook says done (run_session_loop.cpp).
  void loop_here(const MessageView& m);
  Status run_loop(const LoopMsg& h, SectionBuffer state, LoopStepMsg* failed);
  bool loop_interrupted();
  // The outputs asked for stay in *outs (per executor), where the executors
  // gave them back; *payload views them in the order of *fields, to be
  // framed without joining them.
  Status end(const RunEndMsg& h, std::vector<OutputPart>* fields,
             std::vector<OutputFieldBytes>* outs, std::vector<std::string_view>* payload);
  // A field's rows in the upload cache, and the key the cache holds them by.
  struct CachedRows {
    std::string key;
    UploadCache::Rows rows;
  };
  Status use_upload_cache(const RunStartMsg& h, std::map<size_t, CachedRows>* cached);
  // Dataset fields read from files (run_session_files.cpp): noted once per
  // run, then read for each executor under its lock, unless the executor
  // keeps those rows from an earlier run: they are then named by key alone.
  Status add_file_field(size_t k, const FieldSource& src, int64_t width,
                        const std::vector<PinnedFile>& pinned);
  // An uploaded field this worker does not hold, read as a file field from
  // the server's copy where this worker sees that very version of it.
  Status add_upload_copy(size_t k, const FieldSource& src, int64_t width,
                         const std::vector<PinnedFile>& pinned);
  Status rows_of(size_t k, const FieldSource& src, const PartRows& part, PartitionData* d,
                 std::vector<uint8_t>* buf);
  Status load_file_rows(size_t i, PartitionData* d);
  struct FileField;
  void note_kept(const FileField& ff, const FileRowsKey& key);
  Status acquire_executors();
  void release();
  void reply(OutgoingFrame frame);
  // The run's fold tree (run_session_fold.cpp).  Joins the place run_start
  // gives this worker: dials the worker above it, and opens the inbox of
  // those below it; *unreachable when the one above cannot be reached.
  Status join_fold_tree(const FoldPlace& place, bool* unreachable);
  // Folds the results of the workers below this one for iteration `it`
  // into its own (the engine's one partial), into folded_; the reply's
  // payload then views folded_.
  Status fold_children(int64_t it);
  // An iteration's result goes to the worker above this one, or the server.
  void send_result(std::string frame);
  // An iterate frame goes on to the workers below this one before this one
  // runs it; sent_down_ says whether it reached them.
  void send_down(const std::string& frame);
  void leave_fold_tree();
  bool in_fold_tree() const { return !fold_.empty(); }
  void reply_outputs(const RunOutputsMsg& out, std::vector<OutputFieldBytes> outs,
                     const std::vector<std::string_view>& payload);
  // A buffer for the next frame to reply with.
  std::string take_frame() { return ctx_.frames ? ctx_.frames->take() : std::string(); }
  Executor& executor(size_t i) { return *(*ctx_.executors)[executors_[i]]->executor; }
  std::mutex& lock_of(size_t i) { return (*ctx_.executors)[executors_[i]]->mu; }
  // The process of the run's executor i; null where it runs in the worker.
  OwnerProcessExecutor* process_of(size_t i) { return (*ctx_.executors)[executors_[i]]->process; }

  SessionContext ctx_;
  std::map<size_t, std::shared_ptr<UploadRows>> uploaded_;
  std::string run_id_;
  std::shared_ptr<const ProgramImage> program_;
  ParamValues params_;
  RunValues values_;               // the run's values, for its kernels and hooks
  std::vector<size_t> executors_;  // indices into the worker's executors, in row order
  std::vector<int64_t> rows_;      // each executor's rows
  std::vector<int64_t> missing_;   // fields of the run_start whose cached rows are gone
  struct FileField {
    size_t k = 0;  // index in manifest.dataset
    std::string path;
    FileFormat format = FileFormat::kRaw;
    DType dtype = DType::kFloat32;
    int64_t width = 1;
    std::optional<PinnedFile> pinned;  // the version the run read first
    // The upload whose copy on the server this is (not within the server's
    // roots, kept rows noted under the upload); "" for a file the run named.
    std::string upload;
  };
  std::vector<FileField> file_fields_;
  DataRoots server_roots_;  // the run's: its files are opened within them (and the worker's own)
  // Bytes of file rows this run read, and named from the executors' kept rows.
  std::atomic<uint64_t> file_bytes_read_{0}, file_bytes_kept_{0};
  bool report_progress_ = false;  // run iterations in slices, reporting each
  bool begun_ = false;
  // The run's build when this worker compiled it rather than fetching it:
  // offered to the server once the run is ready, and again at its end.
  std::optional<ProgramVariant> compiled_here_;
  // claims_[i] holds executors_[i] for this run, for i below its size;
  // abort() reads them from another thread, so claims_ changes under held_mu_.
  std::mutex held_mu_;
  std::vector<ExecutorClaim> claims_;  // GUARDED_BY(held_mu_) for writes

  IterationEngine engine_;  // the run's iterations on its executors, at once
  RunOutput output_;        // what its kernels print, sent to the server
  // What iterate() reuses, so that an iteration allocates nothing.
  SectionBuffer state_;
  IterateMsg iterate_msg_;
  IterationResultMsg result_msg_;
  std::vector<std::string_view> payload_parts_;
  // The run's fold tree, when it has one: this worker's place, its link up
  // (null: it sends to the server) and the results from below.
  FoldPlace fold_;
  std::shared_ptr<WsChannel> fold_parent_;
  // What the worker above sends down (the iterate frames) reaches this
  // session's inbox while `session` is set: the link's io thread may still
  // deliver one as the session goes.
  struct FromAbove {
    std::mutex mu;
    RunSession* session = nullptr;  // GUARDED_BY(mu)
  };
  std::shared_ptr<FromAbove> from_above_;
  Status sent_down_;
  std::shared_ptr<FoldInbox> fold_inbox_;
  SectionBuffer folded_;                   // its own partial with its children's folded in
  SectionBuffer child_partial_;            // a child's, read into the aggregate's layout
  std::vector<std::string> child_frames_;  // this iteration's, by child
  IterationResultMsg child_result_;
  Mailbox<std::string> inbox_;
  std::optional<std::string> stopped_by_;  // a frame that ended a loop, handled next
  std::atomic<bool> finished_{false};
  std::atomic<bool> aborting_{false};
  std::thread thread_;
};

}  // namespace lizard
