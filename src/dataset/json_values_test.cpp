#include "dataset/json_values.h"

#include <gtest/gtest.h>

#include <cstring>

namespace lizard {
namespace {

using nlohmann::json;

template <typename T>
std::vector<T> as(const std::vector<uint8_t>& bytes) {
  std::vector<T> out(bytes.size() / sizeof(T));
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

std::string error_of(const json& v, DType t, const std::vector<int64_t>& dims) {
  auto r = values_from_json(v, t, dims, "dataset field 'points'", nullptr);
  return r.ok() ? "ok" : r.status().message();
}

TEST(ValuesFromJson, NestedRowsInferTheRowCount) {
  int64_t rows = -1;
  auto r = values_from_json(json::parse("[[1, 2.5, 3], [4, 5, 6]]"), DType::kFloat32, {-1, 3},
                            "dataset field 'points'", &rows);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(rows, 2);
  EXPECT_EQ(as<float>(*r), (std::vector<float>{1, 2.5f, 3, 4, 5, 6}));
}

TEST(ValuesFromJson, FlatArrayIsRowMajor) {
  int64_t rows = -1;
  auto r = values_from_json(json::parse("[1, 2, 3, 4, 5, 6]"), DType::kInt64, {-1, 3}, "x", &rows);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(rows, 2);
  EXPECT_EQ(as<int64_t>(*r), (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(error_of(json::parse("[1, 2, 3, 4]"), DType::kInt64, {-1, 3}),
            "dataset field 'points': 4 values are not a whole number of rows of 3 values");
}

TEST(ValuesFromJson, DeeperShapesAndKnownDims) {
  json cube = json::parse("[[[1, 2], [3, 4]], [[5, 6], [7, 8]]]");
  auto r = values_from_json(cube, DType::kUInt16, {2, 2, 2}, "state field 'c'", nullptr);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(as<uint16_t>(*r), (std::vector<uint16_t>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(error_of(json::parse("[[[1, 2], [3]], [[5, 6], [7, 8]]]"), DType::kUInt16, {2, 2, 2}),
            "dataset field 'points': [0][1] has 1 values, expected 2 values");
  EXPECT_EQ(error_of(json::parse("[[1, 2], [3, 4], [5, 6]]"), DType::kUInt16, {2, 2}),
            "dataset field 'points': has 3 rows, expected 2");
  EXPECT_EQ(error_of(json::parse("[1, 2, 3]"), DType::kUInt16, {2, 2}),
            "dataset field 'points': has 3 values, expected 4");
}

TEST(ValuesFromJson, RowOfTheWrongWidthNamesTheRow) {
  EXPECT_EQ(error_of(json::parse("[[1, 2, 3], [4, 5], [6, 7, 8]]"), DType::kFloat32, {-1, 3}),
            "dataset field 'points': row 1 has 2 values, expected 3 values");
  EXPECT_EQ(error_of(json::parse("[[1, 2, 3], 4]"), DType::kFloat32, {-1, 3}),
            "dataset field 'points': row 1 is number, expected an array of 3 values");
  EXPECT_EQ(error_of(json::parse("[1, [2, 3]]"), DType::kFloat32, {-1, 1}),
            "dataset field 'points': element 1: [2,3] is not a number (float32)");
}

TEST(ValuesFromJson, NumbersMustFitTheType) {
  EXPECT_EQ(error_of(json::parse("[[1, 2], [3, 1.5]]"), DType::kInt32, {-1, 2}),
            "dataset field 'points': element [1][1]: 1.5 is not an integer (int32)");
  EXPECT_EQ(error_of(json::parse("[1, 256]"), DType::kUInt8, {-1}),
            "dataset field 'points': element 1: 256 is out of range (uint8)");
  EXPECT_EQ(error_of(json::parse("[-1]"), DType::kUInt32, {-1}),
            "dataset field 'points': element 0: -1 is out of range (uint32)");
  EXPECT_EQ(error_of(json::parse("[2147483648]"), DType::kInt32, {-1}),
            "dataset field 'points': element 0: 2147483648 is out of range (int32)");
  EXPECT_EQ(error_of(json::parse("[1e40]"), DType::kFloat32, {-1}),
            "dataset field 'points': element 0: 1e+40 is out of range (float32)");
  EXPECT_EQ(error_of(json::parse("[\"1\"]"), DType::kFloat32, {-1}),
            "dataset field 'points': element 0: \"1\" is not a number (float32)");
  EXPECT_EQ(error_of(json::parse("[true]"), DType::kInt8, {-1}),
            "dataset field 'points': element 0: true is not a number (int8)");
  EXPECT_EQ(error_of(json::parse("[3.0, -128, 18446744073709551615]"), DType::kUInt64, {-1}),
            "dataset field 'points': element 1: -128 is out of range (uint64)");
  auto ok = values_from_json(json::parse("[3.0, 1e2, 18446744073709551615]"), DType::kUInt64, {-1},
                             "x", nullptr);
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(as<uint64_t>(*ok), (std::vector<uint64_t>{3, 100, UINT64_MAX}));
  EXPECT_EQ(error_of(json::parse("[9.3e18]"), DType::kInt64, {-1}),
            "dataset field 'points': element 0: 9.3e+18 is out of range (int64)");
}

TEST(ValuesFromJson, Scalars) {
  int64_t rows = 0;
  auto r = values_from_json(json(0.25), DType::kFloat64, {}, "state field 'shift'", &rows);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(as<double>(*r), std::vector<double>{0.25});
  EXPECT_EQ(rows, 1);
  auto one = values_from_json(json::parse("[7]"), DType::kInt16, {}, "s", nullptr);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(as<int16_t>(*one), std::vector<int16_t>{7});
  auto bad = values_from_json(json::parse("[1, 2]"), DType::kInt16, {}, "state field 's'", nullptr);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "state field 's': expected a number, got [1,2]");
  auto text = values_from_json(json("x"), DType::kInt16, {}, "state field 's'", nullptr);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().message(), "state field 's': \"x\" is not a number (int16)");
}

TEST(ValuesFromJson, NotAnArray) {
  EXPECT_EQ(error_of(json::parse("{\"a\": 1}"), DType::kFloat32, {-1, 2}),
            "dataset field 'points': expected an array, got object");
  int64_t rows = -1;
  auto empty = values_from_json(json::array(), DType::kFloat32, {-1, 2}, "x", &rows);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(rows, 0);
  EXPECT_TRUE(empty->empty());
}

TEST(ValuesToJson, NestsByDims) {
  const int32_t v[6] = {1, -2, 3, 4, 5, 6};
  EXPECT_EQ(values_to_json(v, DType::kInt32, {2, 3}).dump(), "[[1,-2,3],[4,5,6]]");
  EXPECT_EQ(values_to_json(v, DType::kInt32, {6}).dump(), "[1,-2,3,4,5,6]");
  EXPECT_EQ(values_to_json(v, DType::kInt32, {3, 1, 2}).dump(), "[[[1,-2]],[[3,4]],[[5,6]]]");
  EXPECT_EQ(values_to_json(v, DType::kInt32, {}).dump(), "1");
  EXPECT_EQ(values_to_json(v, DType::kInt32, {0, 3}).dump(), "[]");
  const uint64_t big = UINT64_MAX;
  EXPECT_EQ(values_to_json(&big, DType::kUInt64, {}).dump(), "18446744073709551615");
}

TEST(ValuesToJson, Float32PrintsItsShortestForm) {
  const float f[4] = {0.1f, 1.0f / 3, 3.4028235e38f, -2.5e-7f};
  EXPECT_EQ(values_to_json(f, DType::kFloat32, {4}).dump(),
            "[0.1,0.33333334,3.4028235e+38,-2.5e-07]");
  const double d[2] = {0.1, 1.0 / 3};
  EXPECT_EQ(values_to_json(d, DType::kFloat64, {2}).dump(), "[0.1,0.3333333333333333]");
}

TEST(ValuesToJson, RoundTripsThroughValuesFromJson) {
  const float f[6] = {0.1f, -7.25f, 1e-30f, 123456.79f, 0, 2};
  json j = json::parse(values_to_json(f, DType::kFloat32, {3, 2}).dump());
  auto back = values_from_json(j, DType::kFloat32, {3, 2}, "x", nullptr);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(std::memcmp(back->data(), f, sizeof f), 0);
}

// A huge row width from params must not be allocated before the arrays are
// checked: the request holds one value where 2^31 are expected.
TEST(ValuesFromJson, HugeDeclaredWidthIsRefusedBeforeAllocating) {
  int64_t rows = 0;
  auto r = values_from_json(json::parse("[[1], [2]]"), DType::kFloat64, {-1, int64_t{1} << 31},
                            "dataset field 'values'", &rows);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("row 0"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace lizard
