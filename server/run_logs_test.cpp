#include "server/run_logs.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "runlog/log_format.h"

namespace lizard {
namespace {

class RunLogsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/run_logs_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  std::string file_of(const std::string& run_id) const {
    std::ifstream in(dir_ + "/runs/" + run_id + "/output.log");
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }
  std::string dir_;
};

TEST_F(RunLogsTest, LinesAreTaggedKeptBesideTheRecordAndFilteredBySource) {
  {
    RunLogs logs(dir_);
    logs.add("r1", "w1", {{0, 0, "a"}, {1, 0, "b"}});
    logs.add("r1", "w2", {{0, 0, "c"}});
    logs.add("r1", kServerLogSource, {{-1, 0, "hook"}});
    logs.add("r2", "w1", {{0, -1, "other run"}});
    EXPECT_EQ(*logs.read("r1", ""),
              "[w1 e0 it 0] a\n[w1 e1 it 0] b\n[w2 e0 it 0] c\n"
              "[server it 0] hook\n");
    EXPECT_EQ(*logs.read("r1", "w1"), "[w1 e0 it 0] a\n[w1 e1 it 0] b\n");
    EXPECT_EQ(*logs.read("r1", "server"), "[server it 0] hook\n");
    EXPECT_EQ(*logs.read("r2", ""), "[w1 e0] other run\n");
    EXPECT_EQ(*logs.read("r3", ""), "");
  }
  // Written by the time the logs are gone, and read again by another.
  EXPECT_EQ(file_of("r2"), "[w1 e0] other run\n");
  RunLogs again(dir_);
  EXPECT_EQ(*again.read("r1", "w2"), "[w2 e0 it 0] c\n");
}

TEST_F(RunLogsTest, EachSourceKeepsItsBoundAndSaysWhatWasCut) {
  RunLogs logs(dir_);
  const std::string line(1023, 'x');  // 1 KiB with its newline
  std::vector<LogLine> many;
  for (int i = 0; i < 1100; ++i) many.push_back({0, 0, line});
  logs.add("r1", "w1", many);
  logs.add("r1", "w2", {{0, 0, "still here"}});
  logs.note_cut("r1", "w1", 5, 5000);
  const std::string mine = *logs.read("r1", "w1");
  size_t kept = 0;
  for (size_t p = mine.find("[w1 e0"); p != std::string::npos; p = mine.find("[w1 e0", p + 1))
    ++kept;
  EXPECT_EQ(kept, 1024u);
  EXPECT_NE(mine.find("[w1] output cut: 81 more lines (80.9 KiB) past the 1 MiB kept per run per "
                      "worker\n"),
            std::string::npos)
      << mine.substr(mine.size() - 200);
  EXPECT_EQ(*logs.read("r1", "w2"), "[w2 e0 it 0] still here\n");
}

TEST_F(RunLogsTest, NothingCutSaysNothing) {
  RunLogs logs(dir_);
  logs.add("r1", "w1", {{0, 0, "a"}});
  logs.note_cut("r1", "w1", 0, 0);
  logs.note_cut("r1", kServerLogSource, 0, 0);
  EXPECT_EQ(*logs.read("r1", ""), "[w1 e0 it 0] a\n");
}

TEST_F(RunLogsTest, TheServersHooksOutputBecomesItsLines) {
  RunLogs logs(dir_);
  auto output = logs.hook_output("r4");
  output(2, {"one\ntwo", 0});
  output(-1, {"setup\n", 0});
  EXPECT_EQ(*logs.read("r4", ""), "[server it 2] one\n[server it 2] two\n[server] setup\n");
}

}  // namespace
}  // namespace lizard
