// Shared-secret checks for the server's tokens.
//
//   if (!token_matches(bearer_token(headers["authorization"]), expected)) reject();
#pragma once

#include <string>
#include <string_view>

namespace lizard {

// Compares in time that depends only on the lengths, not on where the
// strings differ.
bool constant_time_equals(std::string_view a, std::string_view b);

// The token of an "Authorization: Bearer <token>" header value; empty otherwise.
std::string bearer_token(std::string_view authorization);

// The value of `flag` if set, else of the environment variable `env`, else empty.
std::string token_from(const std::string& flag, const char* env);

}  // namespace lizard
