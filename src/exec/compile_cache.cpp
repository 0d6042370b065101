#include "exec/compile_cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <vector>

#include "common/regular_file.h"

namespace fs = std::filesystem;

namespace lizard {
namespace {

constexpr char kMagic[8] = {'L', 'Z', 'C', 'A', 'C', 'H', 'E', '1'};
constexpr size_t kDigestBytes = 32;
constexpr size_t kTrailerBytes = kDigestBytes + 8 + sizeof(kMagic);
// Temporary files and build directories older than this belong to a process
// that died mid-write: eviction removes them.
constexpr auto kStaleTemporary = std::chrono::hours(1);

std::string trailer_of(const std::string& payload) {
  Sha256 h;
  h.update(payload);
  const std::array<uint8_t, 32> digest = h.digest();
  std::string t(reinterpret_cast<const char*>(digest.data()), digest.size());
  uint64_t n = payload.size();
  for (int i = 0; i < 8; ++i) t.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  t.append(kMagic, sizeof(kMagic));
  return t;
}

// The payload of the entry at `path` when it is a regular file whose trailer
// matches it.  Anything else there (a FIFO, a directory) reads as no entry,
// without blocking, and is replaced by the compile's.
std::optional<std::string> read_entry(const fs::path& path) {
  auto read = read_regular_file(path.string());
  if (!read.ok()) return std::nullopt;
  std::string bytes = std::move(read).value();
  if (bytes.size() < kTrailerBytes) return std::nullopt;
  std::string payload = bytes.substr(0, bytes.size() - kTrailerBytes);
  if (bytes.compare(payload.size(), kTrailerBytes, trailer_of(payload)) != 0) return std::nullopt;
  return payload;
}

// Writes the entry through a private temporary file and a rename, so that
// readers see the old entry, none, or the whole new one.
Status write_entry(const fs::path& path, const std::string& payload) {
  static std::atomic<unsigned> counter{0};
  fs::path tmp = path;
  tmp += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  {
    std::ofstream out(tmp, std::ios::binary);
    out << payload << trailer_of(payload);
    if (!out.flush()) {
      std::error_code ec;
      fs::remove(tmp, ec);
      return internal_error("cannot write " + tmp.string());
    }
  }
  std::error_code ec;
  if (fs::is_directory(fs::symlink_status(path, ec))) fs::remove_all(path, ec);
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return internal_error("cannot rename into " + path.string() + ": " + ec.message());
  }
  return Status::Ok();
}

// An exclusive flock() on a file, held while this lives.
class FileLock {
 public:
  explicit FileLock(const fs::path& path) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, 0666);
    if (fd_ < 0) return;
    while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
    }
  }
  ~FileLock() {
    if (fd_ >= 0) ::close(fd_);  // releases the lock
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

void touch(const fs::path& path) {
  ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);
}

bool is_temporary(const std::string& name) {
  return name.find(".tmp.") != std::string::npos || name.find(".build.") != std::string::npos;
}

}  // namespace

CompileKey& CompileKey::add(std::string_view name, std::string_view value) {
  for (std::string_view part : {name, value}) {
    hash_.update(std::to_string(part.size()) + ":");
    hash_.update(part);
  }
  return *this;
}

std::string CompileKey::digest() {
  return hash_.hex_digest();
}

CompileCache::CompileCache(std::string dir, uint64_t max_bytes)
    : dir_(std::move(dir)), root_(dir_), max_bytes_(max_bytes) {}

CompileCache CompileCache::owned_by(const std::string& owner) const {
  CompileCache view(*this);
  if (!root_.empty() && !owner.empty()) view.dir_ = (fs::path(root_) / owner).string();
  return view;
}

