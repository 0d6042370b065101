// UploadSyncer: puts a committed upload's bytes on disk after its answer
// rather than before it, so that an upload is stored at the rate of the link
// and the page cache instead of the disk's flush, and still no crash can
// leave a torn upload to be used.  Before an upload's description is written
// it gets a marker (<id>.syncing, itself on disk); the syncer's thread then
// flushes the upload's file and removes the marker.  A server that finds a
// marker at its start was stopped before the flush: the upload is kept only
// when its file still has every byte its description's PieceDigest
// (common/piece_digest.h) names, and is otherwise removed with a warning.
//
//   UploadSyncer syncer(datasets_dir);
//   Status st = syncer.mark(id);         // before the description
//   ... write the description ...
//   syncer.sync_later(id, file);         // on the syncer's thread
//   // at start, for an upload with a marker:
//   Status whole = UploadSyncer::check_whole(meta);  // then flush it, or drop it
//
// Thread-safe.  Destroying it waits for the flushes queued (a clean stop
// leaves no marker).
#pragma once

#include <nlohmann/json.hpp>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "common/status.h"

namespace lizard {

class UploadSyncer {
 public:
  explicit UploadSyncer(std::string dir);
  ~UploadSyncer();
  UploadSyncer(const UploadSyncer&) = delete;
  UploadSyncer& operator=(const UploadSyncer&) = delete;

  // The marker's path for upload `id`, and whether one is there.
  std::string marker(const std::string& id) const;
  bool marked(const std::string& id) const;
  // Marks `id` as not yet on disk, durably: call before its description.
  Status mark(const std::string& id);
  // Flushes `file` on the syncer's thread, then removes the marker.
  void sync_later(const std::string& id, std::string file);
  // Flushes `file` and removes the marker now (an upload found whole at start).
  void sync_now(const std::string& id, const std::string& file);
  // Removes the marker (the upload is removed).
  void unmark(const std::string& id);
  // Waits until every flush queued so far is done.
  void wait_idle();

  // Whether the file a description names has the bytes it describes: its
  // size and PieceDigest.  A description without a digest cannot be checked.
  static Status check_whole(const nlohmann::json& meta);

 private:
  void run();

  const std::string dir_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<std::string, std::string>> queue_;  // GUARDED_BY(mu_): id, file
  bool busy_ = false;                                      // GUARDED_BY(mu_)
  bool stopping_ = false;                                  // GUARDED_BY(mu_)
  std::thread thread_;
};

}  // namespace lizard
