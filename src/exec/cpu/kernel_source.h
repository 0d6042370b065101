// KernelSource: turns a program's CUDA sources into a translation unit the
// host compiler builds for the CPU backend.  It rejects what the backend
// does not support (naming it), decides whether threads need fibers (the
// source names a barrier or a warp collective), rewrites `extern __shared__`
// declarations and writes the entry file that exports one
// lizard_cpu_kernel_NAME function per kernel (see cuda_cpu.h beside this file).
//
//   Result<CpuBuildPlan> plan = plan_cpu_build(program);
//   HostCompiler(cache).build_shared(plan->files, plan->units, plan->flags);
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "exec/executor.h"
#include "exec/host_compiler.h"

namespace lizard {

struct CpuBuildPlan {
  std::map<std::string, std::string> files;  // name -> text, written side by side
  std::vector<std::string> units;            // the entry file
  std::vector<std::string> flags;            // compile and link flags
  bool fibers = false;                       // threads of a block run as fibers
  PrecompiledHeader pch;                     // the runtime, which the entry includes first
};

Result<CpuBuildPlan> plan_cpu_build(const ProgramImage& program);

// What every build with (or without) fibers shares: the runtime's headers,
// the prelude each entry includes first, the flags and that prelude's
// precompiled header.  No units: for making the precompiled header ahead.
Result<CpuBuildPlan> runtime_build_plan(bool fibers);

// The exported symbol of kernel `name`.
std::string cpu_kernel_symbol(const std::string& name);

// Helpers, exposed for tests.
// `text` with comments and string/char literals blanked (newlines kept).
std::string strip_comments_and_literals(const std::string& text);
// The first unsupported feature `code` (stripped) uses, as a description; empty if none.
std::string find_unsupported_feature(const std::string& code);
// True when `code` (stripped) names a barrier or a warp collective.
bool needs_fibers(const std::string& code);
// Rewrites each `extern __shared__ T name[];` into a pointer to the dynamic
// shared buffer; line numbers are kept.  Inside a function the pointer is a
// plain local read from the thread's state (lizard_cpu_thread); at namespace
// scope it is a `static thread_local`.
std::string rewrite_extern_shared(const std::string& text);

}  // namespace lizard
