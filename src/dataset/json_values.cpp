#include "dataset/json_values.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <type_traits>

namespace lizard {
namespace {

using nlohmann::json;

constexpr const char* kOutOfRange = "is out of range";

// Converts one JSON number to T; returns why it cannot, or nullptr.
template <typename T>
const char* to_integer(const json& x, T* out) {
  using L = std::numeric_limits<T>;
  if (x.is_number_unsigned()) {
    uint64_t u = x.get<uint64_t>();
    if (u > static_cast<uint64_t>(L::max())) return kOutOfRange;
    *out = static_cast<T>(u);
    return nullptr;
  }
  if (x.is_number_integer()) {
    int64_t i = x.get<int64_t>();
    bool fits = i < 0 ? L::is_signed && i >= static_cast<int64_t>(L::lowest())
                      : static_cast<uint64_t>(i) <= static_cast<uint64_t>(L::max());
    if (!fits) return kOutOfRange;
    *out = static_cast<T>(i);
    return nullptr;
  }
  double d = x.get<double>();
  if (d != std::floor(d)) return "is not an integer";
  double limit = std::ldexp(1.0, L::digits);  // 2^31 for int32, 2^64 for uint64
  if (d >= limit || d < (L::is_signed ? -limit : 0.0)) return kOutOfRange;
  *out = static_cast<T>(d);
  return nullptr;
}

template <typename T>
const char* to_float(const json& x, T* out) {
  double d = x.get<double>();
  if (std::is_same_v<T, float>) {
    // The smallest magnitude that rounds to infinity as a float: 2^128 - 2^103.
    const double overflow = std::ldexp(1.0, 128) - std::ldexp(1.0, 103);
    if (std::fabs(d) >= overflow) return kOutOfRange;
  }
  *out = static_cast<T>(d);
  return nullptr;
}

template <typename T>
const char* to_value(const json& x, T* out) {
  if (!x.is_number()) return "is not a number";
  if constexpr (std::is_integral_v<T>) {
    return to_integer(x, out);
  } else {
    return to_float(x, out);
  }
}

std::string index_text(const std::vector<int64_t>& index) {
  std::string s;
  for (int64_t i : index) s += "[" + std::to_string(i) + "]";
  return s;
}

// Walks a JSON array shaped by `dims` (all known), writing its numbers in order.
template <typename T>
class Filler {
 public:
  Filler(DType dtype, const std::vector<int64_t>& dims, const std::string& what, T* out)
      : dtype_(dtype), dims_(dims), what_(what), out_(out) {}

  // A single number.
  Status scalar(const json& x) {
    const char* why = to_value(x, out_);
    return why == nullptr ? Status::Ok() : value_error("", x, why);
  }

  // A flat array: dims' product numbers.
  Status flat(const json& v) {
    for (size_t i = 0; i < v.size(); ++i) {
      if (const char* why = to_value(v[i], out_ + i))
        return value_error("element " + std::to_string(i), v[i], why);
    }
    return Status::Ok();
  }

  // A nested array: level `level` of dims, at `index`.
  Status nested(const json& v, size_t level, std::vector<int64_t>* index) {
    if (level == dims_.size()) {
      T scratch{};  // a dry run (no output) only checks
      const char* why = to_value(v, out_ != nullptr ? out_ + next_ : &scratch);
      ++next_;
      if (why != nullptr) return value_error("element " + index_text(*index), v, why);
      return Status::Ok();
    }
    if (!v.is_array() || static_cast<int64_t>(v.size()) != dims_[level])
      return shape_error(v, level, *index);
    for (size_t i = 0; i < v.size(); ++i) {
      index->push_back(static_cast<int64_t>(i));
      LIZARD_RETURN_IF_ERROR(nested(v[i], level + 1, index));
      index->pop_back();
    }
    return Status::Ok();
  }

 private:
  Status value_error(const std::string& where, const json& x, const char* why) const {
    return invalid_argument(what_ + (where.empty() ? "" : ": " + where) + ": " + x.dump() + " " +
                            why + " (" + dtype_name(dtype_) + ")");
  }

  Status shape_error(const json& v, size_t level, const std::vector<int64_t>& index) const {
    std::string where = level == 1 ? "row " + std::to_string(index[0]) : index_text(index);
    std::string expected =
        std::to_string(dims_[level]) + (level + 1 == dims_.size() ? " values" : " entries");
    if (!v.is_array())
      return invalid_argument(what_ + ": " + where + " is " + v.type_name() +
                              ", expected an array of " + expected);
    return invalid_argument(what_ + ": " + where + " has " + std::to_string(v.size()) +
                            (level + 1 == dims_.size() ? " values" : " entries") + ", expected " +
                            expected);
  }

