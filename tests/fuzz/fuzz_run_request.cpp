// libFuzzer target: the run-request parser (the body of POST /runtime/<hash>)
// against one fixed program, from the body's text as the server takes it:
// parse_json_bounded (the nesting limit), then parse_run_request with the
// server's limits (a small --max-state-bytes, and data roots that are one
// empty directory, so no `path` can reach a file).
//
//   build-fuzz/tests/fuzz/fuzz_run_request -dict=tests/fuzz/run_request.dict CORPUS
//   tests/fuzz/corpus/run_request
#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <unistd.h>

#include "common/json_limits.h"
#include "program/bundle.h"
#include "server/run_request.h"

namespace {

using nlohmann::json;

const char* kConfig = R"(
sources: {cuda: kernel.cu}
params:
  dims: {type: int32}
  k: {type: int32, default: 2}
  max_iterations: {type: int32, default: 7}
  rate: {type: float32, default: 0.5}
dataset:
  x: {type: float32, shape: [rows, dims]}
  y: {type: int64, shape: [rows]}
  out: {type: float32, shape: [rows], input: false, output: true}
state:
  w: {type: float32, shape: [dims]}
  c: {type: int32, shape: [k, "dims + 1"]}
  t: {type: float64}
aggregate:
  g: {type: float32, shape: [dims], reduce: sum}
  n: {type: int64, shape: [k], reduce: sum}
generate: [fill]
iterate: [step]
)";

const lizard::ProgramImage& program() {
  static const lizard::ProgramImage image = [] {
    lizard::ProgramBundle b;
    b.config = kConfig;
    b.sources["kernel.cu"] = "";
    lizard::Result<lizard::ProgramImage> img = lizard::make_program_image(b);
    if (!img.ok()) {
      std::fprintf(stderr, "fuzz_run_request: bad built-in manifest: %s\n",
                   img.status().message().c_str());
      std::abort();
    }
    return std::move(img).value();
  }();
  return image;
}

constexpr uint64_t kMaxStateBytes = uint64_t{1} << 20;

// An empty directory: every dataset path is outside it or names nothing.
const lizard::DataRoots& empty_roots() {
  static const lizard::DataRoots roots = [] {
    char dir[] = "/tmp/lizard-fuzz-roots-XXXXXX";
    if (mkdtemp(dir) == nullptr) std::abort();
    auto r = lizard::DataRoots::make({dir}, "server");
    if (!r.ok()) std::abort();
    return std::move(r).value();
  }();
  return roots;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  lizard::Result<json> body =
      lizard::parse_json_bounded(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!body.ok()) return 0;
  lizard::RunRequestLimits limits;
  limits.max_state_bytes = kMaxStateBytes;
  limits.data_roots = &empty_roots();
  lizard::Result<lizard::RunRequest> r =
      lizard::parse_run_request(program(), *body, nullptr, limits);
  if (!r.ok()) {
    if (r.status().message().empty()) {
      std::fprintf(stderr, "parse_run_request failed without a message\n");
      std::abort();
    }
    return 0;
  }
  // An accepted request is consistent: one source per dataset field and a
  // positive row count and iteration cap.
  for (const auto& source : r->dataset)
    if (source.source && source.source->delivery() == lizard::RowDelivery::kFile) {
      std::fprintf(stderr, "parse_run_request accepted a path outside the data roots\n");
      std::abort();
    }
  if (r->state && r->state->bytes.size() > kMaxStateBytes) {
    std::fprintf(stderr, "parse_run_request accepted a state over the limit\n");
    std::abort();
  }
  if (r->dataset.size() != program().manifest.dataset.size() || r->rows < 1 ||
      r->max_iterations < 1) {
    std::fprintf(stderr, "parse_run_request accepted an inconsistent request\n");
    std::abort();
  }
  return 0;
}
