#include "runlog/output_pipe.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include <string>

namespace lizard {
namespace {

TEST(OutputPipe, TakeReturnsWhatWasWrittenBeforeIt) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  OutputPipe pipe(fds[0]);
  ASSERT_EQ(::write(fds[1], "one\n", 4), 4);
  ASSERT_EQ(::write(fds[1], "two\n", 4), 4);
  EXPECT_EQ(pipe.take().bytes, "one\ntwo\n");
  EXPECT_EQ(pipe.take().bytes, "");
  ::close(fds[1]);
}

TEST(OutputPipe, AWriterNeverWaitsAndTheExcessIsCounted) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  OutputPipe pipe(fds[0]);
  // Far more than a pipe's buffer: the reader drains it while nobody takes.
  const std::string block(65536, 'x');
  const size_t blocks = OutputPipe::kHeldBytes / block.size() + 8;
  for (size_t i = 0; i < blocks; ++i)
    ASSERT_EQ(::write(fds[1], block.data(), block.size()), static_cast<ssize_t>(block.size()));
  ::close(fds[1]);
  OutputPipe::Taken t = pipe.take();
  EXPECT_EQ(t.bytes.size(), OutputPipe::kHeldBytes);
  EXPECT_EQ(t.dropped, blocks * block.size() - OutputPipe::kHeldBytes);
}

TEST(OutputPipe, WithoutADescriptorItHoldsNothing) {
  OutputPipe pipe(-1);
  EXPECT_EQ(pipe.take().bytes, "");
}

}  // namespace
}  // namespace lizard
