// KeptRowsCatalog: what the rows a worker's executors keep are, by key
// (exec/kept_rows.h): a description for people ("/data/x.npy rows 0..1048576
// (float32 x 32)", "upload u5f3a… rows 0..4096") and their bytes.  Executors
// know their kept rows by key alone; the worker notes each key it sends rows
// under, and describes its executors' keys in its resource reports, which the
// server lists and places runs by.  Thread-safe.
//
//   catalog.note(key, "upload u1 rows 0..10", 4096);
//   std::vector<KeptRowsEntry> e = catalog.describe(executor.kept_rows());
//   catalog.retain(every_key_still_kept);
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "protocol/messages.h"

namespace lizard {

class KeptRowsCatalog {
 public:
  void note(const std::string& key, std::string description, uint64_t bytes);
  // Each key with what was noted of it (a key never noted: itself, 0 bytes).
  std::vector<KeptRowsEntry> describe(const std::vector<std::string>& keys) const;
  // Forgets the keys not in `keys` (rows no executor keeps any more).
  void retain(const std::set<std::string>& keys);

 private:
  struct Note {
    std::string description;
    uint64_t bytes = 0;
  };
  mutable std::mutex mu_;
  std::map<std::string, Note> notes_;  // GUARDED_BY(mu_)
};

}  // namespace lizard
