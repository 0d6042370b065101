// KeptRows: the input rows an executor keeps after a run, by the key of the
// immutable rows they were loaded from (PartitionData::SharedRows::key, an
// upload's rows), so that a later run over the same rows names them instead
// of sending them again.  The executor copies a run's rows from here into the
// run's own buffer, so a kernel that writes into its input rows changes its
// run and never the kept copy.
//
// Bounded in bytes; the least recently used rows leave first, and an
// executor that needs the room for a run's own buffers evicts them (never the
// rows that run is about to copy: `protect`).  `Buffer` owns the memory and
// frees it in its destructor (a std::vector, or a device allocation).  Not
// thread-safe: an executor's calls are serialised.
//
//   KeptRows<std::vector<uint8_t>> kept(64 << 20);
//   kept.put(key, std::vector<uint8_t>(rows), rows.size());
//   if (const auto* rows = kept.find(key)) copy(*rows);
//   while (short_of_memory() && kept.evict_one({key})) {}
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace lizard {

template <typename Buffer>
class KeptRows {
 public:
  explicit KeptRows(uint64_t budget_bytes = 0) : budget_(budget_bytes) {}
  KeptRows(const KeptRows&) = delete;
  KeptRows& operator=(const KeptRows&) = delete;

  uint64_t budget() const { return budget_; }
  // A new budget (a GPU's, once its free memory is known): the least
  // recently used rows beyond it leave.
  void set_budget(uint64_t budget_bytes) {
    budget_ = budget_bytes;
    while (bytes_ > budget_ && evict_one()) {
    }
  }
  uint64_t bytes() const { return bytes_; }
  bool empty() const { return lru_.empty(); }
  bool contains(const std::string& key) const { return index_.count(key) != 0; }

  // The rows kept under `key` (null if none), now the most recently used.
  const Buffer* find(const std::string& key) {
    auto it = index_.find(key);
    if (it == index_.end()) return nullptr;
    lru_.splice(lru_.begin(), lru_, it->second);
    return &it->second->buffer;
  }

  // Whether `bytes` more could be kept, evicting others but none in `protect`.
  bool could_keep(uint64_t bytes, const std::set<std::string>& protect = {}) const {
    uint64_t held = 0;
    for (const Entry& e : lru_)
      if (protect.count(e.key)) held += e.bytes;
    return bytes <= budget_ && held + bytes <= budget_;
  }

  // Keeps `buffer` under `key` (replacing what it named), evicting the least
  // recently used beyond the budget; false, and `buffer` dropped, when it
  // does not fit beside the rows in `protect`.
  bool put(const std::string& key, Buffer buffer, uint64_t bytes,
           const std::set<std::string>& protect = {}) {
    erase(key);
    if (!could_keep(bytes, protect)) return false;
    while (bytes_ + bytes > budget_ && evict_one(protect)) {
    }
    lru_.push_front(Entry{key, std::move(buffer), bytes});
    index_[key] = lru_.begin();
    bytes_ += bytes;
    return true;
  }

  // Frees the least recently used rows not in `protect`; false when none are left.
  bool evict_one(const std::set<std::string>& protect = {}) {
    for (auto it = lru_.rbegin(); it != lru_.rend(); ++it) {
      if (protect.count(it->key)) continue;
      const std::string key = it->key;  // erase() frees the entry that holds it
      erase(key);
      return true;
    }
    return false;
  }

  void erase(const std::string& key) {
    auto it = index_.find(key);
    if (it == index_.end()) return;
    bytes_ -= it->second->bytes;
    lru_.erase(it->second);
    index_.erase(it);
  }

  void clear() {
    lru_.clear();
    index_.clear();
    bytes_ = 0;
  }

  // Calls f(buffer) for every kept buffer (to forget memory a device reset freed).
  template <typename F>
  void for_each(F f) {
    for (Entry& e : lru_) f(e.buffer);
  }

  // The keys kept now, most recently used first.
  std::vector<std::string> keys() const {
    std::vector<std::string> out;
    for (const Entry& e : lru_) out.push_back(e.key);
    return out;
  }

 private:
  struct Entry {
    std::string key;
    Buffer buffer;
    uint64_t bytes = 0;
  };
  uint64_t budget_;
  std::list<Entry> lru_;  // most recently used first
  std::map<std::string, typename std::list<Entry>::iterator> index_;
  uint64_t bytes_ = 0;
};

}  // namespace lizard
