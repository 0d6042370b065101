// first_tier's one measurement (see main.cpp): in this process, build the
// iterate kernels of a case with a candidate's options and time a step.
//
//   nlohmann::json r = first_tier::measure_in_this_process("kmeans16x32", "xO1", 1 << 24, 10);
//   r["compile_ms"], r["kernel_ms"], r["check"]      // or r["error"]
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace lizard::first_tier {

nlohmann::json measure_in_this_process(const std::string& case_name, const std::string& candidate,
                                       int64_t rows, int iters);

}  // namespace lizard::first_tier
