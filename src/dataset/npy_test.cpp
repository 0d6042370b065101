#include "dataset/npy.h"

#include <gtest/gtest.h>

#include <cstring>

namespace lizard {
namespace {

// A header as numpy writes it, version 1.0, for the dict text `dict`.
std::string v1_header(const std::string& dict) {
  std::string body = dict;
  while ((10 + body.size() + 1) % 64 != 0) body += ' ';
  body += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(body.size() & 0xff);
  out += static_cast<char>(body.size() >> 8);
  return out + body;
}

Result<NpyHeader> parse_all(const std::string& bytes) {
  auto len = npy_header_length(bytes);
  if (!len.ok()) return len.status();
  return parse_npy_header(std::string_view(bytes).substr(0, std::min(*len, bytes.size())));
}

TEST(NpyHeader, ParsesANumpyHeader) {
  std::string h = v1_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2048, 16), }");
  auto parsed = parse_all(h);
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(parsed->descr, "<f4");
  EXPECT_EQ(parsed->dtype, DType::kFloat32);
  EXPECT_FALSE(parsed->fortran_order);
  EXPECT_EQ(parsed->shape, (std::vector<int64_t>{2048, 16}));
  EXPECT_EQ(parsed->data_offset, 128u);
  EXPECT_EQ(parsed->data_bytes(), 2048u * 16 * 4);
}

TEST(NpyHeader, AcceptsOtherSpellings) {
  auto one = parse_all(v1_header("{\"shape\": (5,), \"fortran_order\": True, \"descr\": \"|u1\"}"));
  ASSERT_TRUE(one.ok()) << one.status().message();
  EXPECT_EQ(one->dtype, DType::kUInt8);
  EXPECT_TRUE(one->fortran_order);
  EXPECT_EQ(one->shape, std::vector<int64_t>{5});
  auto scalar = parse_all(v1_header("{'descr': '<i8', 'fortran_order': False, 'shape': ()}"));
  ASSERT_TRUE(scalar.ok()) << scalar.status().message();
  EXPECT_TRUE(scalar->shape.empty());
  EXPECT_EQ(scalar->elements(), 1);
  auto py2 = parse_all(v1_header("{'descr': '<f8', 'fortran_order': False, 'shape': (3L, 2L), }"));
  ASSERT_TRUE(py2.ok()) << py2.status().message();
  EXPECT_EQ(py2->shape, (std::vector<int64_t>{3, 2}));
}

TEST(NpyHeader, ParsesVersion2And3) {
  for (char major : {'\x02', '\x03'}) {
    std::string dict = "{'descr': '<i4', 'fortran_order': False, 'shape': (7,), }";
    std::string body = dict + std::string(128 - 12 - dict.size() - 1, ' ') + "\n";
    std::string h("\x93NUMPY", 6);
    h += major;
    h += '\0';
    uint32_t len = static_cast<uint32_t>(body.size());
    for (int i = 0; i < 4; ++i) h += static_cast<char>((len >> (8 * i)) & 0xff);
    h += body;
    auto parsed = parse_all(h);
    ASSERT_TRUE(parsed.ok()) << parsed.status().message();
    EXPECT_EQ(parsed->dtype, DType::kInt32);
    EXPECT_EQ(parsed->data_offset, 128u);
  }
}

std::string error_of(const std::string& bytes) {
  auto parsed = parse_all(bytes);
  return parsed.ok() ? "" : parsed.status().message();
}

TEST(NpyHeader, RejectsBadHeaders) {
  EXPECT_NE(error_of("PK\x03\x04 not numpy").find("not an .npy file"), std::string::npos);
  EXPECT_NE(
      error_of(std::string("\x93NUMPY\x04\x00\x10\x00", 10)).find("unsupported .npy version 4.0"),
      std::string::npos);
  EXPECT_NE(error_of(std::string("\x93NUMPY\x01", 7)).find("truncated"), std::string::npos);
  std::string full = v1_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }");
  EXPECT_EQ(error_of(full.substr(0, 40)),
            "truncated .npy header: it needs 128 bytes, the file has 40");
  EXPECT_EQ(error_of(v1_header("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }")),
            "unsupported .npy dtype '>f4' (supported: little-endian int8..int64, uint8..uint64, "
            "float32, float64)");
  EXPECT_NE(error_of(v1_header("{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }"))
                .find("unsupported .npy dtype '<c8'"),
            std::string::npos);
  EXPECT_NE(error_of(v1_header("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,)}"))
                .find("structured"),
            std::string::npos);
  EXPECT_NE(error_of(v1_header("{'descr': '<f4', 'shape': (2,), }")).find("must have the keys"),
            std::string::npos);
  EXPECT_NE(error_of(v1_header("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }"))
                .find("expected a non-negative integer dimension"),
            std::string::npos);
  EXPECT_NE(error_of(v1_header("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,), }"))
                .find("expected True or False"),
            std::string::npos);
  EXPECT_NE(error_of(v1_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}"))
                .find("unexpected key 'x'"),
            std::string::npos);
}

TEST(NpyWriter, WritesWhatTheParserReads) {
  const float data[6] = {1, 2, 3, 4, 5, 6};
  std::string file = npy_bytes(DType::kFloat32, {3, 2}, data);
  EXPECT_EQ(file.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  EXPECT_EQ(file.size() % 64, 24u);  // 64-byte aligned header, then 24 bytes of data
  auto parsed = parse_all(file);
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(parsed->data_offset % 64, 0u);
  EXPECT_EQ(file[parsed->data_offset - 1], '\n');
  EXPECT_EQ(parsed->shape, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(parsed->descr, "<f4");
  EXPECT_EQ(std::memcmp(file.data() + parsed->data_offset, data, sizeof data), 0);
  EXPECT_EQ(file.size(), parsed->data_offset + sizeof data);
}

TEST(NpyWriter, WritesNumpysDictLiteral) {
  std::string h = npy_header(DType::kInt64, {5});
  EXPECT_EQ(h.substr(10, h.find('}') - 9),
            "{'descr': '<i8', 'fortran_order': False, 'shape': (5,), }");
  std::string scalar = npy_header(DType::kUInt8, {});
  EXPECT_NE(scalar.find("'descr': '|u1'"), std::string::npos);
  EXPECT_NE(scalar.find("'shape': ()"), std::string::npos);
}

TEST(NpyWriter, ShapeLiteralsArePythonTuples) {
  EXPECT_EQ(npy_shape_literal({3, 2}), "(3, 2)");
  EXPECT_EQ(npy_shape_literal({5}), "(5,)");
  EXPECT_EQ(npy_shape_literal({}), "()");
}

TEST(NpyWriter, UsesVersion2WhenTheDictIsLong) {
  std::vector<int64_t> shape(25000, 1);  // "1, " * 25000 does not fit a 16-bit length
  std::string h = npy_header(DType::kFloat64, shape);
  EXPECT_EQ(h[6], '\x02');
  EXPECT_EQ(h.size() % 64, 0u);
  auto parsed = parse_npy_header(h);
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(parsed->shape.size(), 25000u);
  EXPECT_EQ(parsed->data_offset, h.size());
}

}  // namespace
}  // namespace lizard
