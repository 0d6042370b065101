// Durable writes for the server's stores: a file written whole or not at all
// (temporary file, fsync, rename), with a full disk reported as
// Code::kStorageFull (HTTP 507) — and fault injection that makes these
// writes fail as if the disk were full, so that tests can show that a full
// disk ends the request that hit it with a 507 and leaves the stores intact.
//
//   Status st = write_file_durably(path, bytes, "dataset u12");
//
// Fault injection is off unless a test turns it on:
//   unit tests:  fail_next_storage_writes(1);   // the next write fails with ENOSPC
//   processes:   LIZARD_TEST_DISK_FULL_FILE=/tmp/x lizard server ...
//                while /tmp/x exists, every durable write fails with ENOSPC.
// Every writer (this file's, the run store's SQLite writes) calls
// storage_write_fails() just before it writes.  Thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "common/status.h"

namespace lizard {

// Writes `bytes` to a temporary file beside `path`, flushes it and renames it
// over `path`, so that readers see the old content or the new.  `what` names
// the content in errors.
Status write_file_durably(const std::string& path, const std::string& bytes,
                          const std::string& what);
// The same with the file's bytes as `count` parts, written one after another.
Status write_file_durably(const std::string& path, const std::string_view* parts, size_t count,
                          const std::string& what);

// Makes the next `n` durable writes of this process fail (0 turns it off).
void fail_next_storage_writes(int n);
// True when the write about to happen must fail as if the disk were full.
bool storage_write_fails();
// The error a full disk gives for writing `what`.
Status disk_full_error(const std::string& what);

}  // namespace lizard
