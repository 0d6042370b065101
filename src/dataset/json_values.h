// Conversion between JSON arrays of numbers and typed, row-major buffers: how
// inline dataset values and state fields arrive in a run request, and how
// final state and aggregation results are reported.
//
//   int64_t rows;
//   auto buf = values_from_json(body["dataset"]["points"]["values"], DType::kFloat32,
//                               {-1, 3}, "dataset field 'points'", &rows);
//   nlohmann::json j = values_to_json(buf->data(), DType::kFloat32, {rows, 3});
//
// Arrays may be nested to match the shape ([[1, 2, 3], [4, 5, 6]]) or flat in
// row-major order ([1, 2, 3, 4, 5, 6]).  A scalar field (no dims) is a number.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "common/dtype.h"
#include "common/status.h"

namespace lizard {

// Converts `v` into values of `dtype` shaped by `dims` (empty: a scalar).
// dims[0] may be -1 (a dataset field's rows): it is then inferred, and a flat
// array's length must be a multiple of the row width.  Each number must fit
// the dtype: integer types reject fractions and values out of range, float32
// rejects values beyond its range.  Errors start with `what` (e.g. "state
// field 'centroids'") and name the row or element at fault.  When `rows_out`
// is given it receives dims[0], inferred or not (1 for a scalar).
Result<std::vector<uint8_t>> values_from_json(const nlohmann::json& v, DType dtype,
                                              const std::vector<int64_t>& dims,
                                              const std::string& what, int64_t* rows_out);

// The values at `data` as nested arrays shaped by `dims`, or a number when
// `dims` is empty.  float32 values are written in their shortest form that
// reads back to the same float (0.1f is 0.1).
nlohmann::json values_to_json(const void* data, DType dtype, const std::vector<int64_t>& dims);

}  // namespace lizard
