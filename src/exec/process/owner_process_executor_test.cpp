// OwnerProcessExecutor over real executor hosts (the lizard binary, CPU
// backend): each program's kernels run in a process of their own, which
// keeps rows for that program's runs alone; a run's calls, its kill and its
// output name its own process; at most `max_owners` processes stay, the one
// used longest ago that serves no run ending first; a forgotten owner's
// process ends.
#include "exec/process/owner_process_executor.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <cstring>
#include <numeric>

#include "program/testing/program_images.h"

namespace lizard {
namespace {

// Programs of the same kernels that differ by their checksum.
ProgramImage program(int n) {
  return testing::row_sum_image("program " + std::to_string(n));
}

constexpr int64_t kRows = 4096;
const char* kKey = "u1:0+4096x4@0+16384";

PartitionData keyed_rows() {
  std::vector<float> v(kRows);
  std::iota(v.begin(), v.end(), 1.0f);
  auto bytes = std::make_shared<std::vector<uint8_t>>(v.size() * sizeof(float));
  std::memcpy(bytes->data(), v.data(), bytes->size());
  PartitionData d;
  d.rows = kRows;
  d.fields.resize(1);
  d.shared.resize(1);
  d.shared[0] = {std::move(bytes), 0, kRows * sizeof(float), kKey};
  return d;
}

// One run of one iteration over the keyed rows; its total.
Result<double> run(OwnerProcessExecutor* e, const ProgramImage& p) {
  ParamValues params;
  LIZARD_RETURN_IF_ERROR(e->begin_run(p, params, keyed_rows()));
  LIZARD_ASSIGN_OR_RETURN(SectionBuffer state, make_section(p.manifest.state, p.manifest, params));
  LIZARD_ASSIGN_OR_RETURN(SectionBuffer agg,
                          make_section(p.manifest.aggregate, p.manifest, params));
  IterationStats stats;
  LIZARD_RETURN_IF_ERROR(e->iterate(state, 0, &agg, &stats));
  double total = 0;
  std::memcpy(&total, agg.bytes.data(), sizeof total);
  LIZARD_RETURN_IF_ERROR(e->end_run(false).status());
  return total;
}

constexpr double kTotal = kRows * (kRows + 1.0) / 2;

std::unique_ptr<OwnerProcessExecutor> start(size_t max_owners) {
  auto first = ProcessExecutor::start(
      {{"executor-host", "--backend", "cpu", "--cpu-threads", "2", "--cache-dir",
        ::testing::TempDir() + "lizard-owner-process-test", "--kept-rows-mb", "16"},
       "the CPU backend",
       LIZARD_BIN});
  EXPECT_TRUE(first.ok()) << first.status().message();
  if (!first.ok()) return nullptr;
  return std::make_unique<OwnerProcessExecutor>(std::move(first).value(), max_owners);
}

bool alive(pid_t pid) {
  return pid > 0 && ::kill(pid, 0) == 0;
}

TEST(OwnerProcessExecutor, EachProgramRunsInItsOwnProcessWhichKeepsRowsForItAlone) {
  auto e = start(4);
  ASSERT_TRUE(e);
  const ProgramImage a = program(1), b = program(2);
  ASSERT_NE(a.hash, b.hash);
  ASSERT_TRUE(e->build(a).ok());
  ASSERT_TRUE(e->build(b).ok());
  EXPECT_EQ(e->owners(), (std::vector<std::string>{b.hash, a.hash}));

  auto total = run(e.get(), a);
  ASSERT_TRUE(total.ok()) << total.status().message();
  EXPECT_EQ(*total, kTotal);
  const pid_t pid_a = e->pid();
  EXPECT_EQ(e->kept_rows_for(a.hash), std::vector<std::string>{kKey});
  EXPECT_TRUE(e->kept_rows_for(b.hash).empty()) << "b's process holds a's rows";
  EXPECT_EQ(e->kept_rows(), std::vector<std::string>{kKey});  // what the worker reports

  total = run(e.get(), b);
  ASSERT_TRUE(total.ok()) << total.status().message();
  EXPECT_EQ(*total, kTotal);
  const pid_t pid_b = e->pid();
  EXPECT_NE(pid_a, pid_b);
  EXPECT_TRUE(alive(pid_a));
  // a's next run finds its process, and its rows, as it left them.
  ASSERT_TRUE(run(e.get(), a).ok());
  EXPECT_EQ(e->pid(), pid_a);
}

TEST(OwnerProcessExecutor, AKillEndsTheRunsProcessAloneAndOthersKeepTheirRows) {
  auto e = start(4);
  ASSERT_TRUE(e);
  const ProgramImage a = program(3), b = program(4);
  ASSERT_TRUE(run(e.get(), a).ok());
  const pid_t pid_a = e->pid();
  ParamValues params;
  ASSERT_TRUE(e->begin_run(b, params, keyed_rows()).ok());
  const pid_t pid_b = e->pid();
  e->kill_process();  // a cancel of b's run
  auto agg = make_section(b.manifest.aggregate, b.manifest, params);
  auto state = make_section(b.manifest.state, b.manifest, params);
  ASSERT_TRUE(agg.ok() && state.ok());
  IterationStats stats;
  EXPECT_FALSE(e->iterate(*state, 0, &*agg, &stats).ok());
  EXPECT_FALSE(e->process_running());
  EXPECT_TRUE(alive(pid_a));
  EXPECT_FALSE(alive(pid_b));
  EXPECT_EQ(e->kept_rows_for(a.hash), std::vector<std::string>{kKey});
  EXPECT_TRUE(e->kept_rows_for(b.hash).empty());
  // b runs again, in a new process.
  auto total = run(e.get(), b);
  ASSERT_TRUE(total.ok()) << total.status().message();
  EXPECT_EQ(*total, kTotal);
}

TEST(OwnerProcessExecutor, KeepsAtMostItsCapTheOneUsedLongestAgoEndingFirstButNotARunsOwn) {
  auto e = start(2);
  ASSERT_TRUE(e);
  const ProgramImage a = program(5), b = program(6), c = program(7);
  ASSERT_TRUE(run(e.get(), a).ok());
  const pid_t pid_a = e->pid();
  ASSERT_TRUE(e->build(b).ok());
  ASSERT_TRUE(e->build(c).ok());  // a was used longest ago
  EXPECT_EQ(e->owners(), (std::vector<std::string>{c.hash, b.hash}));
  EXPECT_FALSE(alive(pid_a));
  EXPECT_TRUE(e->kept_rows().empty());  // a's rows went with its process
  // A process serving a run stays, whatever else builds meanwhile.
  ParamValues params;
  ASSERT_TRUE(e->begin_run(b, params, keyed_rows()).ok());
  const pid_t pid_b = e->pid();
  ASSERT_TRUE(e->build(a).ok());
  ASSERT_TRUE(e->build(c).ok());
  EXPECT_TRUE(alive(pid_b));
  EXPECT_EQ(e->pid(), pid_b);
  EXPECT_TRUE(e->end_run(false).ok());
}

TEST(OwnerProcessExecutor, AForgottenOwnersProcessEndsWithItsRows) {
  auto e = start(4);
  ASSERT_TRUE(e);
  const ProgramImage a = program(8), b = program(9);
  ASSERT_TRUE(run(e.get(), a).ok());
  const pid_t pid_a = e->pid();
  ASSERT_TRUE(e->build(b).ok());
  e->forget_owner(a.hash);
  EXPECT_EQ(e->owners(), std::vector<std::string>{b.hash});
  EXPECT_FALSE(alive(pid_a));
  EXPECT_EQ(e->pid(), -1);  // the latest run's process is gone
  EXPECT_TRUE(e->kept_rows().empty());
  // Rows a stage keeps for a program go to its process.
  EXPECT_EQ(e->keep_file_rows("k", FileRows{}).code(), Code::kConflict);
}

}  // namespace
}  // namespace lizard
