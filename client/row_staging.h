// RowStaging: a worker's side of staging and dropping kept rows outside any
// run (protocol/staging_messages.h).  A stage_rows message loads a file's
// rows onto the executors it names, each kept under the key a run over the
// same rows would name them by (dataset/file_rows_key.h), so that the run
// finds them kept; a drop_rows message lets go of every kept row of a source
// (and an upload's rows in the upload cache).  Each executor is taken as a
// run takes it (ExecutorClaim), so rows a running run uses are
// dropped only once it ends.
//
// Jobs run in order on a thread of their own, never on the daemon's; each
// ends with `done` (the rows_staged frame to send, empty after a drop), which
// the daemon calls after reporting its executors' kept rows anew.
//
//   RowStaging staging(&executors, &catalog, uploads, &roots, [&](std::string reply) {...});
//   staging.post(std::move(frame));   // a stage_rows or drop_rows frame
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "client/kept_rows_catalog.h"
#include "client/run_session.h"
#include "client/upload_cache.h"
#include "common/mailbox.h"
#include "dataset/data_roots.h"
#include "protocol/staging_messages.h"

namespace lizard {

class RowStaging {
 public:
  using Done = std::function<void(std::string reply_frame)>;
  RowStaging(std::vector<std::unique_ptr<ExecutorHandle>>* executors, KeptRowsCatalog* catalog,
             UploadCache* uploads, const DataRoots* worker_roots, Done done);
  ~RowStaging();  // lets the job in progress end, drops the rest
  RowStaging(const RowStaging&) = delete;
  RowStaging& operator=(const RowStaging&) = delete;

  void post(std::string frame);

  // How long a stage waits for a busy executor before it fails.
  static constexpr int kExecutorWaitS = 60;

 private:
  void loop();
  void handle(const std::string& frame);
  RowsStagedMsg stage(const StageRowsMsg& m);
  Status stage_part(const StageRowsMsg& m, const DataRoots& server_roots, StagedPart* part);
  // Drops what it can now; executors a run holds are retried later.
  void drop(const std::string& source);
  void retry_deferred();
  // Takes executor i as a run would (waiting at most `wait_s`; 0: not at
  // all); an empty claim when it stays busy.  The claim lets it go.
  ExecutorClaim take(size_t i, int wait_s);

  std::vector<std::unique_ptr<ExecutorHandle>>* executors_;
  KeptRowsCatalog* catalog_;
  UploadCache* uploads_;  // may be null
  const DataRoots* worker_roots_;
  Done done_;
  Mailbox<std::string> jobs_;
  std::atomic<bool> stopping_{false};
  // Executor index → sources whose rows it keeps but could not drop yet.
  std::map<size_t, std::set<std::string>> deferred_;  // the staging thread's alone
  std::thread thread_;
};

}  // namespace lizard
