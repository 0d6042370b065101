// Locale-independent parsing of one number written as text (a CSV or text
// dataset value) into a value of a field's C++ type.
//
//   int32_t v;
//   NumberError e = parse_number(std::string_view("42"), &v);
//   if (e != NumberError::kNone) return describe_number_error(e, "42", DType::kInt32);
//
// Integers accept an optional sign and decimal digits, or an integral number
// written with a fraction or exponent ("3.0", "1e3"); "1.5" is not an integer.
// Floats accept decimal and scientific notation, "inf" and "nan"; values too
// small for the type become zero (or subnormal), values too large are errors.
#pragma once

#include <charconv>
#include <cmath>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>

#include "common/dtype.h"

namespace lizard {

enum class NumberError { kNone, kNotANumber, kNotAnInteger, kOutOfRange };

// "'1.5' is not an integer (int32)" and the like.
std::string describe_number_error(NumberError e, std::string_view text, DType t);

namespace number_text_internal {

// Parses the whole of `text` as a long double; false when it is not a number.
bool parse_long_double(std::string_view text, long double* out);

template <typename T>
NumberError parse_integral_float(std::string_view text, T* out) {
  long double d;
  if (!parse_long_double(text, &d)) return NumberError::kNotANumber;
  if (std::isnan(d) || d != std::floor(d)) return NumberError::kNotAnInteger;
  if (d < static_cast<long double>(std::numeric_limits<T>::lowest()) ||
      d > static_cast<long double>(std::numeric_limits<T>::max()))
    return NumberError::kOutOfRange;
  *out = static_cast<T>(d);
  return NumberError::kNone;
}

}  // namespace number_text_internal

template <typename T>
NumberError parse_number(std::string_view text, T* out) {
  if (text.size() > 1 && text[0] == '+' && text[1] != '-') text.remove_prefix(1);
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *out);
  if (ec == std::errc() && ptr == end) return NumberError::kNone;
  if constexpr (std::is_integral_v<T>) {
    if (ec == std::errc::result_out_of_range) return NumberError::kOutOfRange;
    return number_text_internal::parse_integral_float(text, out);
  } else {
    if (ec != std::errc::result_out_of_range || ptr != end) return NumberError::kNotANumber;
    long double d;
    if (!number_text_internal::parse_long_double(text, &d)) return NumberError::kOutOfRange;
    if (std::fabs(d) > static_cast<long double>(std::numeric_limits<T>::max()))
      return NumberError::kOutOfRange;
    *out = static_cast<T>(d);  // underflow: zero or a subnormal
    return NumberError::kNone;
  }
}

}  // namespace lizard
