// ProcessExecutor over a real executor host (the lizard binary) with the
// CPU backend: the same results as the executor in this process, and a
// process that crashes, exits or is killed fails the call with how it
// ended, after which the executor serves runs again.
#include "exec/process/process_executor.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <numeric>
#include <thread>

#include "exec/cpu/cpu_executor.h"
#include "exec/process/executor_processes.h"
#include "exec/process/executor_protocol.h"
#include "program/bundle.h"
#include "program/testing/program_images.h"
#include "tests/allocations.h"

namespace lizard {
namespace {

using Clock = std::chrono::steady_clock;

std::string cache_dir() {
  return ::testing::TempDir() + "lizard-process-executor-test";
}

ExecutorProcessSpec cpu_spec() {
  return {{"executor-host", "--backend", "cpu", "--cpu-threads", "2", "--cache-dir", cache_dir()},
          "the CPU backend",
          LIZARD_BIN};
}

std::unique_ptr<ProcessExecutor> start_cpu() {
  auto e = ProcessExecutor::start(cpu_spec());
  EXPECT_TRUE(e.ok()) << e.status().message();
  return e.ok() ? std::move(e).value() : nullptr;
}

// The same backend in this process, for comparisons.
std::unique_ptr<Executor> local_cpu() {
  CpuExecutorOptions o;
  o.threads = 2;
  o.cache_dir = cache_dir();
  return make_cpu_executor(o);
}

ProgramImage faults() {
  auto b = read_program_dir(LIZARD_SOURCE_DIR "/tests/e2e/programs/faults");
  EXPECT_TRUE(b.ok()) << b.status().message();
  auto img = make_program_image(*b);
  EXPECT_TRUE(img.ok()) << img.status().message();
  return img.ok() ? img.value() : ProgramImage{};
}

const char* kScaleYaml = R"(
sources: {cuda: kernel.cu}
params: {scale: {type: float32}}
dataset:
  x: {type: float32, shape: [rows]}
  y: {type: float32, shape: [rows], input: false, output: true}
state:
  offset: {type: float32}
aggregate:
  total: {type: float64, reduce: sum}
  biggest: {type: int32, reduce: max}
iterate:
  - {kernel: scale, block: 64}
)";

const char* kScaleKernel = R"(
extern "C" __global__ void scale(global_params_t params, dataset_t data, global_state_t state,
                                 agg_res_t result) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i >= data.rows) return;
  data.y[i] += data.x[i] * params.scale + state.offset;
  atomicAdd(result.total, (double)data.y[i]);
  atomicMax(result.biggest, (int)data.x[i]);
}
)";

std::vector<uint8_t> floats(size_t n, float first = 0) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), first);
  std::vector<uint8_t> out(n * sizeof(float));
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

struct Outcome {
  Status status;
  std::vector<std::vector<uint8_t>> aggregates;  // one per iteration, then per slice
  std::vector<std::vector<uint8_t>> outputs;
};

// Three iterations with a changing state, then two slices of a fourth.
// With `shared`, the rows are given as a slice of a larger buffer that
// another owner keeps (PartitionData::shared) rather than as a field.
Outcome run_scale(Executor* e, const ProgramImage& p, bool shared = false) {
  Outcome out;
  auto params = bind_params(p.manifest, {{"scale", 1.5}});
  PartitionData d;
  d.first_row = 100;
  d.rows = 1000;
  d.fields = {floats(1000), {}};
  if (shared) {
    auto owner = std::make_shared<std::vector<uint8_t>>(floats(1200, 5000));  // other rows around
    std::memcpy(owner->data() + 200 * sizeof(float), d.fields[0].data(), d.fields[0].size());
    d.shared.resize(2);
    d.shared[0] = {owner, 200 * sizeof(float), d.fields[0].size(), ""};
    d.fields[0].clear();
  }
  out.status = e->begin_run(p, *params, std::move(d));
  if (!out.status.ok()) return out;
  auto state = make_section(p.manifest.state, p.manifest, *params);
  for (int it = 0; it < 5 && out.status.ok(); ++it) {
    const float offset = static_cast<float>(it);
    std::memcpy(state->bytes.data(), &offset, sizeof offset);
    auto agg = make_section(p.manifest.aggregate, p.manifest, *params);
    IterationStats stats;
    out.status = it < 3 ? e->iterate(*state, it, &*agg, &stats)
                        : e->iterate_rows(*state, it, &*agg, &stats, it == 3 ? 0 : 400, 400);
    out.aggregates.push_back(agg->bytes);
  }
  auto fields = e->end_run(true);
  if (out.status.ok()) out.status = fields.status();
  if (fields.ok()) out.outputs = std::move(fields).value();
  return out;
}

