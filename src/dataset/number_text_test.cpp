#include "dataset/number_text.h"

#include <gtest/gtest.h>

#include <cmath>

namespace lizard {
namespace {

template <typename T>
NumberError parse(const char* text, T* out) {
  return parse_number(std::string_view(text), out);
}

TEST(DatasetNumberText, Integers) {
  int32_t i = 0;
  EXPECT_EQ(parse("-42", &i), NumberError::kNone);
  EXPECT_EQ(i, -42);
  EXPECT_EQ(parse("+7", &i), NumberError::kNone);
  EXPECT_EQ(i, 7);
  EXPECT_EQ(parse("3.0", &i), NumberError::kNone);
  EXPECT_EQ(i, 3);
  EXPECT_EQ(parse("1e3", &i), NumberError::kNone);
  EXPECT_EQ(i, 1000);
  EXPECT_EQ(parse("1.5", &i), NumberError::kNotAnInteger);
  EXPECT_EQ(parse("abc", &i), NumberError::kNotANumber);
  EXPECT_EQ(parse("", &i), NumberError::kNotANumber);
  EXPECT_EQ(parse("12x", &i), NumberError::kNotANumber);
  EXPECT_EQ(parse("2147483648", &i), NumberError::kOutOfRange);
  int64_t big = 0;
  EXPECT_EQ(parse("9223372036854775807", &big), NumberError::kNone);
  EXPECT_EQ(big, INT64_MAX);
}

TEST(DatasetNumberText, UnsignedRejectNegatives) {
  uint8_t u = 1;
  EXPECT_EQ(parse("255", &u), NumberError::kNone);
  EXPECT_EQ(u, 255);
  EXPECT_EQ(parse("256", &u), NumberError::kOutOfRange);
  EXPECT_EQ(parse("-1", &u), NumberError::kOutOfRange);
  EXPECT_EQ(parse("-0", &u), NumberError::kNone);
  EXPECT_EQ(u, 0);
}

TEST(DatasetNumberText, Floats) {
  float f = 0;
  EXPECT_EQ(parse("0.1", &f), NumberError::kNone);
  EXPECT_EQ(f, 0.1f);
  EXPECT_EQ(parse("-1.5e-3", &f), NumberError::kNone);
  EXPECT_EQ(f, -1.5e-3f);
  EXPECT_EQ(parse("+2", &f), NumberError::kNone);
  EXPECT_EQ(f, 2.0f);
  EXPECT_EQ(parse("1e-50", &f), NumberError::kNone);  // underflows to zero
  EXPECT_EQ(f, 0.0f);
  EXPECT_EQ(parse("1e39", &f), NumberError::kOutOfRange);
  EXPECT_EQ(parse("1,5", &f), NumberError::kNotANumber);
  EXPECT_EQ(parse("nan", &f), NumberError::kNone);
  EXPECT_TRUE(std::isnan(f));
  double d = 0;
  EXPECT_EQ(parse("5.137662486561892", &d), NumberError::kNone);
  EXPECT_EQ(d, 5.137662486561892);
  EXPECT_EQ(parse("1e400", &d), NumberError::kOutOfRange);
}

TEST(DatasetNumberText, DescribesErrors) {
  EXPECT_EQ(describe_number_error(NumberError::kNotAnInteger, "1.5", DType::kInt32),
            "'1.5' is not an integer (int32)");
  EXPECT_EQ(describe_number_error(NumberError::kNotANumber, "x", DType::kFloat32),
            "'x' is not a number (float32)");
  EXPECT_EQ(describe_number_error(NumberError::kOutOfRange, "300", DType::kUInt8),
            "'300' is out of range for uint8");
}

}  // namespace
}  // namespace lizard
