// FileVisibility: whether every worker reads the same file at a path as the
// server does, so that a client may send a dataset by path (read on the
// workers at file speed, its rows kept between runs) instead of uploading
// it.  probe() opens the file as a run would (within the data roots), asks
// every joined worker to do the same (probe_file, answered by file_probed:
// client/file_probe.h) and compares the identities, device numbers aside
// (a shared file system gives each machine its own): the same inode, size,
// mtime and ctime everywhere means one file.  A client that names the
// version it sees (its own stat) is told whether that is the version too.
//
// probe() blocks until every worker answered, or for at most `timeout_s`:
// call it off the io thread.  on_reply() is called on the io thread.
//
//   FileVisibility vis(&workers, &data_roots);
//   Result<nlohmann::json> seen = vis.probe("/data/x.npy", client_identity);
//   // {"path", "shared": true|false, "why"?, "workers": [{"worker", "sees", "why"?}]}
//   vis.on_reply(worker_id, file_probed);   // from the hub
#pragma once

#include <nlohmann/json.hpp>

#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "dataset/data_roots.h"
#include "protocol/staging_messages.h"

namespace lizard {

class WorkerRegistry;

// The answer to a probe, from the server's view of the file, the client's
// (if it gave one), each worker's answer and the workers that gave none.
nlohmann::json visibility_verdict(const std::string& path, const FileIdentity& server_view,
                                  const std::optional<FileIdentity>& client_view,
                                  const std::map<std::string, FileProbedMsg>& answers,
                                  const std::vector<std::string>& silent, double timeout_s);

class FileVisibility {
 public:
  // `roots`: the server's data roots (null: anywhere); both must outlive it.
  FileVisibility(WorkerRegistry* workers, const DataRoots* roots, double timeout_s = 5);

  // An error when the server itself cannot read the file (outside the data
  // roots, missing, not a regular file).
  Result<nlohmann::json> probe(const std::string& path,
                               const std::optional<FileIdentity>& client_view);
  void on_reply(const std::string& worker_id, const FileProbedMsg& m);

 private:
  WorkerRegistry* workers_;
  const DataRoots* roots_;
  const double timeout_s_;
  std::mutex mu_;
  std::condition_variable answered_;
  uint64_t next_id_ = 1;                                                 // GUARDED_BY(mu_)
  std::map<std::string, std::map<std::string, FileProbedMsg>> replies_;  // GUARDED_BY(mu_)
};

}  // namespace lizard