TEST(ProcessExecutor, GivesTheResultsOfTheExecutorInThisProcess) {
  ProgramImage p = testing::program_image(kScaleYaml, kScaleKernel);
  auto remote = start_cpu();
  ASSERT_TRUE(remote);
  EXPECT_EQ(remote->info().kind, "cpu");
  EXPECT_EQ(remote->info().sm_count, 2);
  ASSERT_TRUE(remote->build(p).ok());
  auto local = local_cpu();
  Outcome a = run_scale(remote.get(), p), b = run_scale(local.get(), p);
  ASSERT_TRUE(a.status.ok()) << a.status.message();
  ASSERT_TRUE(b.status.ok()) << b.status.message();
  EXPECT_EQ(a.aggregates, b.aggregates);
  ASSERT_EQ(a.outputs.size(), 2u);
  EXPECT_TRUE(a.outputs[0].empty());
  EXPECT_EQ(a.outputs[1].size(), 1000 * sizeof(float));
  EXPECT_EQ(a.outputs, b.outputs);
  // A second run sends the program's hash alone; it gives the same again,
  // also with its rows sent from where another owner keeps them.
  Outcome again = run_scale(remote.get(), p);
  ASSERT_TRUE(again.status.ok()) << again.status.message();
  EXPECT_EQ(again.aggregates, a.aggregates);
  Outcome shared = run_scale(remote.get(), p, /*shared=*/true);
  ASSERT_TRUE(shared.status.ok()) << shared.status.message();
  EXPECT_EQ(shared.aggregates, a.aggregates);
  EXPECT_EQ(shared.outputs, a.outputs);
  remote->refresh_free_memory();
  EXPECT_GT(remote->info().free_memory, 0u);
}

// The file of the mapping `p` lies in, as /proc/self/maps names it, with its
// inode ("" when it is in none).
std::string mapped_file(const void* p) {
  std::ifstream maps("/proc/self/maps");
  const auto at = reinterpret_cast<uintptr_t>(p);
  for (std::string line; std::getline(maps, line);) {
    unsigned long long lo = 0, hi = 0, inode = 0;
    char name[256] = "";
    if (std::sscanf(line.c_str(), "%llx-%llx %*s %*s %*s %llu %255s", &lo, &hi, &inode, name) < 3)
      continue;
    if (at >= lo && at < hi) return std::string(name) + " " + std::to_string(inode);
  }
  return "";
}

// One run of the scale kernel over `rows` rows; its outputs where end_run
// left them.
Result<OutputFieldBytes> scale_outputs(Executor* e, const ProgramImage& p, size_t rows,
                                       double scale) {
  auto params = bind_params(p.manifest, {{"scale", scale}});
  PartitionData d;
  d.rows = static_cast<int64_t>(rows);
  d.fields = {floats(rows), {}};
  LIZARD_RETURN_IF_ERROR(e->begin_run(p, *params, std::move(d)));
  auto state = make_section(p.manifest.state, p.manifest, *params);
  auto agg = make_section(p.manifest.aggregate, p.manifest, *params);
  IterationStats stats;
  LIZARD_RETURN_IF_ERROR(e->iterate(*state, 0, &*agg, &stats));
  return e->end_run_in_place(true);
}

