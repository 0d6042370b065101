// A run's pinned files in its record: the version of each file it names by
// path that it read first (dataset/file_identity.h), shown as the record's
// `files` and stored with it, so that a server restarted in the middle of
// the run resumes it only on the same versions.  Workers check every later
// read against the same pins (client/run_session_files.cpp).
//
//   record["files"] = pinned_files_json(run.request.spec.files);
//   Result<std::vector<PinnedFile>> pins = pinned_files_of(stored_record);
//   Status s = check_files_unchanged(*pins);          // before the request is read again
//   Status t = check_same_versions(*pins, request.spec.files);   // and after
//   Status c = check_contents_unchanged(run.request.spec.files);  // after loading
#pragma once

#include <nlohmann/json.hpp>

#include <vector>

#include "common/status.h"
#include "dataset/file_identity.h"

namespace lizard {

// The record's `files`: [{field, path, identity: {device, inode, size,
// mtime_ns, ctime_ns}}], as run_start carries them.
nlohmann::json pinned_files_json(const std::vector<PinnedFile>& files);

// The pins of a stored record (none in records of servers that pinned none).
Result<std::vector<PinnedFile>> pinned_files_of(const nlohmann::json& record);

// Ok when each pinned file is, on this machine, still the version pinned
// (and holds the bytes pinned, where the run verifies content); otherwise a
// kConflict naming the field, the file and what changed.
Status check_files_unchanged(const std::vector<PinnedFile>& pinned);

// Ok when each file pinned with a content digest still holds those bytes:
// read again once the workers loaded their rows, which a write through a
// shared mapping during the loading would otherwise mix unseen.
Status check_contents_unchanged(const std::vector<PinnedFile>& pinned);

// Ok when `now` (a request read again) found the pinned versions.
Status check_same_versions(const std::vector<PinnedFile>& pinned,
                           const std::vector<PinnedFile>& now);

}  // namespace lizard
