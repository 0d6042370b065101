#include "common/byte_codec.h"

#include <gtest/gtest.h>

#include <limits>

namespace lizard {
namespace {

TEST(ByteCodec, WhatIsWrittenReadsBackLittleEndian) {
  ByteWriter w;
  w.u8(0xab);
  w.u64(0x0102030405060708ull);
  w.i64(-5);
  w.i32(std::numeric_limits<int32_t>::min());
  w.f64(-2.5);
  w.bytes(std::string("x\0y", 3));
  w.out() += "tail";
  EXPECT_EQ(static_cast<uint8_t>(w.out()[1]), 0x08);  // the low byte first
  ByteReader r(w.out());
  EXPECT_EQ(r.u8(), 0xab);
  EXPECT_EQ(r.u64(), 0x0102030405060708ull);
  EXPECT_EQ(r.i64(), -5);
  EXPECT_EQ(r.i32(), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(r.f64(), -2.5);
  EXPECT_EQ(r.bytes(), std::string_view("x\0y", 3));
  EXPECT_EQ(r.left(), 4u);
  EXPECT_EQ(r.rest(), "tail");
  EXPECT_TRUE(r.ok());
}

TEST(ByteCodec, AReadPastTheEndFailsAndYieldsZeros) {
  ByteWriter w;
  w.i32(7);
  ByteReader r(w.out());
  EXPECT_EQ(r.u64(), 0u);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.i32(), 0);  // stays failed
  EXPECT_FALSE(r.status("test").ok());
}

TEST(ByteCodec, AByteStringLongerThanTheFrameFails) {
  ByteWriter w;
  w.length(100);
  w.out() += "short";
  ByteReader r(w.out());
  EXPECT_TRUE(r.bytes().empty());
  EXPECT_FALSE(r.ok());
}

}  // namespace
}  // namespace lizard
