// DType: the element types a manifest may name, with their sizes and the
// C spellings used in generated code.
//
//   DType t; if (parse_dtype("float32", &t)) size_t n = dtype_size(t);
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace lizard {

enum class DType : uint8_t {
  kInt8,
  kInt16,
  kInt32,
  kInt64,
  kUInt8,
  kUInt16,
  kUInt32,
  kUInt64,
  kFloat32,
  kFloat64,
};

bool parse_dtype(const std::string& name, DType* out);
const char* dtype_name(DType t);    // "float32"
const char* dtype_c_type(DType t);  // "float", "int64_t"
size_t dtype_size(DType t);
bool dtype_is_float(DType t);
bool dtype_is_signed(DType t);
// The numpy descriptor ("<f4") and its inverse.
const char* dtype_npy_descr(DType t);
bool parse_npy_descr(const std::string& descr, DType* out);

// Calls f(T{}) with T the C++ type of `t`.
template <typename F>
decltype(auto) visit_dtype(DType t, F&& f) {
  switch (t) {
    case DType::kInt8:
      return f(int8_t{});
    case DType::kInt16:
      return f(int16_t{});
    case DType::kInt32:
      return f(int32_t{});
    case DType::kInt64:
      return f(int64_t{});
    case DType::kUInt8:
      return f(uint8_t{});
    case DType::kUInt16:
      return f(uint16_t{});
    case DType::kUInt32:
      return f(uint32_t{});
    case DType::kUInt64:
      return f(uint64_t{});
    case DType::kFloat32:
      return f(float{});
    case DType::kFloat64:
      break;
  }
  return f(double{});
}

}  // namespace lizard
