#include "dataset/number_text.h"

namespace lizard {

namespace number_text_internal {

bool parse_long_double(std::string_view text, long double* out) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *out);
  return ec == std::errc() && ptr == end;
}

}  // namespace number_text_internal

std::string describe_number_error(NumberError e, std::string_view text, DType t) {
  std::string quoted = "'" + std::string(text.substr(0, 64)) + (text.size() > 64 ? "...'" : "'");
  std::string type = dtype_name(t);
  switch (e) {
    case NumberError::kNone:
      return "";
    case NumberError::kNotANumber:
      return quoted + " is not a number (" + type + ")";
    case NumberError::kNotAnInteger:
      return quoted + " is not an integer (" + type + ")";
    case NumberError::kOutOfRange:
      break;
  }
  return quoted + " is out of range for " + type;
}

}  // namespace lizard
