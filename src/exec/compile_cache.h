// CompileCache: a host's compiled kernels (NVRTC cubins, the CPU backend's
// shared libraries, host hooks) in one directory that every worker, executor
// process and server of the host shares and that survives restarts, so that
// each distinct build is compiled once and then read from disk.
//
// An entry is one file, <dir>/<key><suffix>: the compiler's output followed by
// a trailer (its SHA-256, its length, a magic number) checked on every read,
// so that a partial or corrupt entry is never served but compiled again and
// replaced.  Entries are written to a temporary file and renamed into place.
// Compiles of one key are single-flight across processes: the compiling
// process holds flock() on <dir>/locks/<key>; another waits for it, then reads
// the entry (the kernel releases the lock of a process that dies).  A hit
// touches the entry's mtime; after each write the least recently used entries
// are removed until the directory is within `max_bytes`.  ELF loaders ignore
// bytes after the image, so an entry's path can be given to dlopen() as is.
//
// Entries belong to an owner (a program's checksum, exec/process/
// owner_process_executor.h): owned_by(owner) is the cache of that owner's
// entries, <dir>/<owner>/, bounded together with every other owner's, so
// that a process confined to one owner's directory (sandbox/sandbox.h)
// reads and writes its own entries and no one else's.  Eviction counts and
// removes what the process can see: a confined process trims its own
// owner's entries only, the worker every owner's.
//
//   CompileCache cache(dir, CompileCache::kDefaultMaxBytes);
//   CompileKey key;
//   key.add("compiler", version).add("arch", "sm_90").add("source", text);
//   Result<CacheEntry> e = cache.get_or_compile(key.digest(), ".cubin", [&] { return nvrtc(); });
//   if (e.ok()) load(e->payload);  // e->hit: read from disk, nothing compiled
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "common/sha256.h"
#include "common/status.h"

namespace lizard {

// The digest that names an entry: every named field that changes the output.
class CompileKey {
 public:
  CompileKey& add(std::string_view name, std::string_view value);
  std::string digest();  // 64 hex digits; finishes the key

 private:
  Sha256 hash_;
};

struct CacheEntry {
  std::string path;     // the entry's file; empty when the cache has no directory
  std::string payload;  // the compiler's output
  bool hit = false;     // read from the cache: this call compiled nothing
};

class CompileCache {
 public:
  static constexpr uint64_t kDefaultMaxBytes = 2048ull << 20;

  // `dir` is created when missing; empty: no cache (every call compiles).
  CompileCache(std::string dir, uint64_t max_bytes);

  // The entries of `owner` (a program's checksum), beneath dir()/<owner>/,
  // within the same bound as the whole directory; "" names dir() itself.
  // A view: nothing is created yet.
  CompileCache owned_by(const std::string& owner) const;

  // The entry named `key` (a CompileKey digest) and `suffix` (".cubin",
  // ".so"), or `compile`'s output stored under it, with compile running at
  // most once at a time for a key across the host's processes.  A failed
  // compile is returned as it is and stores nothing.
  Result<CacheEntry> get_or_compile(const std::string& key, const std::string& suffix,
                                    const std::function<Result<std::string>()>& compile) const;

  // The payload of the entry named `key` and `suffix`, its trailer checked;
  // kNotFound when there is none (or it does not check out).
  Result<std::string> read(const std::string& key, const std::string& suffix) const;
  // Stores `payload` (made elsewhere: another host's compile of the same
  // key) as that entry, unless one is there already; single-flight with
  // get_or_compile.  `stored`: whether this call wrote it.
  Status put(const std::string& key, const std::string& suffix, const std::string& payload,
             bool* stored = nullptr) const;

  // Whether an entry named `key` and `suffix` lies in the cache now (its
  // checks are made when it is read).  Always false without a directory.
  bool contains(const std::string& key, const std::string& suffix) const;

  // Where entries lie, and the directory the bound covers (the same one,
  // unless this is an owner's view).
  const std::string& dir() const { return dir_; }
  const std::string& root() const { return root_; }

 private:
  // Removes least recently used entries beneath root(), never the entry at
  // path `keep`, until within the bound.
  void evict(const std::string& keep) const;

  std::string dir_;
  std::string root_;
  uint64_t max_bytes_;
};

// The directory a host's caches live in: /var/cache/lizard for root, else
// $XDG_CACHE_HOME/lizard, else ~/.cache/lizard.  Kernels go in its kernels/.
std::string default_cache_root();

}  // namespace lizard
