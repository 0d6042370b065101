// BuildStore: the server's builds that workers share, on disk under
// STATE_DIR/builds/ and bounded in total size, so that a build compiled by
// one worker is handed to the others instead of being compiled again.
//
// An entry is one file, <dir>/<program>/<key>.build: the build's SHA-256 as
// it was offered (64 hex digits), then its bytes.  The server states that
// digest when it hands the build out and the worker checks it, so a file
// changed on the server's disk is refused where it is loaded.  Entries are
// written to a temporary file and renamed into place.  Each get or put makes
// an entry the most recently used; a put that takes the store past
// `max_bytes` drops the least recently used entries first.  Dropping a
// program removes its directory.  Not for the io threads: every call may
// touch the disk.  Thread-safe.
//
//   BuildStore store(state_dir + "/builds", 1024 << 20);
//   store.put(key, program_hash, payload, sha256_hex(payload));
//   Result<StoredBuild> b = store.get(key);   // kNotFound when absent
//   store.drop_program(program_hash);         // DELETE /programs/<hash>
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "common/status.h"

namespace lizard {

struct StoredBuild {
  std::string payload;
  std::string sha256;  // as offered (hex), not recomputed from the file
};

class BuildStore {
 public:
  static constexpr uint64_t kDefaultMaxBytes = uint64_t{1024} << 20;

  // Creates `dir` when missing and reads which entries lie there (their
  // mtimes order them); temporary files left by a crash are removed.
  BuildStore(std::string dir, uint64_t max_bytes);

  // Keeps `payload` as build `key` of `program` (both hex digests).  A build
  // already kept is only marked used.  kInvalidArgument for a build larger
  // than the whole bound or a name that is not hex; kInternal when the disk
  // refuses it.
  Status put(const std::string& key, const std::string& program, std::string_view payload,
             const std::string& sha256);
  // Build `key`, or kNotFound.  Its bytes are as the file holds them.
  Result<StoredBuild> get(const std::string& key);
  // Whether build `key` is kept (without reading it).
  bool contains(const std::string& key) const;
  // Removes every build of `program`; returns how many there were.
  size_t drop_program(const std::string& program);

  uint64_t bytes() const;
  size_t size() const;
  const std::string& dir() const { return dir_; }

 private:
  struct Entry {
    std::string program;
    uint64_t bytes = 0;
    uint64_t used = 0;  // a tick of `clock_`: larger is more recent
  };
  std::string path_of(const std::string& program, const std::string& key) const;
  void load();                               // at construction
  void evict_until_within(uint64_t budget);  // with mu_ held
  void forget(std::map<std::string, Entry>::iterator it);

  const std::string dir_;
  const uint64_t max_bytes_;
  mutable std::mutex mu_;
  std::map<std::string, Entry> entries_;  // GUARDED_BY(mu_), by key
  uint64_t total_ = 0;                    // GUARDED_BY(mu_)
  uint64_t clock_ = 0;                    // GUARDED_BY(mu_)
};

}  // namespace lizard
