// Rows kept without a run (Executor::keep_file_rows), as staging loads them:
// an executor process reads a file's rows under their key, a run that names
// the key alone computes over them, and forget_kept_rows lets them go.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <numeric>

#include "exec/file_rows.h"
#include "exec/process/process_executor.h"
#include "program/testing/program_images.h"

namespace lizard {
namespace {

constexpr int64_t kRows = 1 << 16;

// A raw file of float32 rows 0, 1, 2, ...; where its rows lie.
FileRows write_rows(const std::string& path) {
  std::vector<float> v(kRows);
  std::iota(v.begin(), v.end(), 0.0f);
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
  auto rows = locate_file_rows(path, FileFormat::kRaw, DType::kFloat32, 1, 0, kRows);
  EXPECT_TRUE(rows.ok()) << rows.status().message();
  return rows.ok() ? *rows : FileRows{};
}

std::unique_ptr<ProcessExecutor> start_cpu(int kept_mb) {
  auto e = ProcessExecutor::start({{"executor-host", "--backend", "cpu", "--cpu-threads", "2",
                                    "--cache-dir", ::testing::TempDir() + "lizard-staged-rows-test",
                                    "--kept-rows-mb", std::to_string(kept_mb)},
                                   "the CPU backend",
                                   LIZARD_BIN});
  EXPECT_TRUE(e.ok()) << e.status().message();
  return e.ok() ? std::move(e).value() : nullptr;
}

// One iteration over the rows kept under `key`, named by key alone.
Result<double> sum_kept(Executor* e, const std::string& key) {
  ProgramImage p = testing::row_sum_image();
  PartitionData d;
  d.rows = kRows;
  d.fields.resize(1);
  d.shared.resize(1);
  d.shared[0] = {nullptr, 0, kRows * sizeof(float), key};
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

TEST(StagedRows, AProcessKeepsAFilesRowsAndARunUsesThemByKey) {
  const FileRows rows = write_rows(::testing::TempDir() + "staged-rows.raw");
  auto e = start_cpu(16);
  ASSERT_TRUE(e);
  ASSERT_TRUE(e->keep_file_rows("file:k", rows).ok());
  EXPECT_EQ(e->kept_rows(), std::vector<std::string>{"file:k"});
  ASSERT_TRUE(e->keep_file_rows("file:k", rows).ok());  // kept already: nothing read
  auto total = sum_kept(e.get(), "file:k");
  ASSERT_TRUE(total.ok()) << total.status().message();
  EXPECT_EQ(*total, kRows * (kRows - 1.0) / 2);
  e->forget_kept_rows({"file:k", "never-kept"});
  EXPECT_TRUE(e->kept_rows().empty());
  EXPECT_FALSE(sum_kept(e.get(), "file:k").ok());  // named, but no longer kept
}

TEST(StagedRows, RowsBeyondTheBudgetOrFromAChangedFileAreRefused) {
  const std::string path = ::testing::TempDir() + "staged-rows-budget.raw";
  FileRows rows = write_rows(path);
  auto none = start_cpu(0);
  ASSERT_TRUE(none);
  Status st = none->keep_file_rows("file:k", rows);
  EXPECT_EQ(st.code(), Code::kTooLarge) << st.message();
  EXPECT_NE(st.message().find("--kept-rows-mb"), std::string::npos) << st.message();
  auto e = start_cpu(16);
  ASSERT_TRUE(e);
  rows.identity.mtime_ns += 1;  // as if the file changed since it was located
  EXPECT_FALSE(e->keep_file_rows("file:k", rows).ok());
  EXPECT_TRUE(e->kept_rows().empty());
}

}  // namespace
}  // namespace lizard
