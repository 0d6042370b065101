#include "client/upload_cache.h"

namespace lizard {

std::string UploadCache::key(const std::string& upload, int64_t first_row, int64_t rows,
                             size_t row_bytes) {
  return upload + ":" + std::to_string(first_row) + "+" + std::to_string(rows) + "x" +
         std::to_string(row_bytes);
}

UploadCache::Rows UploadCache::find(const std::string& key) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = index_.find(key);
  if (it == index_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->rows;
}

void UploadCache::put(const std::string& key, Rows rows) {
  if (!rows || rows->size() > capacity_) return;
  std::lock_guard<std::mutex> l(mu_);
  if (auto it = index_.find(key); it != index_.end()) {
    bytes_ -= it->second->rows->size();
    lru_.erase(it->second);
    index_.erase(it);
  }
  while (!lru_.empty() && bytes_ + rows->size() > capacity_) {
    bytes_ -= lru_.back().rows->size();
    index_.erase(lru_.back().key);
    lru_.pop_back();
  }
  bytes_ += rows->size();
  lru_.push_front({key, std::move(rows)});
  index_[key] = lru_.begin();
}

size_t UploadCache::bytes() const {
  std::lock_guard<std::mutex> l(mu_);
  return bytes_;
}

void UploadCache::erase_upload(const std::string& upload) {
  const std::string prefix = upload + ":";
  std::lock_guard<std::mutex> l(mu_);
  for (auto it = index_.lower_bound(prefix);
       it != index_.end() && it->first.compare(0, prefix.size(), prefix) == 0;) {
    bytes_ -= it->second->rows ? it->second->rows->size() : 0;
    lru_.erase(it->second);
    it = index_.erase(it);
  }
}

}  // namespace lizard