  DType dtype_;
  const std::vector<int64_t>& dims_;
  const std::string& what_;
  T* out_;
  int64_t next_ = 0;
};

// Resolves dims[0] when it is -1, checking the array's length against dims.
Result<std::vector<int64_t>> resolve_dims(const json& v, const std::vector<int64_t>& dims,
                                          bool nested, const std::string& what) {
  std::vector<int64_t> out = dims;
  int64_t width = 1;
  for (size_t i = 1; i < dims.size(); ++i) width *= dims[i];
  int64_t n = static_cast<int64_t>(v.size());
  if (nested) {
    if (dims[0] >= 0 && n != dims[0])
      return invalid_argument(what + ": has " + std::to_string(n) + " rows, expected " +
                              std::to_string(dims[0]));
    out[0] = n;
    return out;
  }
  if (dims[0] < 0) {
    if (width == 0 ? n != 0 : n % width != 0)
      return invalid_argument(what + ": " + std::to_string(n) +
                              " values are not a whole number of rows of " + std::to_string(width) +
                              " values");
    out[0] = width == 0 ? 0 : n / width;
    return out;
  }
  if (n != dims[0] * width)
    return invalid_argument(what + ": has " + std::to_string(n) + " values, expected " +
                            std::to_string(dims[0] * width));
  return out;
}

json float_to_json(float f) {
  char buf[32];
  auto end = std::to_chars(buf, buf + sizeof buf, f).ptr;
  double d = f;
  std::from_chars(buf, end, d);  // the double nearest the float's shortest decimal form
  return json(d);
}

template <typename T>
json element_to_json(T x) {
  if constexpr (std::is_same_v<T, float>) {
    return float_to_json(x);
  } else if constexpr (std::is_same_v<T, double>) {
    return json(x);
  } else if constexpr (std::is_signed_v<T>) {
    return json(static_cast<int64_t>(x));
  } else {
    return json(static_cast<uint64_t>(x));
  }
}

template <typename T>
json nested_to_json(const T* data, const std::vector<int64_t>& dims, size_t level, int64_t* pos) {
  json arr = json::array();
  for (int64_t i = 0; i < dims[level]; ++i) {
    if (level + 1 == dims.size())
      arr.push_back(element_to_json(data[(*pos)++]));
    else
      arr.push_back(nested_to_json(data, dims, level + 1, pos));
  }
  return arr;
}

}  // namespace

Result<std::vector<uint8_t>> values_from_json(const json& v, DType dtype,
                                              const std::vector<int64_t>& dims,
                                              const std::string& what, int64_t* rows_out) {
  const json* values = &v;
  std::vector<int64_t> shape = dims;
  if (dims.empty()) {
    if (v.is_array() && v.size() == 1) values = &v[0];
    if (values->is_array() || values->is_object())
      return invalid_argument(what + ": expected a number, got " + v.dump().substr(0, 80));
    shape = {1};
  } else if (!v.is_array()) {
    return invalid_argument(what + ": expected an array, got " + std::string(v.type_name()));
  }
  bool nested = shape.size() > 1 && !v.empty() && v[0].is_array();
  if (!dims.empty()) {
    LIZARD_ASSIGN_OR_RETURN(shape, resolve_dims(v, dims, nested, what));
  }
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  // The product of nested dims is only as large as the arrays themselves
  // once every level has been checked: walk them before allocating.
  if (nested) {
    Status dry = visit_dtype(dtype, [&](auto t) {
      using T = decltype(t);
      Filler<T> filler(dtype, shape, what, nullptr);
      std::vector<int64_t> index;
      return filler.nested(v, 0, &index);
    });
    if (!dry.ok()) return dry;
  }
  std::vector<uint8_t> out(static_cast<size_t>(count) * dtype_size(dtype));
  Status st = visit_dtype(dtype, [&](auto t) {
    using T = decltype(t);
    Filler<T> filler(dtype, shape, what, reinterpret_cast<T*>(out.data()));
    if (dims.empty()) return filler.scalar(*values);
    std::vector<int64_t> index;
    return nested ? filler.nested(v, 0, &index) : filler.flat(v);
  });
  if (!st.ok()) return st;
  if (rows_out != nullptr) *rows_out = dims.empty() ? 1 : shape[0];
  return out;
}

json values_to_json(const void* data, DType dtype, const std::vector<int64_t>& dims) {
  return visit_dtype(dtype, [&](auto t) {
    using T = decltype(t);
    const T* p = static_cast<const T*>(data);
    if (dims.empty()) return element_to_json(p[0]);
    int64_t pos = 0;
    return nested_to_json(p, dims, 0, &pos);
  });
}

}  // namespace lizard
