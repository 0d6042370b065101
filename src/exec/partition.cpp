#include "exec/partition.h"

namespace lizard {
namespace {

// a * b, or false on overflow.
bool checked_mul(uint64_t a, uint64_t b, uint64_t* out) {
  return !__builtin_mul_overflow(a, b, out);
}

}  // namespace

Result<PartitionLayout> check_partition(const Manifest& m, const ParamValues& p,
                                        const PartitionData& data) {
  if (data.rows < 0) return invalid_argument("partition has a negative row count");
  if (data.fields.size() != m.dataset.size())
    return invalid_argument("partition has " + std::to_string(data.fields.size()) +
                            " fields, the program's dataset has " +
                            std::to_string(m.dataset.size()));
  PartitionLayout out;
  for (size_t k = 0; k < m.dataset.size(); ++k) {
    const FieldSpec& f = m.dataset[k];
    LIZARD_ASSIGN_OR_RETURN(int64_t width, row_width(f, m, p));
    uint64_t bytes = 0;
    if (width < 0 ||
        !checked_mul(static_cast<uint64_t>(data.rows), static_cast<uint64_t>(width), &bytes) ||
        !checked_mul(bytes, dtype_size(f.type), &bytes) || bytes > SIZE_MAX)
      return too_large("dataset field '" + f.name + "' of " + std::to_string(data.rows) +
                       " rows is too large to address");
    const size_t given = data.field_size(k);
    const bool generated = given == 0 && !data.generators.empty();
    if (f.input && !generated && given != bytes)
      return invalid_argument("dataset field '" + f.name + "' has " + std::to_string(given) +
                              " bytes for " + std::to_string(data.rows) + " rows, expected " +
                              std::to_string(bytes));
    out.field_bytes.push_back(bytes);
    out.init.push_back(f.input && !generated ? FieldInit::kUpload : FieldInit::kZero);
  }
  return out;
}

Status check_row_range(int64_t rows, int64_t first, int64_t count) {
  if (first < 0 || count < 0 || first > rows - count)
    return invalid_argument("rows [" + std::to_string(first) + ", " +
                            std::to_string(first + count) + ") are not within the partition's " +
                            std::to_string(rows));
  return Status::Ok();
}

Status check_sections(const SectionBuffer& state, const SectionBuffer& aggregate,
                      size_t state_bytes, size_t aggregate_bytes) {
  if (state.bytes.size() != state_bytes || aggregate.bytes.size() != aggregate_bytes)
    return invalid_argument("state or aggregate buffer does not match the program's layout");
  return Status::Ok();
}

Status no_run_error(const std::string& call) {
  return Status(Code::kConflict, call + " without begin_run");
}

Result<std::vector<uint8_t>> dataset_arg(const Manifest& m, const ParamValues& p,
                                         const RowSpan& span) {
  LIZARD_ASSIGN_OR_RETURN(std::vector<uint64_t> ptrs,
                          field_ptrs_at_row(m, p, span.field_ptrs, span.first));
  return pack_dataset(dataset_layout(m), span.count, span.partition_first_row + span.first, ptrs,
                      span.values);
}

Result<std::vector<LaunchConfig>> iterate_launches(const Manifest& m, const ParamValues& p,
                                                   int64_t rows, const LaunchLimits& limits) {
  std::vector<LaunchConfig> out;
  for (const KernelStep& step : m.iterate) {
    LIZARD_ASSIGN_OR_RETURN(LaunchConfig c, plan_launch(step, m, p, rows, limits.sm_count,
                                                        limits.default_block, limits.max_block));
    out.push_back(c);
  }
  return out;
}

Result<KernelArgs> kernel_args(const Manifest& m, const ParamValues& p, const RowSpan& span,
                               const LaunchLimits& limits) {
  KernelArgs out;
  LIZARD_ASSIGN_OR_RETURN(out.dataset, dataset_arg(m, p, span));
  LIZARD_ASSIGN_OR_RETURN(out.launches, iterate_launches(m, p, span.count, limits));
  return out;
}

Result<std::vector<GeneratorLaunch>> generator_launches(const Manifest& m, const ParamValues& p,
                                                        const std::vector<std::string>& names,
                                                        int64_t rows, const LaunchLimits& limits) {
  std::vector<GeneratorLaunch> out;
  for (const std::string& name : names) {
    const KernelStep* step = m.find_generator(name);
    if (!step) return invalid_argument("'" + name + "' is not a generator kernel of the program");
    LIZARD_ASSIGN_OR_RETURN(LaunchConfig c, plan_launch(*step, m, p, rows, limits.sm_count,
                                                        limits.default_block, limits.max_block));
    out.push_back({step, c});
  }
  return out;
}

}  // namespace lizard
