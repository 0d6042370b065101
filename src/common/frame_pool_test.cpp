#include "common/frame_pool.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/allocations.h"

namespace lizard {
namespace {

// A buffer given back is taken again, empty and with its capacity: a frame
// built in it allocates nothing.
TEST(FramePool, ABufferGivenBackIsTakenAgainWithItsCapacity) {
  FramePool pool;
  EXPECT_EQ(pool.take().capacity(), std::string().capacity());  // nothing kept yet
  std::string frame(1000, 'x');
  const char* memory = frame.data();
  pool.give(std::move(frame));
  EXPECT_EQ(pool.kept(), 1u);
  const uint64_t before = testing::allocations();
  std::string again = pool.take();
  again.append(900, 'y');
  EXPECT_EQ(testing::allocations() - before, 0u);
  EXPECT_EQ(again.data(), memory);
  EXPECT_EQ(again, std::string(900, 'y'));
  EXPECT_EQ(pool.kept(), 0u);
}

// Tiny and huge buffers are not kept, nor more than the pool's count or
// total of bytes, so that a pool never holds much memory.
TEST(FramePool, KeepsOnlyAFewBuffersOfModerateSize) {
  FramePool pool;
  pool.give(std::string(10, 's'));
  pool.give(std::string(FramePool::kLargest + 1, 'l'));
  EXPECT_EQ(pool.kept(), 0u);
  for (size_t i = 0; i < FramePool::kKept + 5; ++i) pool.give(std::string(1000, 'x'));
  EXPECT_EQ(pool.kept(), FramePool::kKept);
  FramePool big;
  for (int i = 0; i < 8; ++i) big.give(std::string(FramePool::kLargest, 'b'));
  EXPECT_LE(big.kept() * FramePool::kLargest, FramePool::kKeptBytes);
  EXPECT_GE(big.kept(), 3u);
}

}  // namespace
}  // namespace lizard
