// ProgramLayout: how a manifest's sections sit in memory.
//
//  - ParamValues: a run's params, bound from JSON and checked against the manifest.
//  - StructLayout: the C layout (offsets, size) of each generated struct; the
//    same numbers are emitted as static_asserts in lizard_program.h, so the
//    host compiler, NVRTC and this code agree byte for byte.
//  - SectionBuffer: all fields of `state` or `aggregate` in one contiguous
//    buffer (the unit that is uploaded, folded and sent on the wire).
//  - pack_*: build the bytes of a struct instance from buffers and pointers;
//    used for kernel arguments (device pointers) and host hooks (host pointers).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "program/manifest.h"
#include "program/run_values.h"

namespace lizard {

struct ParamValue {
  DType type;
  int64_t i = 0;           // signed integer types
  uint64_t u = 0;          // unsigned integer types
  double f = 0;            // floating types
  int64_t as_int() const;  // integer value (for expressions)
  nlohmann::json to_json() const;
};

struct ParamValues {
  std::vector<ParamValue> values;  // in manifest order
  // Integer lookup for expressions; `rows` and `sm_count` are supplied by the caller.
  std::optional<int64_t> lookup(const Manifest& m, const std::string& name) const;
  nlohmann::json to_json(const Manifest& m) const;
};

// Checks `params` (a JSON object) against the manifest: applies defaults,
// rejects unknown and missing names and values of the wrong type or range.
Result<ParamValues> bind_params(const Manifest& m, const nlohmann::json& params);

// Evaluates `e` with the params, `rows` and `sm_count` when given (< 0: absent).
Result<int64_t> eval_expr(const Expr& e, const Manifest& m, const ParamValues& p, int64_t rows = -1,
                          int64_t sm_count = -1);

// Number of elements of one row of a dataset field (product of shape[1:]).
Result<int64_t> row_width(const FieldSpec& f, const Manifest& m, const ParamValues& p);
// Number of elements of a state/aggregate field (1 for scalars).
Result<int64_t> field_elements(const FieldSpec& f, const Manifest& m, const ParamValues& p);
// Where `f` lies in `m`, as its manifest names it ("state.centroids"); a
// field of no section of `m`: its name.
std::string field_key(const Manifest& m, const FieldSpec& f);
// Resolved dimensions of a field (rows substituted when >= 0); an error
// names the field's key and dimension ("state.c.shape[1]: division by zero ...").
Result<std::vector<int64_t>> field_dims(const FieldSpec& f, const Manifest& m, const ParamValues& p,
                                        int64_t rows = -1);

struct StructMember {
  std::string name;
  DType type;
  bool pointer = false;
  size_t offset = 0;
  size_t size = 0;
};

struct StructLayout {
  std::string c_name;  // "global_params_t"
  std::vector<StructMember> members;
  size_t size = 0;
  size_t align = 1;
  const StructMember* find(const std::string& name) const;
};

StructLayout params_layout(const Manifest& m);
StructLayout dataset_layout(const Manifest& m);
StructLayout state_layout(const Manifest& m);
StructLayout aggregate_layout(const Manifest& m);

struct FieldSlot {
  const FieldSpec* spec;
  size_t offset;  // in the section buffer, 16-byte aligned
  int64_t count;  // elements
  size_t bytes;
};

// The fields of one section (state or aggregate) in one buffer.
struct SectionBuffer {
  std::vector<FieldSlot> slots;
  std::vector<uint8_t> bytes;
  const FieldSlot* find(const std::string& name) const;
  uint8_t* data(const FieldSlot& s) { return bytes.data() + s.offset; }
  const uint8_t* data(const FieldSlot& s) const { return bytes.data() + s.offset; }
};

// The bytes make_section() would allocate for `fields` (each 16-byte
// aligned), computed without allocating; errors as make_section's.
Result<uint64_t> section_bytes(const std::vector<FieldSpec>& fields, const Manifest& m,
                               const ParamValues& p);

// Allocates a zeroed buffer for `fields` with shapes resolved from params.
Result<SectionBuffer> make_section(const std::vector<FieldSpec>& fields, const Manifest& m,
                                   const ParamValues& p);

std::vector<uint8_t> pack_params(const StructLayout& l, const ParamValues& p);
// Pointer members point at `base + slot.offset` (base: a device or host
// address of the section buffer); value members are copied from `host`.
std::vector<uint8_t> pack_section(const StructLayout& l, const SectionBuffer& host, uint64_t base);
// The same into `out`, reusing its memory (once per iteration).
void pack_section_into(const StructLayout& l, const SectionBuffer& host, uint64_t base,
                       std::vector<uint8_t>* out);
// Reads value members of a packed struct back into the section buffer (after a host hook).
void unpack_section_values(const StructLayout& l, const std::vector<uint8_t>& packed,
                           SectionBuffer* host);
// dataset_t: `rows`, `first_row`, the run's values (program/run_values.h),
// `iteration`, then a pointer per dataset field.  `field_ptrs` are addresses
// of the dataset fields, in manifest order; `iteration` is packed as 0.
std::vector<uint8_t> pack_dataset(const StructLayout& l, int64_t rows, int64_t first_row,
                                  const std::vector<uint64_t>& field_ptrs,
                                  const RunValues& values = {});
// Where dataset_t holds `iteration`: the iteration the kernels run, which
// changes from one launch to the next while the rest of the struct stays.
size_t dataset_iteration_offset();
// Sets `iteration` in a packed dataset_t (pack_dataset's), in place.
void set_dataset_iteration(std::vector<uint8_t>* packed, int64_t iteration);

// lizard_hook_context_t: what host.cpp hooks read of the run in progress,
// in the generated header's `lizard_hook_context`: the run's values
// (program/run_values.h), then `iteration`, the iteration of the call.
StructLayout hook_context_layout();
// Writes a lizard_hook_context_t (hook_context_layout().size bytes) at `out`.
void write_hook_context(void* out, const RunValues& values, int64_t iteration);

// The addresses of row `first` of each dataset field, given the addresses of
// row 0 (manifest.dataset order): where a slice of a partition begins.
Result<std::vector<uint64_t>> field_ptrs_at_row(const Manifest& m, const ParamValues& p,
                                                const std::vector<uint64_t>& field_ptrs,
                                                int64_t first);

}  // namespace lizard