// Large outputs come back in the memory file the process wrote them to,
// mapped where they are rather than copied through the channel, with the
// bytes of the executor in this process; small ones come in the reply.
TEST(ProcessExecutor, LargeOutputsComeBackInTheMemoryFileTheProcessWroteThemTo) {
  ProgramImage p = testing::program_image(kScaleYaml, kScaleKernel);
  auto remote = start_cpu();
  ASSERT_TRUE(remote);
  auto local = local_cpu();
  for (size_t rows : {size_t{1000}, size_t{3} << 20}) {
    std::vector<OutputFieldBytes> outs;
    for (Executor* e :
         {static_cast<Executor*>(remote.get()), static_cast<Executor*>(local.get())}) {
      auto got = scale_outputs(e, p, rows, 2.0);
      ASSERT_TRUE(got.ok()) << got.status().message();
      outs.push_back(std::move(got).value());
    }
    ASSERT_EQ(outs[0].fields.size(), 2u);
    EXPECT_TRUE(outs[0].fields[0].empty());
    ASSERT_EQ(outs[0].fields[1].size(), rows * sizeof(float));
    EXPECT_TRUE(outs[0].fields[1] == outs[1].fields[1]) << rows << " rows";
    EXPECT_EQ(mapped_file(outs[0].fields[1].data()).rfind("/memfd:lizard-lent", 0) == 0,
              rows * sizeof(float) >= kSealedOutputBytes)
        << rows << " rows: " << mapped_file(outs[0].fields[1].data());
  }
}

// A lent memory file is filled again only once the worker has let the
// outputs in it go: outputs still held (still on their way to the server)
// keep their bytes while later runs end, and those go in other memory.
TEST(ProcessExecutor, OutputsStillHeldKeepTheirBytesWhileLaterRunsEnd) {
  ProgramImage p = testing::program_image(kScaleYaml, kScaleKernel);
  auto remote = start_cpu();
  ASSERT_TRUE(remote);
  auto local = local_cpu();
  const size_t rows = size_t{3} << 20;
  auto expected = [&](double scale) {
    auto r = scale_outputs(local.get(), p, rows, scale);
    return r.ok() ? std::string(r->fields[1]) : std::string();
  };
  const std::string twice = expected(2.0), thrice = expected(3.0), four = expected(4.0);
  ASSERT_TRUE(twice != thrice && thrice != four && !twice.empty());
  auto first = scale_outputs(remote.get(), p, rows, 2.0);
  ASSERT_TRUE(first.ok()) << first.status().message();
  const std::string first_file = mapped_file(first->fields[1].data());
  EXPECT_EQ(first_file.rfind("/memfd:lizard-lent", 0), 0u) << first_file;
  auto second = scale_outputs(remote.get(), p, rows, 3.0);  // the file is lent: a sealed one
  ASSERT_TRUE(second.ok()) << second.status().message();
  EXPECT_TRUE(second->fields[1] == thrice);
  EXPECT_EQ(mapped_file(second->fields[1].data()).rfind("/memfd:lizard-sealed", 0), 0u);
  EXPECT_TRUE(first->fields[1] == twice);
  *first = OutputFieldBytes{};  // sent on: its file goes back with the next end_run
  auto third = scale_outputs(remote.get(), p, rows, 4.0);
  ASSERT_TRUE(third.ok()) << third.status().message();
  EXPECT_TRUE(third->fields[1] == four);
  EXPECT_EQ(mapped_file(third->fields[1].data()), first_file) << "filled again";
  EXPECT_TRUE(second->fields[1] == thrice);
}

