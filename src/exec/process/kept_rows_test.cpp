// Kept input rows (exec/kept_rows.h) as a worker meets them: an executor
// process keeps a run's keyed rows, the next run over them names them by key
// instead of sending them, and that run still sees the rows as they were
// uploaded, whatever the previous run's kernels wrote into them.  A process
// that restarted, or rows evicted for others, are sent again.
#include "exec/kept_rows.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <numeric>
#include <thread>

#include "common/child_process.h"
#include "exec/cpu/cpu_executor.h"
#include "exec/process/executor_protocol.h"
#include "exec/process/process_executor.h"
#include "program/bundle.h"
#include "program/testing/program_images.h"

namespace lizard {
namespace {

TEST(KeptRows, KeepsWithinItsBudgetAndEvictsTheLeastRecentlyUsed) {
  KeptRows<std::vector<uint8_t>> kept(100);
  EXPECT_TRUE(kept.put("a", std::vector<uint8_t>(40, 1), 40));
  EXPECT_TRUE(kept.put("b", std::vector<uint8_t>(40, 2), 40));
  ASSERT_NE(kept.find("a"), nullptr);  // a is now the most recently used
  EXPECT_TRUE(kept.put("c", std::vector<uint8_t>(40, 3), 40));
  EXPECT_FALSE(kept.contains("b"));
  EXPECT_EQ(kept.keys(), (std::vector<std::string>{"c", "a"}));
  EXPECT_EQ(kept.bytes(), 80u);
  EXPECT_EQ((*kept.find("a"))[0], 1);
  // Too large alone, or beside rows that may not go: not kept, nothing evicted.
  EXPECT_FALSE(kept.put("huge", std::vector<uint8_t>(101), 101));
  EXPECT_FALSE(kept.put("d", std::vector<uint8_t>(40), 40, {"a", "c"}));
  EXPECT_EQ(kept.keys(), (std::vector<std::string>{"a", "c"}));
  // Eviction skips the protected rows.
  EXPECT_TRUE(kept.evict_one({"a"}));
  EXPECT_EQ(kept.keys(), (std::vector<std::string>{"a"}));
  EXPECT_FALSE(kept.evict_one({"a"}));
  kept.clear();
  EXPECT_TRUE(kept.empty());
  EXPECT_EQ(kept.bytes(), 0u);
}

// Each iteration adds 1 to every input row in place and sums the rows.
const char* kBumpYaml = R"(
sources: {cuda: kernel.cu}
dataset:
  x: {type: float32, shape: [rows]}
aggregate:
  total: {type: float64, reduce: sum}
iterate:
  - {kernel: bump, block: 64}
)";

const char* kBumpKernel = R"(
extern "C" __global__ void bump(global_params_t params, dataset_t data, global_state_t state,
                                agg_res_t result) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i >= data.rows) return;
  data.x[i] += 1.0f;
  atomicAdd(result.total, (double)data.x[i]);
}
)";

ProgramImage bump_program() {
  return testing::program_image(kBumpYaml, kBumpKernel);
}

constexpr int64_t kRows = 1 << 18;  // 1 MiB of float32

std::shared_ptr<const std::vector<uint8_t>> rows_from(float first) {
  std::vector<float> v(kRows);
  std::iota(v.begin(), v.end(), first);
  auto out = std::make_shared<std::vector<uint8_t>>(v.size() * sizeof(float));
  std::memcpy(out->data(), v.data(), out->size());
  return out;
}

// The sum of rows first, first + 1, ... after one bump each.
double bumped_total(float first) {
  return kRows * (first + 1.0) + kRows * (kRows - 1.0) / 2;
}

// Rows [0, kRows) of `owner`, under `key`.
PartitionData keyed(std::shared_ptr<const std::vector<uint8_t>> owner, const std::string& key) {
  PartitionData d;
  d.rows = kRows;
  d.fields.resize(1);
  d.shared.resize(1);
  d.shared[0] = {std::move(owner), 0, kRows * sizeof(float), key};
  return d;
}

// One run of two iterations; the first iteration's total, or the error.
Result<double> run_twice(Executor* e, const ProgramImage& p, PartitionData d) {
  ParamValues params;
  LIZARD_RETURN_IF_ERROR(e->begin_run(p, params, std::move(d)));
  LIZARD_ASSIGN_OR_RETURN(SectionBuffer state, make_section(p.manifest.state, p.manifest, params));
  double first = 0;
  for (int it = 0; it < 2; ++it) {
    LIZARD_ASSIGN_OR_RETURN(SectionBuffer agg,
                            make_section(p.manifest.aggregate, p.manifest, params));
    IterationStats stats;
    LIZARD_RETURN_IF_ERROR(e->iterate(state, it, &agg, &stats));
    if (it == 0) std::memcpy(&first, agg.bytes.data(), sizeof first);
  }
  LIZARD_RETURN_IF_ERROR(e->end_run(false).status());
  return first;
}

std::unique_ptr<ProcessExecutor> start_cpu(int kept_mb) {
  auto e = ProcessExecutor::start(
      {{"executor-host", "--backend", "cpu", "--cpu-threads", "2", "--cache-dir",
        ::testing::TempDir() + "lizard-kept-rows-test", "--kept-rows-mb", std::to_string(kept_mb)},
       "the CPU backend",
       LIZARD_BIN});
  EXPECT_TRUE(e.ok()) << e.status().message();
  return e.ok() ? std::move(e).value() : nullptr;
}

