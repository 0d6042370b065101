#include "common/dtype.h"

namespace lizard {
namespace {
struct DTypeInfo {
  DType type;
  const char* name;
  const char* c_type;
  size_t size;
  const char* npy;
};
constexpr DTypeInfo kTypes[] = {
    {DType::kInt8, "int8", "int8_t", 1, "|i1"},
    {DType::kInt16, "int16", "int16_t", 2, "<i2"},
    {DType::kInt32, "int32", "int32_t", 4, "<i4"},
    {DType::kInt64, "int64", "int64_t", 8, "<i8"},
    {DType::kUInt8, "uint8", "uint8_t", 1, "|u1"},
    {DType::kUInt16, "uint16", "uint16_t", 2, "<u2"},
    {DType::kUInt32, "uint32", "uint32_t", 4, "<u4"},
    {DType::kUInt64, "uint64", "uint64_t", 8, "<u8"},
    {DType::kFloat32, "float32", "float", 4, "<f4"},
    {DType::kFloat64, "float64", "double", 8, "<f8"},
};
const DTypeInfo& info(DType t) {
  return kTypes[static_cast<int>(t)];
}
}  // namespace

bool parse_dtype(const std::string& name, DType* out) {
  for (const auto& i : kTypes) {
    if (name == i.name) {
      *out = i.type;
      return true;
    }
  }
  return false;
}

const char* dtype_name(DType t) {
  return info(t).name;
}
const char* dtype_c_type(DType t) {
  return info(t).c_type;
}
size_t dtype_size(DType t) {
  return info(t).size;
}
bool dtype_is_float(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat64;
}
bool dtype_is_signed(DType t) {
  return t == DType::kInt8 || t == DType::kInt16 || t == DType::kInt32 || t == DType::kInt64 ||
         dtype_is_float(t);
}
const char* dtype_npy_descr(DType t) {
  return info(t).npy;
}

bool parse_npy_descr(const std::string& descr, DType* out) {
  if (descr.size() < 2) return false;
  // '|' and '=' mean native/not applicable; lizard only runs on little-endian hosts.
  char order = descr[0];
  if (order != '<' && order != '|' && order != '=') return false;
  std::string rest = descr.substr(1);
  for (const auto& i : kTypes) {
    if (rest == std::string(i.npy + 1)) {
      *out = i.type;
      return true;
    }
  }
  return false;
}

}  // namespace lizard
