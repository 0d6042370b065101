// HookHost: the helper-process side of a program's host hooks.  A daemon
// never loads a program's host.cpp library itself: it starts its own binary
// as `lizard hook-host LIB.so` (see hook_process.h for that side), which
// loads the library there (running its static initialisers), says which
// hooks it found, and then calls them on request over the FrameChannel on
// fd 3, in the frames of hook_protocol.h, until the channel closes.  A fault,
// exit() or endless loop in a hook ends or stalls this process only.
//
//   int main(int argc, char** argv) {
//     if (auto code = lizard::hook_host_command(argc, argv)) return *code;
//     ...
//   }
#pragma once

#include <optional>
#include <string>

namespace lizard {

// The subcommand's name: the first argument of a hook process.
inline constexpr const char* kHookHostCommand = "hook-host";

// Serves the hooks of `library` over the parent's channel; returns the exit
// status (0 when the parent closed the channel).
int serve_hooks(const std::string& library);

// For main(): with `argv` = {binary, "hook-host", LIB}, serves LIB's hooks and
// returns the exit status; otherwise returns nothing.
std::optional<int> hook_host_command(int argc, char** argv);

}  // namespace lizard
