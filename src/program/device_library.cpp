#include "program/device_library.h"

#include "common/embedded.h"

namespace lizard {

std::vector<std::pair<std::string, std::string_view>> device_library_files() {
  static const char* const kNames[] = {"lizard_device.h", "lizard_device_aggregate.h",
                                       "lizard_device_nearest.h"};
  std::vector<std::pair<std::string, std::string_view>> out;
  for (const char* name : kNames) out.emplace_back(name, embedded_file(name));
  return out;
}

}  // namespace lizard
