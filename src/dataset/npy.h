// The NumPy .npy format (versions 1.0, 2.0 and 3.0): parsing a header and
// producing one, for the dtypes lizard fields use.
//
//   Result<size_t> n = npy_header_length(first_bytes);   // at least kNpyPreambleMax bytes
//   Result<NpyHeader> h = parse_npy_header(header_bytes); // the first *n bytes
//   std::string file = npy_bytes(DType::kFloat32, {rows, 16}, data);
//
// The header is "\x93NUMPY", a version, a little-endian length, then a Python
// dict literal such as {'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }
// padded with spaces and a newline so that the data starts at a multiple of 64.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/dtype.h"
#include "common/status.h"

namespace lizard {

struct NpyHeader {
  std::string descr;  // as written in the file, e.g. "<f4"
  DType dtype = DType::kFloat32;
  bool fortran_order = false;
  std::vector<int64_t> shape;  // empty: a scalar
  size_t data_offset = 0;      // where the data starts: the whole header's length

  int64_t elements() const;     // product of shape (1 for a scalar)
  uint64_t data_bytes() const;  // elements() * dtype_size(dtype)
};

// Bytes needed to know the header's length: magic, version and length field.
constexpr size_t kNpyPreambleMax = 12;

// The whole header's length (preamble, dict and padding) from the file's first
// bytes (at least kNpyPreambleMax of them, or the whole file if shorter).
Result<size_t> npy_header_length(std::string_view first_bytes);

// Parses a complete header (the first npy_header_length() bytes of the file).
// Only little-endian (or byte-order-free) int8..uint64, float32 and float64
// descriptors are accepted.
Result<NpyHeader> parse_npy_header(std::string_view header);

// A shape as a Python tuple literal, as headers write it: "(3, 2)", "(5,)", "()".
std::string npy_shape_literal(const std::vector<int64_t>& shape);

// The header for an array of `dtype` with `shape` (C order), version 1.0 when
// the dict fits its 16-bit length field, else 2.0.  Data may follow directly.
std::string npy_header(DType dtype, const std::vector<int64_t>& shape);

// A whole .npy file: the header followed by the array's bytes.
std::string npy_bytes(DType dtype, const std::vector<int64_t>& shape, const void* data);

}  // namespace lizard