// The iteration crosses to the executor process: its kernels read it in
// data.iteration, in whole iterations and in slices.
TEST(ProcessExecutor, ItsKernelsSeeTheIterationTheWorkerRuns) {
  ProgramImage p = testing::program_image(R"(
sources: {cuda: kernel.cu}
dataset: {x: {type: float32, shape: [rows]}}
aggregate: {total: {type: int64, reduce: sum}}
iterate: [count]
)",
                                          R"(
#include "lizard_program.h"
extern "C" __global__ void count(global_params_t params, dataset_t data, global_state_t state,
                                 agg_res_t result) {
  for (const long long row : lizard::rows(data))
    atomicAdd((unsigned long long*)result.total, (unsigned long long)data.iteration);
}
)");
  auto e = start_cpu();
  ASSERT_TRUE(e);
  auto params = bind_params(p.manifest, nlohmann::json::object());
  PartitionData d;
  d.rows = 10;
  d.fields = {floats(10)};
  Status begun = e->begin_run(p, *params, std::move(d));
  ASSERT_TRUE(begun.ok()) << begun.message();
  auto state = make_section(p.manifest.state, p.manifest, *params);
  auto agg = make_section(p.manifest.aggregate, p.manifest, *params);
  IterationStats stats;
  auto total = [&] {
    int64_t v = 0;
    std::memcpy(&v, agg->bytes.data(), sizeof v);
    return v;
  };
  for (int64_t it = 0; it < 3; ++it) {
    ASSERT_TRUE(e->iterate(*state, it, &*agg, &stats).ok());
    EXPECT_EQ(total(), 10 * it);
  }
  ASSERT_TRUE(e->iterate_rows(*state, 5, &*agg, &stats, 4, 6).ok());
  EXPECT_EQ(total(), 6 * 5);
  EXPECT_TRUE(e->end_run(false).ok());
}

// An iteration's request and reply, once their buffers have grown,
// allocate nothing in the worker.
TEST(ProcessExecutor, AnIterationAllocatesNothingOnceItsBuffersHaveGrown) {
  ProgramImage p = testing::program_image(kScaleYaml, kScaleKernel);
  auto e = start_cpu();
  ASSERT_TRUE(e);
  ASSERT_TRUE(e->build(p).ok());
  auto params = bind_params(p.manifest, {{"scale", 1.5}});
  PartitionData d;
  d.rows = 1000;
  d.fields = {floats(1000), {}};
  ASSERT_TRUE(e->begin_run(p, *params, std::move(d)).ok());
  auto state = make_section(p.manifest.state, p.manifest, *params);
  auto agg = make_section(p.manifest.aggregate, p.manifest, *params);
  IterationStats stats;
  for (int it = 0; it < 3; ++it) ASSERT_TRUE(e->iterate(*state, it, &*agg, &stats).ok());
  int ok = 0;
  const uint64_t before = testing::allocations();
  for (int it = 0; it < 30; ++it) ok += e->iterate(*state, it, &*agg, &stats).ok();
  const uint64_t allocated = testing::allocations() - before;
  EXPECT_EQ(ok, 30);
  EXPECT_EQ(allocated, 0u);
  EXPECT_TRUE(e->end_run(false).ok());
}

TEST(ProcessExecutor, ACompileErrorComesBackAsTheExecutorSaysIt) {
  auto e = start_cpu();
  ASSERT_TRUE(e);
  Status st = e->build(testing::program_image(kScaleYaml, "this is not C++"));
  EXPECT_EQ(st.code(), Code::kCompileError) << st.message();
  EXPECT_TRUE(e->process_running());
}

// Runs one iteration of the faults program in the given mode; `loaded`, when
// given, is called once the run has begun and before it iterates.
Status iterate_faults(ProcessExecutor* e, const ProgramImage& p, int mode,
                      const std::function<void()>& loaded = {}) {
  auto params = bind_params(p.manifest, {{"mode", mode}});
  PartitionData d;
  d.rows = 256;
  d.fields = {floats(256)};
  LIZARD_RETURN_IF_ERROR(e->begin_run(p, *params, std::move(d)));
  if (loaded) loaded();
  auto state = make_section(p.manifest.state, p.manifest, *params);
  auto agg = make_section(p.manifest.aggregate, p.manifest, *params);
  IterationStats stats;
  Status st = e->iterate(*state, 0, &*agg, &stats);
  (void)e->end_run(false);
  return st;
}

TEST(ProcessExecutor, AProcessThatCrashesFailsTheCallWithItsSignalAndIsStartedAgain) {
  ProgramImage p = faults();
  auto e = start_cpu();
  ASSERT_TRUE(e);
  const pid_t first = e->pid();
  Status st = iterate_faults(e.get(), p, 2);
  EXPECT_EQ(st.code(), Code::kRuntimeError);
  EXPECT_EQ(st.message(),
            "the executor process for the CPU backend ended during iterate: killed by signal 11 "
            "(SIGSEGV, a segmentation fault)");
  EXPECT_FALSE(e->process_running());
  EXPECT_TRUE(iterate_faults(e.get(), p, 0).ok());  // begin_run starts a new process
  EXPECT_NE(e->pid(), first);
}

