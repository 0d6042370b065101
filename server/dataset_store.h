// DatasetStore: datasets uploaded with POST /datasets, kept as files in the
// server's state directory (<state-dir>/datasets/<id>.npy or .raw, plus a
// <id>.json description).  Bodies stream to disk; nothing is held in memory.
// Each upload's description has the PieceDigest (common/piece_digest.h) of
// the bytes as they arrived, by which a client finds data it sent before.
// An upload with a digest is flushed to disk after its answer, and checked
// against that digest if the server stopped first (server/upload_syncer.h).
// Thread-safe: `mu_` guards the table of descriptions; a dataset's files are
// complete before it is listed, and removed under the lock.  A full disk
// (ENOSPC, EDQUOT) while the body streams in, or while it is closed, fails
// the upload with kStorageFull (HTTP 507) and removes its partial file.
//
//   DatasetStore ds(state_dir);
//   auto sink = ds.open_upload(&id);               // the body goes to (*sink)->write()
//   (*sink)->finish();
//   Result<nlohmann::json> meta = ds.commit(id, (*sink)->path(), "npy", digest_of_the_body);
//   auto where = ds.lookup(id);                    // file and format, for a run
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "common/status.h"
#include "dataset/file_format.h"
#include "server/state_dir_identity.h"
#include "server/transport.h"
#include "server/upload_syncer.h"
#include "users/user_directory.h"

namespace lizard {

class DatasetStore {
 public:
  explicit DatasetStore(std::string state_dir);

  // A fresh id and the file its body should be written to.
  std::string reserve(std::string* id);
  // A fresh id and a sink that writes the body to its file (reserve's), each
  // write checked for a full disk.
  Result<std::unique_ptr<UploadSink>> open_upload(std::string* id);
  // Checks the written file (`format` "npy", "raw" or empty to detect .npy)
  // and makes it available, described with `digest` (the PieceDigest of the
  // body, as its reader computed it) unless that is empty; on error the
  // file is removed.  `owner`: the user who sent it, and `share`: the users
  // whose runs may read it too ("*": all), kept in its description.
  Result<nlohmann::json> commit(const std::string& id, const std::string& part,
                                const std::string& format, const std::string& digest = "",
                                const std::string& owner = "",
                                const std::vector<std::string>& share = {});
  // The descriptions, in id order; with a `digest`, only the uploads of those bytes.
  nlohmann::json list(const std::string& digest = "") const;
  Result<nlohmann::json> get(const std::string& id) const;
  // Who sent upload `id` ("" for one from before owners were kept).
  // Who sent upload `id`, and whom it is shared with.
  Result<Ownership> access_of(const std::string& id) const;
  Status remove(const std::string& id);
  Result<std::pair<std::string, FileFormat>> lookup(const std::string& id) const;
  // Waits until every upload committed so far is on disk.
  void wait_on_disk();

 private:
  bool kept_after_stop(const nlohmann::json& meta);

  std::string dir_;
  StateDirIdentity state_dir_identity_;  // uploads are stored only while it holds
  mutable std::mutex mu_;
  std::map<std::string, nlohmann::json> datasets_;  // GUARDED_BY(mu_): id → description
  UploadSyncer syncer_;                             // last: its thread flushes until the store goes
};

}  // namespace lizard
