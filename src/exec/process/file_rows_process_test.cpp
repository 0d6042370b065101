// An executor process reading a run's rows from a file itself
// (FieldRows::kFile, exec/file_rows.h): the rows of the partition's range
// reach the kernels, also beside rows sent in frames and when kept under a
// key; a file that changed after the worker located the rows fails the run
// with a clear error, and the process serves the next run.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <numeric>
#include <thread>

#include "dataset/npy.h"
#include "dataset/test_files.h"
#include "exec/cpu/cpu_executor.h"
#include "exec/file_rows.h"
#include "exec/process/process_executor.h"
#include "program/testing/program_images.h"

namespace lizard {
namespace {

// Sums x * w over the rows.
const char* kDotYaml = R"(
sources: {cuda: kernel.cu}
dataset:
  x: {type: float32, shape: [rows]}
  w: {type: float32, shape: [rows]}
aggregate:
  total: {type: float64, reduce: sum}
iterate:
  - {kernel: dot, block: 64}
)";

const char* kDotKernel = R"(
extern "C" __global__ void dot(global_params_t params, dataset_t data, global_state_t state,
                               agg_res_t result) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i >= data.rows) return;
  atomicAdd(result.total, (double)data.x[i] * data.w[i]);
}
)";

constexpr int64_t kFileRows = 300007;  // not a multiple of any chunk or slice

std::string write_values(const TempDir& dir, const std::string& name, float first) {
  std::vector<float> v(kFileRows);
  std::iota(v.begin(), v.end(), first);
  return dir.write(name, npy_bytes(DType::kFloat32, {kFileRows}, v.data()));
}

// Sum over rows [first, first + rows) of (first_value + r) * 2.
double expected_total(int64_t first, int64_t rows, float first_value) {
  double sum = 0;
  for (int64_t r = first; r < first + rows; ++r) sum += (first_value + static_cast<double>(r)) * 2;
  return sum;
}

// A partition whose x comes from `path`'s rows and whose w (all 2) is sent.
Result<PartitionData> partition(const std::string& path, int64_t first, int64_t rows) {
  PartitionData d;
  d.first_row = first;
  d.rows = rows;
  d.fields.resize(2);
  std::vector<float> w(static_cast<size_t>(rows), 2.0f);
  d.fields[1].resize(w.size() * sizeof(float));
  std::memcpy(d.fields[1].data(), w.data(), d.fields[1].size());
  d.file_rows.resize(2);
  LIZARD_ASSIGN_OR_RETURN(
      d.file_rows[0], locate_file_rows(path, FileFormat::kNpy, DType::kFloat32, 1, first, rows));
  return d;
}

Result<double> run_once(Executor* e, const ProgramImage& p, PartitionData d) {
  ParamValues params;
  LIZARD_RETURN_IF_ERROR(e->begin_run(p, params, std::move(d)));
  LIZARD_ASSIGN_OR_RETURN(SectionBuffer state, make_section(p.manifest.state, p.manifest, params));
  LIZARD_ASSIGN_OR_RETURN(SectionBuffer agg,
                          make_section(p.manifest.aggregate, p.manifest, params));
  IterationStats stats;
  LIZARD_RETURN_IF_ERROR(e->iterate(state, 0, &agg, &stats));
  LIZARD_RETURN_IF_ERROR(e->end_run(false).status());
  double total = 0;
  std::memcpy(&total, agg.bytes.data(), sizeof total);
  return total;
}

std::unique_ptr<ProcessExecutor> start_cpu() {
  auto e = ProcessExecutor::start(
      {{"executor-host", "--backend", "cpu", "--cpu-threads", "2", "--cache-dir",
        ::testing::TempDir() + "lizard-file-rows-test", "--kept-rows-mb", "0"},
       "the CPU backend",
       LIZARD_BIN});
  EXPECT_TRUE(e.ok()) << e.status().message();
  return e.ok() ? std::move(e).value() : nullptr;
}

TEST(FileRowsProcess, TheProcessReadsThePartitionsRowsFromTheFile) {
  TempDir dir;
  const std::string path = write_values(dir, "x.npy", 1);
  ProgramImage p = testing::program_image(kDotYaml, kDotKernel);
  auto e = start_cpu();
  ASSERT_TRUE(e);
  struct Range {
    int64_t first, rows;
  };
  for (Range r : {Range{0, kFileRows}, Range{0, 1}, Range{kFileRows - 1, 1}, Range{1234, 150001},
                  Range{kFileRows / 3, kFileRows - kFileRows / 3}}) {
    auto d = partition(path, r.first, r.rows);
    ASSERT_TRUE(d.ok()) << d.status().message();
    auto total = run_once(e.get(), p, std::move(d).value());
    ASSERT_TRUE(total.ok()) << total.status().message();
    EXPECT_EQ(*total, expected_total(r.first, r.rows, 1)) << r.first << "+" << r.rows;
  }
}

TEST(FileRowsProcess, AFileChangedAfterTheWorkerLocatedItFailsTheRunAndTheProcessGoesOn) {
  TempDir dir;
  const std::string path = write_values(dir, "x.npy", 1);
  ProgramImage p = testing::program_image(kDotYaml, kDotKernel);
  auto e = start_cpu();
  ASSERT_TRUE(e);
  auto stale = partition(path, 10, 1000);
  ASSERT_TRUE(stale.ok()) << stale.status().message();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  write_values(dir, "x.npy", 100);  // rewritten in place: same size and inode
  auto refused = run_once(e.get(), p, std::move(stale).value());
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find(path + " changed"), std::string::npos)
      << refused.status().message();
  EXPECT_TRUE(e->process_running());
  // Located again, the new rows are read.
  auto fresh = partition(path, 10, 1000);
  ASSERT_TRUE(fresh.ok());
  auto total = run_once(e.get(), p, std::move(fresh).value());
  ASSERT_TRUE(total.ok()) << total.status().message();
  EXPECT_EQ(*total, expected_total(10, 1000, 100));
}

// The CPU backend in this process reads the rows itself too.
TEST(FileRowsCpu, TheExecutorReadsThePartitionsRows) {
  TempDir dir;
  const std::string path = write_values(dir, "x.npy", 3);
  CpuExecutorOptions o;
  o.threads = 2;
  o.cache_dir = ::testing::TempDir() + "lizard-file-rows-test";
  auto e = make_cpu_executor(o);
  auto d = partition(path, 99, 200000);
  ASSERT_TRUE(d.ok()) << d.status().message();
  auto total = run_once(e.get(), testing::program_image(kDotYaml, kDotKernel), std::move(*d));
  ASSERT_TRUE(total.ok()) << total.status().message();
  EXPECT_EQ(*total, expected_total(99, 200000, 3));
}

}  // namespace
}  // namespace lizard
