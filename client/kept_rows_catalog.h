// KeptRowsCatalog: what the rows a worker's executors keep are, by key
// (exec/kept_rows.h): a description for people ("/data/x.npy rows 0..1048576
// (float32 x 32)", "upload u5f3a… rows 0..4096"), their bytes, and their
// source (the path as runs named it, or the upload's id) and row range.
// Executors know their kept rows by key alone; the worker notes each key it
// sends rows under, describes its executors' keys in its resource reports,
// which the server lists and places runs by, and finds the keys of a source
// to drop: of a file, by the file itself, so that whichever name runs
// reached it by (a symlink, a relative path) drops them all.  Thread-safe.
//
//   catalog.note({key, "upload u1 rows 0..10", 4096, "u1", 0, 10});
//   catalog.note(file_rows_key);  // a FileRowsKey's key, description, path and rows
//   std::vector<KeptRowsEntry> e = catalog.describe(executor.kept_rows());
//   std::set<std::string> keys = catalog.keys_of("/data/x.npy");
//   uint64_t mark = catalog.generation();   // then read the executors' keys
//   catalog.retain(every_key_still_kept, mark);
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "dataset/file_rows_key.h"
#include "protocol/messages.h"

namespace lizard {

class KeptRowsCatalog {
 public:
  void note(const std::string& key, std::string description, uint64_t bytes);
  void note(KeptRowsEntry entry);
  void note(const FileRowsKey& key);
  // Each key with what was noted of it (a key never noted: itself, 0 bytes).
  std::vector<KeptRowsEntry> describe(const std::vector<std::string>& keys) const;
  // The keys noted with this source, and every key of the same file under
  // another name: the file `source` names now, or that its keys were noted
  // from.  Blocking (a stat of `source`).
  std::set<std::string> keys_of(const std::string& source) const;
  // A mark taken before the executors' kept rows are read for retain().
  uint64_t generation() const;
  // Forgets the keys not in `keys` (rows no executor keeps any more) that
  // were noted before `since` (generation(), taken before `keys` were
  // read): a key noted meanwhile is kept, though `keys` missed it.
  void retain(const std::set<std::string>& keys, uint64_t since);

 private:
  using FileId = std::pair<uint64_t, uint64_t>;  // device, inode
  mutable std::mutex mu_;
  std::map<std::string, KeptRowsEntry> notes_;  // GUARDED_BY(mu_)
  std::map<std::string, FileId> files_;         // GUARDED_BY(mu_): the file of a file's rows
  std::map<std::string, uint64_t> noted_at_;    // GUARDED_BY(mu_): each key's generation
  uint64_t generation_ = 0;                     // GUARDED_BY(mu_): notes so far
};

}  // namespace lizard
