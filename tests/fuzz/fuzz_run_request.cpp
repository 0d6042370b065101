// libFuzzer target: the run-request parser (the body of POST /runtime/<hash>)
// against one fixed program.  The input is the JSON body; bodies that are not
// JSON are skipped.  `path` keys are removed from dataset sources first, so
// only inline `values` reach the parser and no input can make it open files.
//
//   build-fuzz/tests/fuzz/fuzz_run_request -dict=tests/fuzz/run_request.dict CORPUS
//   tests/fuzz/corpus/run_request
#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

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

void drop_paths(json& body) {
  if (!body.is_object()) return;
  auto ds = body.find("dataset");
  if (ds == body.end() || !ds->is_object()) return;
  for (auto& source : *ds)
    if (source.is_object()) source.erase("path");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  json body = json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) return 0;
  drop_paths(body);
  lizard::Result<lizard::RunRequest> r = lizard::parse_run_request(program(), body);
  if (!r.ok()) {
    if (r.status().message().empty()) {
      std::fprintf(stderr, "parse_run_request failed without a message\n");
      std::abort();
    }
    return 0;
  }
  // An accepted request is consistent: one source per dataset field and a
  // positive row count and iteration cap.
  if (r->dataset.size() != program().manifest.dataset.size() || r->rows < 1 ||
      r->max_iterations < 1) {
    std::fprintf(stderr, "parse_run_request accepted an inconsistent request\n");
    std::abort();
  }
  return 0;
}
