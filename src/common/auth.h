// Shared-secret checks for the server's tokens.
//
//   if (!token_matches(bearer_token(headers["authorization"]), expected)) reject();
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace lizard {

// Compares in time that depends only on the lengths, not on where the
// strings differ.
bool constant_time_equals(std::string_view a, std::string_view b);

// The token of an "Authorization: Bearer <token>" header value; empty otherwise.
std::string bearer_token(std::string_view authorization);

// The value of `flag` if set, else of the environment variable `env`, else empty.
std::string token_from(const std::string& flag, const char* env);

// The token in file `path` (--token-file), its trailing whitespace cut: a
// token given so never shows in /proc/<pid>/cmdline.  An error when the
// file cannot be read, is empty, or other users may read it (as ssh refuses
// a private key others can read).
Result<std::string> token_from_file(const std::string& path);

// A daemon's token: from `file` (--token-file) when given, else `flag`'s
// value, else the environment variable `env`.  An error when the file
// cannot be used, or both it and the flag (`flag_name`) are given.
Result<std::string> daemon_token(const std::string& flag, const std::string& file, const char* env,
                                 const std::string& flag_name);

// What a daemon does once it holds its tokens, before it starts anyone's
// code: LIZARD_TOKEN and LIZARD_READ_TOKEN leave its environment, so that
// no process it starts (hooks, executors, compilers: user code) inherits
// them, and it turns non-dumpable (PR_SET_DUMPABLE 0), so that no process
// of its user may read its memory or environment or take its descriptors.
// An error says what could not be done; the rest is done.
Status guard_daemon_process();

}  // namespace lizard
