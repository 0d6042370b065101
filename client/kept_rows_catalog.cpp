#include "client/kept_rows_catalog.h"

namespace lizard {

void KeptRowsCatalog::note(const std::string& key, std::string description, uint64_t bytes) {
  note(KeptRowsEntry{key, std::move(description), bytes});
}

void KeptRowsCatalog::note(KeptRowsEntry entry) {
  std::lock_guard<std::mutex> l(mu_);
  const std::string key = entry.key;
  notes_[key] = std::move(entry);
  noted_at_[key] = ++generation_;
}

void KeptRowsCatalog::note(const FileRowsKey& key) {
  note(KeptRowsEntry{key.key(), key.description(), key.bytes(), key.path, key.first_row, key.rows});
  std::lock_guard<std::mutex> l(mu_);
  files_[key.key()] = {key.file.device, key.file.inode};
}

std::vector<KeptRowsEntry> KeptRowsCatalog::describe(const std::vector<std::string>& keys) const {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<KeptRowsEntry> out;
  for (const std::string& key : keys) {
    auto it = notes_.find(key);
    out.push_back(it == notes_.end() ? KeptRowsEntry{key, key, 0} : it->second);
  }
  return out;
}

std::set<std::string> KeptRowsCatalog::keys_of(const std::string& source) const {
  std::set<FileId> files;
  if (auto now = FileIdentity::of(source); now.ok()) files.insert({now->device, now->inode});
  std::lock_guard<std::mutex> l(mu_);
  std::set<std::string> out;
  for (const auto& [key, entry] : notes_) {
    if (entry.source != source) continue;
    out.insert(key);
    if (auto f = files_.find(key); f != files_.end()) files.insert(f->second);
  }
  for (const auto& [key, file] : files_)
    if (files.count(file)) out.insert(key);
  return out;
}

uint64_t KeptRowsCatalog::generation() const {
  std::lock_guard<std::mutex> l(mu_);
  return generation_;
}

void KeptRowsCatalog::retain(const std::set<std::string>& keys, uint64_t since) {
  std::lock_guard<std::mutex> l(mu_);
  auto gone = [&](const std::string& key) {
    auto at = noted_at_.find(key);
    return !keys.count(key) && (at == noted_at_.end() || at->second <= since);
  };
  for (auto it = notes_.begin(); it != notes_.end();)
    it = gone(it->first) ? notes_.erase(it) : std::next(it);
  for (auto it = files_.begin(); it != files_.end();)
    it = gone(it->first) ? files_.erase(it) : std::next(it);
  for (auto it = noted_at_.begin(); it != noted_at_.end();)
    it = notes_.count(it->first) ? std::next(it) : noted_at_.erase(it);
}

}  // namespace lizard
