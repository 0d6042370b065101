#include "floors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "dataset/dataset_file.h"
#include "exec/cuda/cuda_driver.h"
#include "exec/executor_factory.h"
#include "exec/file_rows.h"
#include "exec/process/executor_processes.h"
#include "exec/process/process_executor.h"
#include "program/bundle.h"

namespace bench {
namespace {

using Clock = std::chrono::steady_clock;
using lizard::cuda::CUcontext;
using lizard::cuda::CudaDriver;
using lizard::cuda::CUdevice;
using lizard::cuda::CUdeviceptr;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Reads [offset, offset + n) of `fd` into dst with `threads` threads.
void read_range(int fd, uint64_t offset, uint64_t n, uint8_t* dst, int threads) {
  std::vector<std::thread> ts;
  for (int i = 0; i < threads; ++i)
    ts.emplace_back([=] {
      const uint64_t from = n * i / threads, to = n * (i + 1) / threads;
      for (uint64_t at = from; at < to;) {
        ssize_t got = ::pread(fd, dst + at, to - at, static_cast<off_t>(offset + at));
        if (got <= 0) return;
        at += static_cast<uint64_t>(got);
      }
    });
  for (auto& t : ts) t.join();
}

// The best of three: the first pass may still fault pages in.
template <typename F>
double best_gbs(uint64_t bytes, F f) {
  double best = 1e30;
  for (int rep = 0; rep < 3; ++rep) {
    const auto t0 = Clock::now();
    f();
    best = std::min(best, seconds_since(t0));
  }
  return bytes / best / 1e9;
}

// GPU 0's primary context, current on this thread, or null without a GPU.
std::shared_ptr<const CudaDriver> gpu_driver(int* gpus) {
  auto cu = CudaDriver::load();
  if (!cu.ok()) return nullptr;
  int count = 0;
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  if ((*cu)->cuDeviceGetCount(&count) != lizard::cuda::CUDA_SUCCESS || count == 0 ||
      (*cu)->cuDeviceGet(&dev, 0) != lizard::cuda::CUDA_SUCCESS ||
      (*cu)->cuDevicePrimaryCtxRetain(&ctx, dev) != lizard::cuda::CUDA_SUCCESS ||
      (*cu)->cuCtxSetCurrent(ctx) != lizard::cuda::CUDA_SUCCESS)
    return nullptr;
  *gpus = count;
  return *cu;
}

const char* kTouchYaml = R"(
sources: {cuda: kernel.cu}
dataset:
  x: {type: float32, shape: [rows]}
aggregate:
  total: {type: float32, reduce: sum}
iterate:
  - kernel: touch
)";

const char* kTouchKernel = R"(
#include "lizard_program.h"
extern "C" __global__ void touch(global_params_t params, dataset_t data, global_state_t state,
                                 agg_res_t result) {
  if (blockIdx.x == 0 && threadIdx.x == 0 && data.rows > 0) atomicAdd(result.total, data.x[0]);
}
)";

lizard::ProgramImage touch_program() {
  lizard::ProgramBundle b;
  b.config = kTouchYaml;
  b.sources["kernel.cu"] = kTouchKernel;
  auto img = lizard::make_program_image(b);
  if (!img.ok()) std::fprintf(stderr, "program: %s\n", img.status().message().c_str());
  lizard::ProgramImage p = img.ok() ? std::move(img).value() : lizard::ProgramImage{};
  p.hash = "bench-data-load-touch";
  return p;
}

// Seconds for begin_run + end_run of `d` on `e`; < 0 on an error.
double load_once(lizard::Executor* e, const lizard::ProgramImage& p, lizard::PartitionData d) {
  const auto t0 = Clock::now();
  lizard::Status st = e->begin_run(p, lizard::ParamValues{}, std::move(d));
  const double s = seconds_since(t0);
  (void)e->end_run(false);
  if (!st.ok()) std::fprintf(stderr, "  stage load failed: %s\n", st.message().c_str());
  return st.ok() ? s : -1;
}

lizard::PartitionData sent_rows(std::vector<uint8_t> rows, int64_t n) {
  lizard::PartitionData d;
  d.rows = n;
  d.fields.push_back(std::move(rows));
  return d;
}

lizard::PartitionData file_rows(const lizard::FileRows& where, int64_t n) {
  lizard::PartitionData d;
  d.rows = n;
  d.fields.resize(1);
  d.file_rows = {where};
  return d;
}

}  // namespace