TEST(ProcessExecutor, AKernelThatCallsExitFailsTheCallWithTheExitStatus) {
  ProgramImage p = faults();
  auto e = start_cpu();
  ASSERT_TRUE(e);
  Status st = iterate_faults(e.get(), p, 3);
  EXPECT_NE(st.message().find("ended during iterate: exited with status 0"), std::string::npos)
      << st.message();
  ASSERT_TRUE(e->restart_if_ended().ok());
  EXPECT_TRUE(e->process_running());
  EXPECT_TRUE(iterate_faults(e.get(), p, 0).ok());
}

TEST(ProcessExecutor, AKillFromAnotherThreadEndsACallThatNeverReturns) {
  ProgramImage p = faults();
  auto e = start_cpu();
  ASSERT_TRUE(e);
  // The kill comes once the run is loaded (a loaded machine may take longer
  // than any fixed delay to start the run), while the kernel never returns.
  std::thread killer;
  auto t0 = Clock::now();
  Status st = iterate_faults(e.get(), p, 1, [&] {
    t0 = Clock::now();
    killer = std::thread([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      e->kill_process();
    });
  });
  if (killer.joinable()) killer.join();
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(10));
  EXPECT_NE(st.message().find("ended during iterate: killed by signal 9 (SIGKILL)"),
            std::string::npos)
      << st.message();
  EXPECT_TRUE(iterate_faults(e.get(), p, 0).ok());
}

TEST(ProcessExecutor, AProcessOutlivesTheThreadThatStartedIt) {
  std::unique_ptr<ProcessExecutor> e;
  std::thread([&] { e = start_cpu(); }).join();
  ASSERT_TRUE(e);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_TRUE(e->process_running());
  EXPECT_TRUE(iterate_faults(e.get(), faults(), 0).ok());
}

TEST(ProcessExecutor, StartExecutorProcessesProbesTheBackend) {
  BackendOptions o;
  o.backend = "cpu";
  o.cpu_threads = 1;
  o.cache_dir = cache_dir();
  std::string note;
  auto made = start_executor_processes(o, &note, LIZARD_BIN);
  ASSERT_TRUE(made.ok()) << made.status().message();
  ASSERT_EQ(made->size(), 1u);
  EXPECT_EQ((*made)[0]->info().kind, "cpu");
  EXPECT_EQ((*made)[0]->info().sm_count, 1);
  o.backend = "cuda";
  o.gpus = "none";
  EXPECT_EQ(start_executor_processes(o, &note, LIZARD_BIN).status().code(), Code::kInvalidArgument);
}

// The rate at which begin_run moves a partition into the process, beside
// the same begin_run in this process (LIZARD_LOAD_TEST_MB, default 64).
TEST(ProcessExecutor, LoadsLargePartitions) {
  const char* env = std::getenv("LIZARD_LOAD_TEST_MB");
  const size_t mb = env ? std::strtoul(env, nullptr, 10) : 64;
  const size_t rows = mb * (1 << 20) / sizeof(float);
  ProgramImage p = faults();
  auto params = bind_params(p.manifest, {{"mode", 0}});
  auto e = start_cpu();
  ASSERT_TRUE(e);
  auto local = local_cpu();
  double ms[2];
  for (int k = 0; k < 2; ++k) {
    Executor* x = k == 0 ? static_cast<Executor*>(e.get()) : local.get();
    ASSERT_TRUE(x->build(p).ok());
    PartitionData d;
    d.rows = static_cast<int64_t>(rows);
    d.fields = {std::vector<uint8_t>(rows * sizeof(float), 0)};
    const auto t0 = Clock::now();
    ASSERT_TRUE(x->begin_run(p, *params, std::move(d)).ok());
    ms[k] = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    (void)x->end_run(false);
  }
  std::printf("begin_run of %zu MB: %.1f ms in a process (%.0f MB/s), %.1f ms in this one\n", mb,
              ms[0], mb / (ms[0] / 1000), ms[1]);
}

}  // namespace
}  // namespace lizard
