// Text files built into the binaries (runtime headers handed to compilers).
//
//   std::string_view h = embedded_file("cuda_cpu.h");  // empty if unknown
#pragma once

#include <string_view>

namespace lizard {
std::string_view embedded_file(std::string_view name);
}  // namespace lizard
