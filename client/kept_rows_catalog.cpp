#include "client/kept_rows_catalog.h"

namespace lizard {

void KeptRowsCatalog::note(const std::string& key, std::string description, uint64_t bytes) {
  std::lock_guard<std::mutex> l(mu_);
  notes_[key] = {std::move(description), bytes};
}

std::vector<KeptRowsEntry> KeptRowsCatalog::describe(const std::vector<std::string>& keys) const {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<KeptRowsEntry> out;
  for (const std::string& key : keys) {
    auto it = notes_.find(key);
    if (it == notes_.end())
      out.push_back({key, key, 0});
    else
      out.push_back({key, it->second.description, it->second.bytes});
  }
  return out;
}

void KeptRowsCatalog::retain(const std::set<std::string>& keys) {
  std::lock_guard<std::mutex> l(mu_);
  for (auto it = notes_.begin(); it != notes_.end();)
    it = keys.count(it->first) ? std::next(it) : notes_.erase(it);
}

}  // namespace lizard
