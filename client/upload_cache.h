// UploadCache: the rows of uploaded datasets a worker was sent, kept for the
// next runs over the same rows, so that a sweep of runs over one dataset
// (lizard.Client.map, a parameter search) streams it to each worker once.
// Keyed by the upload and the rows (uploads are immutable and their ids
// random, so a key never names other bytes); bounded in bytes, the least
// recently used rows leave first.  Thread-safe.
//
//   UploadCache cache(2 << 30);
//   std::string key = UploadCache::key("u5f3a…", first_row, rows, row_bytes);
//   if (auto rows = cache.find(key)) ...;    // shared, read-only
//   cache.put(key, rows_as_received);
//   cache.erase_upload("u5f3a…");           // the upload was deleted
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "client/upload_rows.h"

namespace lizard {

class UploadCache {
 public:
  using Rows = std::shared_ptr<const UploadRows>;

  explicit UploadCache(size_t capacity_bytes) : capacity_(capacity_bytes) {}

  static std::string key(const std::string& upload, int64_t first_row, int64_t rows,
                         size_t row_bytes);

  Rows find(const std::string& key);
  // Keeps `rows` unless they alone exceed the budget; evicts to make room.
  void put(const std::string& key, Rows rows);
  size_t bytes() const;
  // Lets go of every rows of `upload` (its key's prefix).
  void erase_upload(const std::string& upload);

 private:
  struct Entry {
    std::string key;
    Rows rows;
  };
  const size_t capacity_;
  mutable std::mutex mu_;
  std::list<Entry> lru_;  // GUARDED_BY(mu_): most recently used first
  std::map<std::string, std::list<Entry>::iterator> index_;  // GUARDED_BY(mu_)
  size_t bytes_ = 0;                                         // GUARDED_BY(mu_)
};

}  // namespace lizard
