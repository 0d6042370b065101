// The backends the conformance cases run on.  By default the CPU backend;
// with LIZARD_CONFORMANCE_BACKEND=cuda, every GPU of this machine.
//
//   std::string why;
//   for (auto& e : conformance_executors(&why)) run_case(e.get(), c);
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "exec/executor.h"

namespace lizard {

// The executors named by LIZARD_CONFORMANCE_BACKEND (cpu when unset); none,
// with the reason in `error`, when that backend cannot run here.
std::vector<std::unique_ptr<Executor>> conformance_executors(std::string* error = nullptr);

}  // namespace lizard