Result<CacheEntry> CompileCache::get_or_compile(
    const std::string& key, const std::string& suffix,
    const std::function<Result<std::string>()>& compile) const {
  if (dir_.empty()) {
    LIZARD_ASSIGN_OR_RETURN(std::string payload, compile());
    return CacheEntry{"", std::move(payload), false};
  }
  const fs::path path = fs::path(dir_) / (key + suffix);
  if (auto payload = read_entry(path)) {
    touch(path);
    return CacheEntry{path.string(), std::move(*payload), true};
  }
  std::error_code ec;
  fs::create_directories(fs::path(dir_) / "locks", ec);
  if (ec) return internal_error("cannot create the compile cache " + dir_ + ": " + ec.message());
  FileLock lock(fs::path(dir_) / "locks" / (key + ".lock"));
  if (auto payload = read_entry(path)) {  // compiled by the process we waited for
    touch(path);
    return CacheEntry{path.string(), std::move(*payload), true};
  }
  LIZARD_ASSIGN_OR_RETURN(std::string payload, compile());
  LIZARD_RETURN_IF_ERROR(write_entry(path, payload));
  evict(path.string());
  return CacheEntry{path.string(), std::move(payload), false};
}

Result<std::string> CompileCache::read(const std::string& key, const std::string& suffix) const {
  if (dir_.empty()) return not_found("no compile cache");
  const fs::path path = fs::path(dir_) / (key + suffix);
  auto payload = read_entry(path);
  if (!payload) return not_found("no entry " + path.filename().string());
  return std::move(*payload);
}

Status CompileCache::put(const std::string& key, const std::string& suffix,
                         const std::string& payload, bool* stored) const {
  if (stored) *stored = false;
  if (dir_.empty()) return invalid_argument("no compile cache");
  LIZARD_ASSIGN_OR_RETURN(
      CacheEntry e, get_or_compile(key, suffix, [&]() -> Result<std::string> { return payload; }));
  if (stored) *stored = !e.hit;
  return Status::Ok();
}

bool CompileCache::contains(const std::string& key, const std::string& suffix) const {
  std::error_code ec;
  return !dir_.empty() &&
         fs::is_regular_file(fs::symlink_status(fs::path(dir_) / (key + suffix), ec));
}

namespace {

struct EntryFile {
  fs::path path;
  fs::file_time_type used;
  uint64_t bytes;
};

bool owner_name(const std::string& name) {
  return name.size() == 64 &&
         std::all_of(name.begin(), name.end(), [](char c) { return std::isxdigit(c) != 0; });
}

// The entries directly in `dir` (temporaries older than kStaleTemporary
// removed on the way), and in each owner's directory beneath it when
// `owners`; a directory this process may not read is skipped.
void list_entries(const fs::path& dir, bool owners, std::vector<EntryFile>* out) {
  const auto stale = fs::file_time_type::clock::now() - kStaleTemporary;
  std::error_code ec;
  for (const auto& de : fs::directory_iterator(dir, ec)) {
    std::error_code e;
    const std::string name = de.path().filename().string();
    const fs::file_time_type used = de.last_write_time(e);
    if (e) continue;
    if (is_temporary(name)) {
      if (used < stale) fs::remove_all(de.path(), e);
      continue;
    }
    if (owners && owner_name(name) && de.is_directory(e)) {
      list_entries(de.path(), false, out);
      continue;
    }
    if (!de.is_regular_file(e)) continue;
    const uint64_t bytes = de.file_size(e);
    if (!e) out->push_back({de.path(), used, bytes});
  }
}

}  // namespace

void CompileCache::evict(const std::string& keep) const {
  std::vector<EntryFile> entries;
  list_entries(root_, true, &entries);
  uint64_t total = 0;
  for (const EntryFile& e : entries) total += e.bytes;
  if (total <= max_bytes_) return;
  std::sort(entries.begin(), entries.end(),
            [](const EntryFile& a, const EntryFile& b) { return a.used < b.used; });
  for (const EntryFile& e : entries) {
    if (total <= max_bytes_) break;
    std::error_code rm;
    if (e.path != fs::path(keep) && fs::remove(e.path, rm)) total -= e.bytes;
  }
}

std::string default_cache_root() {
  if (::geteuid() == 0) return "/var/cache/lizard";
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/lizard";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/lizard";
  return "/tmp/lizard-" + std::to_string(::getuid());
}

}  // namespace lizard
