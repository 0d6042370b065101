// The device library: the public headers under include/lizard/ (lizard_device.h and the
// parts it includes), built into the binaries and handed to every kernel
// build beside lizard_program.h, which includes lizard_device.h for kernels.
//
//   for (const auto& [name, text] : device_library_files()) add_header(name, text);
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lizard {

// Name and text of each header of the device library.
std::vector<std::pair<std::string, std::string_view>> device_library_files();

}  // namespace lizard
