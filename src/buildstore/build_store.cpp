#include "buildstore/build_store.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <vector>

#include "common/regular_file.h"

namespace fs = std::filesystem;

namespace lizard {
namespace {

constexpr size_t kDigestHex = 64;
constexpr const char* kSuffix = ".build";

bool is_hex_name(const std::string& s) {
  return !s.empty() && s.size() <= 128 && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
  });
}

Status write_file(const fs::path& path, const std::string& sha256, std::string_view payload) {
  static std::atomic<unsigned> counter{0};
  fs::path tmp = path;
  tmp += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  {
    std::ofstream out(tmp, std::ios::binary);
    out.write(sha256.data(), static_cast<std::streamsize>(sha256.size()));
    out.write(payload.data(), static_cast<std::streamsize>(payload.size()));
    if (!out.flush()) {
      fs::remove(tmp, ec);
      return internal_error("cannot write " + tmp.string());
    }
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return internal_error("cannot rename into " + path.string() + ": " + ec.message());
  }
  return Status::Ok();
}

}  // namespace

BuildStore::BuildStore(std::string dir, uint64_t max_bytes)
    : dir_(std::move(dir)), max_bytes_(max_bytes) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  load();
}

std::string BuildStore::path_of(const std::string& program, const std::string& key) const {
  return (fs::path(dir_) / program / (key + kSuffix)).string();
}

void BuildStore::load() {
  struct Found {
    std::string key;
    Entry entry;
    fs::file_time_type mtime;
  };
  std::vector<Found> found;
  std::error_code ec;
  for (const auto& program_dir : fs::directory_iterator(dir_, ec)) {
    const std::string program = program_dir.path().filename().string();
    if (!program_dir.is_directory(ec) || !is_hex_name(program)) continue;
    for (const auto& f : fs::directory_iterator(program_dir.path(), ec)) {
      std::error_code e;
      const std::string name = f.path().filename().string();
      if (name.find(".tmp.") != std::string::npos) {
        fs::remove(f.path(), e);
        continue;
      }
      if (f.path().extension() != kSuffix || !f.is_regular_file(e)) continue;
      const uint64_t bytes = f.file_size(e);
      if (e || bytes < kDigestHex) continue;
      found.push_back({f.path().stem().string(), {program, bytes, 0}, f.last_write_time(e)});
    }
  }
  std::sort(found.begin(), found.end(),
            [](const Found& a, const Found& b) { return a.mtime < b.mtime; });
  std::lock_guard<std::mutex> l(mu_);
  for (Found& f : found) {
    f.entry.used = ++clock_;
    total_ += f.entry.bytes;
    entries_[f.key] = f.entry;
  }
  evict_until_within(max_bytes_);
}

Status BuildStore::put(const std::string& key, const std::string& program, std::string_view payload,
                       const std::string& sha256) {
  if (!is_hex_name(key) || !is_hex_name(program))
    return invalid_argument("a build's key and program must be hex digests");
  if (sha256.size() != kDigestHex || !is_hex_name(sha256))
    return invalid_argument("a build's SHA-256 must be 64 hex digits");
  const uint64_t bytes = kDigestHex + payload.size();
  if (bytes > max_bytes_)
    return invalid_argument("a build of " + std::to_string(payload.size()) +
                            " bytes is larger than the build store's bound of " +
                            std::to_string(max_bytes_) + " bytes");
  std::lock_guard<std::mutex> l(mu_);
  if (auto it = entries_.find(key); it != entries_.end()) {
    it->second.used = ++clock_;
    return Status::Ok();
  }
  evict_until_within(max_bytes_ - bytes);
  LIZARD_RETURN_IF_ERROR(write_file(path_of(program, key), sha256, payload));
  entries_[key] = Entry{program, bytes, ++clock_};
  total_ += bytes;
  return Status::Ok();
}

Result<StoredBuild> BuildStore::get(const std::string& key) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return not_found("no build " + key.substr(0, 12));
  auto read = read_regular_file(path_of(it->second.program, key));
  if (!read.ok() || read->size() < kDigestHex) {
    forget(it);  // gone or cut short on disk: not kept any more
    return not_found("build " + key.substr(0, 12) + " is gone from the store");
  }
  it->second.used = ++clock_;
  StoredBuild b;
  b.sha256 = read->substr(0, kDigestHex);
  b.payload = read->substr(kDigestHex);
  return b;
}

bool BuildStore::contains(const std::string& key) const {
  std::lock_guard<std::mutex> l(mu_);
  return entries_.count(key) > 0;
}

size_t BuildStore::drop_program(const std::string& program) {
  if (!is_hex_name(program)) return 0;
  std::lock_guard<std::mutex> l(mu_);
  size_t n = 0;
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (it->second.program != program) {
      ++it;
      continue;
    }
    total_ -= it->second.bytes;
    it = entries_.erase(it);
    ++n;
  }
  std::error_code ec;
  fs::remove_all(fs::path(dir_) / program, ec);
  return n;
}

uint64_t BuildStore::bytes() const {
  std::lock_guard<std::mutex> l(mu_);
  return total_;
}

size_t BuildStore::size() const {
  std::lock_guard<std::mutex> l(mu_);
  return entries_.size();
}

void BuildStore::forget(std::map<std::string, Entry>::iterator it) {
  std::error_code ec;
  fs::remove(path_of(it->second.program, it->first), ec);
  total_ -= it->second.bytes;
  entries_.erase(it);
}

void BuildStore::evict_until_within(uint64_t budget) {
  while (total_ > budget && !entries_.empty()) {
    auto oldest = std::min_element(
        entries_.begin(), entries_.end(),
        [](const auto& a, const auto& b) { return a.second.used < b.second.used; });
    spdlog::debug("build store: dropping build {} of program {} (least recently used)",
                  oldest->first.substr(0, 12), oldest->second.program.substr(0, 12));
    forget(oldest);
  }
}

}  // namespace lizard
