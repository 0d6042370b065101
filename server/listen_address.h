// Where `lizard server` listens when --host is not given, and whether the
// address it listens on lets strangers run code.  Without a token anyone who
// can reach the port can register programs (code that runs on the workers
// and in the server) and name files for them to read, so a server without
// one listens on the loopback address unless told otherwise.
//
//   std::string host = listen_address(flags.host, token);   // "" -> default
//   if (exposed_without_token(host, token)) spdlog::warn(...);
#pragma once

#include <string>

namespace lizard {

// `host` when given; else 127.0.0.1 without a token, every address with one.
std::string listen_address(const std::string& host, const std::string& token);

// True when `host` is not a loopback address and there is no token.
bool exposed_without_token(const std::string& host, const std::string& token);

}  // namespace lizard
