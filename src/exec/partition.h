// Partition: the device-neutral part of running a program on one executor's
// rows, shared by the CPU and CUDA backends so that the same misuse gets the
// same error on both.  It checks a partition against the program and sizes
// its dataset fields (with an overflow check), says which fields are uploaded
// and which start zeroed, checks row ranges, packs the kernels' dataset
// argument and launches for a partition or a slice of one, and plans the
// generator launches in the order the run names them.
//
//   LIZARD_ASSIGN_OR_RETURN(PartitionLayout l, check_partition(m, params, data));
//   ... allocate l.field_bytes[k] bytes per field, upload or zero per l.init[k] ...
//   LIZARD_ASSIGN_OR_RETURN(KernelArgs a, kernel_args(m, params, rows_of, limits));
//   LIZARD_RETURN_IF_ERROR(check_row_range(rows, first, count));  // iterate_rows
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "exec/executor.h"
#include "exec/launch.h"

namespace lizard {

// How a dataset field gets its bytes when a run begins.
enum class FieldInit {
  kUpload,  // the partition carries them
  kZero,    // output or scratch field, or one the generators fill
};

struct PartitionLayout {
  std::vector<uint64_t> field_bytes;  // manifest.dataset order
  std::vector<FieldInit> init;
};

// Checks `data` against the program: a non-negative row count, one entry per
// dataset field and, for each input field the generators do not fill,
// exactly rows × row width elements.  Field sizes that overflow are kTooLarge.
Result<PartitionLayout> check_partition(const Manifest& m, const ParamValues& p,
                                        const PartitionData& data);

// kInvalidArgument unless rows [first, first + count) lie within `rows`.
Status check_row_range(int64_t rows, int64_t first, int64_t count);

// kInvalidArgument unless `state` and `aggregate` have the sizes of the
// run's sections (make_section with the run's params).
Status check_sections(const SectionBuffer& state, const SectionBuffer& aggregate,
                      size_t state_bytes, size_t aggregate_bytes);

// The error of a call (iterate, end_run) made while no run has begun.
Status no_run_error(const std::string& call);

// Block sizes and the multiprocessor count a device's launches are planned with.
struct LaunchLimits {
  int64_t sm_count = 1;
  uint32_t default_block = 256;
  uint32_t max_block = 1024;
};

// Rows [first, first + count) of a partition, as the kernels see them.
struct RowSpan {
  int64_t partition_first_row = 0;   // the partition's first row in the dataset
  std::vector<uint64_t> field_ptrs;  // row 0 of the partition, per dataset field
  RunValues values;                  // the run's values the kernels see
  int64_t first = 0;                 // within the partition
  int64_t count = 0;
};

// The packed dataset_t argument for a span.
Result<std::vector<uint8_t>> dataset_arg(const Manifest& m, const ParamValues& p,
                                         const RowSpan& span);
// The `iterate` launches over `rows` rows, in manifest order.
Result<std::vector<LaunchConfig>> iterate_launches(const Manifest& m, const ParamValues& p,
                                                   int64_t rows, const LaunchLimits& limits);

// Both for a span.
struct KernelArgs {
  std::vector<uint8_t> dataset;
  std::vector<LaunchConfig> launches;  // manifest.iterate order
};
Result<KernelArgs> kernel_args(const Manifest& m, const ParamValues& p, const RowSpan& span,
                               const LaunchLimits& limits);

// One generator launch over a whole partition.
struct GeneratorLaunch {
  const KernelStep* step;
  LaunchConfig config;
};
// The launches of the generators `names`, in that order; an unknown name is
// an error.
Result<std::vector<GeneratorLaunch>> generator_launches(const Manifest& m, const ParamValues& p,
                                                        const std::vector<std::string>& names,
                                                        int64_t rows, const LaunchLimits& limits);

}  // namespace lizard