TEST(KeptRowsProcess, TheNextRunNamesTheRowsAndSeesThemAsUploaded) {
  ProgramImage p = bump_program();
  auto e = start_cpu(16);
  ASSERT_TRUE(e);
  auto first = run_twice(e.get(), p, keyed(rows_from(0), "u1:0+262144x4@0+1048576"));
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_EQ(*first, bumped_total(0));
  EXPECT_EQ(e->kept_rows(), std::vector<std::string>{"u1:0+262144x4@0+1048576"});
  // The same key over other bytes: a key names immutable rows, so the
  // process takes its own copy and these bytes never travel.  The previous
  // run bumped its rows twice; this one starts from the rows as uploaded.
  auto second = run_twice(e.get(), p, keyed(rows_from(1000), "u1:0+262144x4@0+1048576"));
  ASSERT_TRUE(second.ok()) << second.status().message();
  EXPECT_EQ(*second, bumped_total(0));
  // Other rows are sent, and used.
  auto other = run_twice(e.get(), p, keyed(rows_from(7), "u2:0+262144x4@0+1048576"));
  ASSERT_TRUE(other.ok()) << other.status().message();
  EXPECT_EQ(*other, bumped_total(7));
}

TEST(KeptRowsProcess, ARestartedProcessIsSentTheRowsAgain) {
  ProgramImage p = bump_program();
  auto e = start_cpu(16);
  ASSERT_TRUE(e);
  ASSERT_TRUE(run_twice(e.get(), p, keyed(rows_from(0), "u1@0")).ok());
  e->kill_process();
  for (int i = 0; i < 500 && e->process_running(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_FALSE(e->process_running());
  EXPECT_TRUE(e->kept_rows().empty());
  auto again = run_twice(e.get(), p, keyed(rows_from(3), "u1@0"));
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(*again, bumped_total(3));  // the rows sent, not the lost process's
  EXPECT_EQ(e->kept_rows(), std::vector<std::string>{"u1@0"});
}

TEST(KeptRowsProcess, RowsEvictedForOthersAreSentAgain) {
  ProgramImage p = bump_program();
  auto e = start_cpu(1);  // room for one 1 MiB field
  ASSERT_TRUE(e);
  ASSERT_TRUE(run_twice(e.get(), p, keyed(rows_from(0), "a")).ok());
  ASSERT_TRUE(run_twice(e.get(), p, keyed(rows_from(5), "b")).ok());
  EXPECT_EQ(e->kept_rows(), std::vector<std::string>{"b"});
  auto a = run_twice(e.get(), p, keyed(rows_from(9), "a"));
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(*a, bumped_total(9));
}

TEST(KeptRowsProcess, NoBudgetKeepsNothing) {
  ProgramImage p = bump_program();
  auto e = start_cpu(0);
  ASSERT_TRUE(e);
  ASSERT_TRUE(run_twice(e.get(), p, keyed(rows_from(0), "a")).ok());
  EXPECT_TRUE(e->kept_rows().empty());
  auto again = run_twice(e.get(), p, keyed(rows_from(2), "a"));
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(*again, bumped_total(2));
}

// The executor host, spoken to directly: a begin_run that names rows the
// process does not keep is refused with `rows_missing`, and the process
// serves the next request.
TEST(KeptRowsProcess, AHostAsksForRowsItDoesNotKeep) {
  auto child =
      ChildProcess::spawn({"executor-host", "--backend", "cpu", "--cpu-threads", "1", "--cache-dir",
                           ::testing::TempDir() + "lizard-kept-rows-test", "--kept-rows-mb", "16"},
                          LIZARD_BIN);
  ASSERT_TRUE(child.ok()) << child.status().message();
  FrameChannel& channel = (*child)->channel();
  ByteWriter w;
  w.u8(static_cast<uint8_t>(ExecutorOp::kBeginRun));
  w.u8(1);
  write_program(&w, bump_program());
  write_params(&w, ParamValues{});
  PartitionData d;
  d.rows = kRows;
  write_partition_head(&w, d,
                       {{FieldRows::kKept, "never-sent", kRows * sizeof(float), FileRows{}}});
  ASSERT_TRUE(channel.send(w.out()).ok());
  auto frame = channel.receive(60000);
  ASSERT_TRUE(frame.ok()) << frame.status().message();
  ByteReader r(frame.value());
  bool lost = true;
  Status st = read_reply_head(&r, &lost);
  EXPECT_EQ(st.code(), Code::kNotFound) << st.message();
  EXPECT_FALSE(lost);
  BeginRunReply reply = read_begin_run_reply(&r);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(reply.rows_missing);
  EXPECT_TRUE(reply.kept.empty());
  // Still in step: the next request is answered.
  const char info = static_cast<char>(ExecutorOp::kInfo);
  ASSERT_TRUE(channel.send(std::string_view(&info, 1)).ok());
  auto next = channel.receive(60000);
  ASSERT_TRUE(next.ok()) << next.status().message();
  ByteReader n(next.value());
  EXPECT_TRUE(read_reply_head(&n, &lost).ok());
}

TEST(KeptRowsCpu, RowsNamedButNotKeptAreAnError) {
  CpuExecutorOptions o;
  o.threads = 1;
  o.cache_dir = ::testing::TempDir() + "lizard-kept-rows-test";
  o.kept_rows_bytes = 1 << 20;
  auto e = make_cpu_executor(o);
  PartitionData d;
  d.rows = kRows;
  d.fields.resize(1);
  d.shared = {{nullptr, 0, kRows * sizeof(float), "never-sent"}};
  ParamValues params;
  Status st = e->begin_run(bump_program(), params, std::move(d));
  EXPECT_EQ(st.code(), Code::kNotFound) << st.message();
  EXPECT_NE(st.message().find("never-sent"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace lizard
