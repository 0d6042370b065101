// The memory an executor keeps input rows in for later runs (exec/kept_rows.h):
// `--kept-rows-mb N` as given, or by default (N < 0) half the memory a GPU
// has free when the worker starts, and for the CPU backend a quarter of the
// host's memory, at most 2 GiB per executor.  Rows a run needs room for are
// evicted first (least recently used), so the budget bounds what is kept,
// never what a run may use.
//
//   uint64_t bytes = kept_rows_budget(opts.kept_rows_mb, executor.info());
#pragma once

#include <cstdint>

#include "exec/executor.h"

namespace lizard {

constexpr int64_t kKeptRowsAuto = -1;  // --kept-rows-mb's default

// The budget in bytes for `device` (its kind, and its free or total memory).
uint64_t kept_rows_budget(int64_t option_mb, const ExecutorInfo& device);

}  // namespace lizard
