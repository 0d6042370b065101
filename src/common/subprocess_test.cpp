#include "common/subprocess.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

namespace lizard {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

TEST(RunCommand, CapturesOutputAndExitCode) {
  auto r = run_command({"sh", "-c", "echo out; echo err >&2; exit 3"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_FALSE(r->timed_out);
  EXPECT_EQ(r->output, "out\nerr\n");
  auto quick = run_command({"sh", "-c", "echo done"}, "", 5000);
  ASSERT_TRUE(quick.ok());
  EXPECT_FALSE(quick->timed_out);
  EXPECT_EQ(quick->output, "done\n");
}

TEST(RunCommand, AProgramPastItsDeadlineIsKilledWithItsGroup) {
  const std::string marker =
      (std::filesystem::path(::testing::TempDir()) / "lizard-run-command-group").string();
  std::filesystem::remove(marker);
  // The shell leaves a child that would write the marker after the deadline
  // and holds the output pipe open: both end at the deadline.
  const auto start = Clock::now();
  auto r = run_command({"sh", "-c", "(sleep 2; touch " + marker + ") & echo started; sleep 30"}, "",
                       500);
  const auto took = Clock::now() - start;
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->timed_out);
  EXPECT_EQ(r->exit_code, 128 + SIGKILL);
  EXPECT_EQ(r->output, "started\n");
  EXPECT_GE(took, 450ms);
  EXPECT_LT(took, 5s);
  std::this_thread::sleep_for(2500ms);
  EXPECT_FALSE(std::filesystem::exists(marker)) << "the group's other process ran on";
}

TEST(RunCommand, AProgramThatIsNotThereIsAnError) {
  auto r = run_command({"/nonexistent/lizard-no-such-program"}, "", 1000);
  EXPECT_FALSE(r.ok());
}

}  // namespace
}  // namespace lizard