nlohmann::json Floors::to_json() const {
  return {{"gpus", gpus},
          {"pinned", pinned},
          {"threads", threads},
          {"read_into_pinned_one_thread_gbs", read_one_thread_gbs},
          {"read_into_pinned_threads_gbs", read_threads_gbs},
          {"h2d_pinned_gbs", h2d_pinned_gbs},
          {"h2d_pageable_gbs", h2d_pageable_gbs}};
}

Floors measure_floors(const std::string& path, uint64_t offset, uint64_t bytes) {
  Floors f;
  f.threads = lizard::file_read_threads();
  auto cu = gpu_driver(&f.gpus);
  uint8_t* host = nullptr;
  void* pinned = nullptr;
  if (cu && cu->cuMemHostAlloc(&pinned, bytes, lizard::cuda::CU_MEMHOSTALLOC_PORTABLE) ==
                lizard::cuda::CUDA_SUCCESS) {
    host = static_cast<uint8_t*>(pinned);
    f.pinned = true;
  } else {  // no GPU: plain memory, its pages touched first as pinned ones are
    void* m = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return f;
    host = static_cast<uint8_t*>(m);
    std::memset(host, 0, bytes);
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    f.read_one_thread_gbs = best_gbs(bytes, [&] { read_range(fd, offset, bytes, host, 1); });
    f.read_threads_gbs = best_gbs(bytes, [&] { read_range(fd, offset, bytes, host, f.threads); });
    ::close(fd);
  }
  if (f.pinned) {
    CUdeviceptr dev = 0;
    if (cu->cuMemAlloc(&dev, bytes) == lizard::cuda::CUDA_SUCCESS) {
      f.h2d_pinned_gbs = best_gbs(bytes, [&] { cu->cuMemcpyHtoD(dev, host, bytes); });
      std::vector<uint8_t> pageable(bytes, 1);
      f.h2d_pageable_gbs = best_gbs(bytes, [&] { cu->cuMemcpyHtoD(dev, pageable.data(), bytes); });
      cu->cuMemFree(dev);
    }
    cu->cuMemFreeHost(pinned);
  } else {
    ::munmap(host, bytes);
  }
  return f;
}

nlohmann::json measure_stages(const std::string& path, int64_t rows, bool gpu) {
  lizard::BackendOptions o;
  o.backend = gpu ? "cuda" : "cpu";
  o.gpus = "0";
  o.cache_dir = "/tmp/lizard-bench-data-load-cache";
  const uint64_t bytes = static_cast<uint64_t>(rows) * 4;
  const double gb = bytes / 1e9;
  const lizard::ProgramImage p = touch_program();
  auto where =
      lizard::locate_file_rows(path, lizard::FileFormat::kNpy, lizard::DType::kFloat32, 1, 0, rows);
  if (!where.ok()) return {{"error", where.status().message()}};
  nlohmann::json out;
  // The worker's read as it was: one thread into fresh memory.
  const auto t0 = Clock::now();
  std::vector<uint8_t> rows_read(bytes);
  (void)lizard::read_rows(path, lizard::FileFormat::kNpy, lizard::DType::kFloat32, 1, 0, rows,
                          rows_read.data());
  out["worker_read_into_memory_gbs"] = gb / seconds_since(t0);
  {  // an executor in this process; gone before the process starts
    std::string note;
    auto made = lizard::make_executors(o, &note);
    if (made.ok() && !made->empty()) {
      lizard::Executor* e = made->front().get();
      (void)e->build(p);
      const double sent = load_once(e, p, sent_rows(rows_read, rows));
      const double read = load_once(e, p, file_rows(*where, rows));
      out["executor_copy_from_memory_gbs"] = sent > 0 ? gb / sent : 0;
      out["executor_reads_file_gbs"] = read > 0 ? gb / read : 0;
    }
  }
  lizard::ExecutorProcessSpec spec;
  spec.args = lizard::executor_host_args(o);
  spec.label = "the bench's executor process";
  spec.program = LIZARD_BIN;
  auto proc = lizard::ProcessExecutor::start(spec);
  if (proc.ok()) {
    (void)(*proc)->build(p);
    const double sent = load_once(proc->get(), p, sent_rows(rows_read, rows));
    const double read = load_once(proc->get(), p, file_rows(*where, rows));
    out["process_rows_sent_over_channel_gbs"] = sent > 0 ? gb / sent : 0;
    out["process_reads_file_gbs"] = read > 0 ? gb / read : 0;
  } else {
    out["process_error"] = proc.status().message();
  }
  return out;
}

}  // namespace bench
