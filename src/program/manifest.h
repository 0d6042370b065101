// Manifest: the parsed and validated config.yaml of a user program, the single
// source of truth for its data layout (see docs/program-format.md).
//
//   Result<Manifest> m = parse_manifest(yaml_text, "config.yaml");
//   for (const FieldSpec& f : m->dataset) ...
//
// Parsing is a pure function: no files are read and nothing is compiled.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/dtype.h"
#include "common/status.h"
#include "program/expr.h"

namespace lizard {

enum class Reducer { kNone, kSum, kMin, kMax, kProd, kCustom };
const char* reducer_name(Reducer r);

struct ParamSpec {
  std::string name;
  DType type = DType::kInt32;
  std::optional<double> default_value;  // numeric default, converted to `type`
  // The kernels see the run's value as a compile-time constant: executors
  // compile the program for each run's value (see codegen.h).
  bool specialize = false;
};

struct FieldSpec {
  std::string name;
  DType type = DType::kFloat32;
  std::vector<Expr> shape;          // empty: a scalar; dataset fields start with `rows`
  bool input = true;                // dataset only
  bool output = false;              // dataset only
  Reducer reduce = Reducer::kNone;  // aggregate only
  bool is_scalar() const { return shape.empty(); }
};

struct KernelStep {
  std::string kernel;
  std::optional<Expr> threads;  // total threads (default: rows)
  std::optional<Expr> blocks;   // grid-stride launches: number of blocks
  std::optional<Expr> block;    // threads per block
  std::optional<Expr> shared_bytes;
};

struct Manifest {
  std::string name;
  std::string version;
  std::string cuda_source;           // e.g. "kernel.cu"
  std::string host_source;           // empty when there is no host.cpp
  std::vector<std::string> headers;  // extra headers shipped with the kernel
  std::vector<ParamSpec> params;
  std::vector<FieldSpec> dataset;
  std::vector<FieldSpec> state;
  std::vector<FieldSpec> aggregate;
  std::vector<KernelStep> iterate;
  std::vector<KernelStep> generate;  // generator kernels: fill dataset fields once per run

  const ParamSpec* find_param(const std::string& name) const;
  const FieldSpec* find_dataset(const std::string& name) const;
  const KernelStep* find_generator(const std::string& kernel) const;
  bool has_custom_reducer() const;
  bool has_specialised_params() const;
  // Every source file the bundle must carry: cuda, host, headers.
  std::vector<std::string> source_files() const;
};

// Bounds on a manifest's text: its size, how deeply its mappings and lists
// nest, and how many nodes it has (aliases counted each time they are used).
constexpr size_t kMaxManifestBytes = size_t{1} << 20;
constexpr int kMaxManifestDepth = 64;
constexpr size_t kMaxManifestNodes = 100000;

// Parses and validates a manifest.  `file` names it in error messages, which
// take the form "<file>: <key.path>: <what is wrong>".
Result<Manifest> parse_manifest(const std::string& yaml_text, const std::string& file);

}  // namespace lizard
