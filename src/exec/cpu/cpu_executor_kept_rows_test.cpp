// The CPU executor's kept rows and an ended run's memory: rows kept between
// runs are used in place, and what a run held goes once its outputs are out.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "exec/cpu/cpu_executor.h"
#include "program/layout.h"
#include "program/testing/program_images.h"

namespace lizard {
namespace {

std::vector<uint8_t> ones(int64_t rows) {
  const std::vector<float> v(static_cast<size_t>(rows), 1.0f);
  std::vector<uint8_t> out(v.size() * sizeof(float));
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

// Kept rows are used in place, copy-on-write: a run that names its rows by
// key gets them as first sent, whatever the last run's kernels wrote into
// their input rows.
const char* kBumpYaml = R"(
sources: {cuda: kernel.cu}
dataset: {x: {type: float32, shape: [rows]}}
aggregate: {total: {type: float64, reduce: sum}}
iterate: [{kernel: bump, block: 64}]
)";

const char* kBumpKernel =
    "extern \"C\" __global__ void bump(global_params_t, dataset_t data, global_state_t,\n"
    "                                  agg_res_t result) {\n"
    "  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;\n"
    "  if (i >= data.rows) return;\n"
    "  data.x[i] += 1.0f;\n"
    "  atomicAdd(result.total, (double)data.x[i]);\n"
    "}\n";

Result<double> bump_once(Executor* e, const ProgramImage& p, int64_t rows, bool send) {
  LIZARD_ASSIGN_OR_RETURN(ParamValues params, bind_params(p.manifest, nlohmann::json::object()));
  PartitionData d;
  d.rows = rows;
  d.fields.resize(1);
  d.shared.resize(1);
  d.shared[0] = {nullptr, 0, static_cast<size_t>(rows) * 4, "u1@0"};
  if (send) d.fields[0] = ones(rows);
  LIZARD_RETURN_IF_ERROR(e->begin_run(p, params, std::move(d)));
  LIZARD_ASSIGN_OR_RETURN(SectionBuffer state, make_section(p.manifest.state, p.manifest, params));
  LIZARD_ASSIGN_OR_RETURN(SectionBuffer agg,
                          make_section(p.manifest.aggregate, p.manifest, params));
  LIZARD_RETURN_IF_ERROR(e->iterate(state, 0, &agg, nullptr));
  LIZARD_RETURN_IF_ERROR(e->end_run(false).status());
  double total = 0;
  std::memcpy(&total, agg.bytes.data(), sizeof total);
  return total;
}

// A CPU executor that keeps up to 64 MiB of rows between runs.
std::unique_ptr<Executor> keeping_executor() {
  CpuExecutorOptions o;
  o.threads = 2;
  o.cache_dir = ::testing::TempDir() + "lizard-cpu-executor-test";
  o.kept_rows_bytes = 64 << 20;
  return make_cpu_executor(o);
}

TEST(CpuExecutor, KeptRowsAreUsedInPlaceAndAKernelsWritesStayInItsRun) {
  auto e = keeping_executor();
  const ProgramImage p = testing::program_image(kBumpYaml, kBumpKernel);
  const int64_t rows = 1 << 16;
  for (bool send : {true, false, false}) {
    auto total = bump_once(e.get(), p, rows, send);
    ASSERT_TRUE(total.ok()) << total.status().message();
    EXPECT_EQ(*total, 2.0 * rows) << (send ? "sent" : "named by key");
    EXPECT_EQ(e->kept_rows(), std::vector<std::string>{"u1@0"});
  }
}

// Mappings of kept rows in this process (KeptHostRows' memory files).
int kept_row_mappings() {
  std::ifstream maps("/proc/self/maps");
  int n = 0;
  for (std::string line; std::getline(maps, line);)
    n += line.find("memfd:lizard-kept-rows") != std::string::npos;
  return n;
}

// A run's end gives its outputs back before its memory is let go (on a
// large partition, unmapping it takes longer than the outputs' copy), and
// nothing of it outlives free_ended_run or the next begin_run.
TEST(CpuExecutor, AnEndedRunsMemoryGoesOnceItsOutputsArePassedOn) {
  auto e = keeping_executor();
  const ProgramImage p = testing::program_image(kBumpYaml, kBumpKernel);
  const int64_t rows = 1 << 16;
  ASSERT_TRUE(bump_once(e.get(), p, rows, true).ok());
  e->free_ended_run();
  const int kept_alone = kept_row_mappings();
  ASSERT_TRUE(bump_once(e.get(), p, rows, false).ok());  // in place: a view of its own
  EXPECT_EQ(kept_row_mappings(), kept_alone + 1) << "the ended run's view, until it is freed";
  e->free_ended_run();
  EXPECT_EQ(kept_row_mappings(), kept_alone);
  ASSERT_TRUE(bump_once(e.get(), p, rows, false).ok());
  auto again = bump_once(e.get(), p, rows, false);  // its begin_run frees the last one's
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(*again, 2.0 * rows);
  EXPECT_EQ(kept_row_mappings(), kept_alone + 1);
}

}  // namespace
}  // namespace lizard
