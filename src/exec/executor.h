// Executor: one device that runs a program's kernels on its share of a run's
// rows: a GPU (CudaExecutor) or the host's cores (CpuExecutor).  A worker
// owns one executor per GPU, or one CPU executor.
//
// Life of a run on an executor:
//   build(program)                       once per program (cached by hash),
//                                        with specialised params at their defaults
//   begin_run(program, params, data)     build for the run's specialised values
//                                        (cached), allocate, upload the partition
//   iterate(state, it, &aggregate) ...   once per iteration (or iterate_rows
//                                        over slices of the partition)
//   end_run(want_outputs)                copy output fields back, free
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "exec/file_rows.h"
#include "program/layout.h"
#include "program/manifest.h"
#include "program/program_image.h"
#include "protocol/executor_info.h"
#include "protocol/run_spec.h"

namespace lizard {

// A run's output fields as an executor gives them back: fields[k] is dataset
// field k's bytes (empty where it is no output), valid while `owner` lives.
struct OutputFieldBytes {
  std::vector<std::string_view> fields;
  std::shared_ptr<const void> owner;

  // Views of `fields`, which the result owns.
  static OutputFieldBytes own(std::vector<std::vector<uint8_t>> fields);
};

// One executor's part of a run: its spec (protocol/run_spec.h: the run's
// values its kernels see, its rows' place, the generators to run once after
// loading and before the first iteration) and its rows.  `fields` follows
// manifest.dataset order: input fields hold rows * row_width elements; other
// fields, and input fields left to the generators, are empty and the
// executor allocates them zeroed.
struct PartitionData : PartitionSpec {
  std::vector<std::vector<uint8_t>> fields;
  // Rows another owner keeps (the worker's upload cache), for an executor
  // process to be sent from where they lie rather than from a copy: where
  // shared[k].owner is set, fields[k] is empty.  Only ProcessExecutor takes
  // them; the executors in this process get every field in `fields`.
  //
  // `key` names immutable rows (an upload's): an executor may keep them
  // under it for later runs (kept_rows()), and a later run may then name
  // them by key alone: no owner, `fields[k]` empty, `size` their bytes.
  struct SharedRows {
    std::shared_ptr<const std::vector<uint8_t>> owner;
    size_t offset = 0;
    size_t size = 0;
    std::string key;
  };
  std::vector<SharedRows> shared;  // empty, or one per field
  // Rows the executor reads from a file itself: where file_rows[k] is set,
  // fields[k] is empty and the executor checks the file's identity, then
  // reads the byte range into its buffer (a GPU's through pinned staging).
  std::vector<FileRows> file_rows;  // empty, or one per field
  bool from_file(size_t k) const { return k < file_rows.size() && !file_rows[k].empty(); }
  // Field k's rows, from `fields` or `shared` (empty when named by key alone).
  std::string_view field_rows(size_t k) const {
    if (k < shared.size() && shared[k].owner)
      return {reinterpret_cast<const char*>(shared[k].owner->data()) + shared[k].offset,
              shared[k].size};
    return {reinterpret_cast<const char*>(fields[k].data()), fields[k].size()};
  }
  // Field k's rows' key ("" when they have none).
  const std::string& row_key(size_t k) const {
    static const std::string none;
    return k < shared.size() ? shared[k].key : none;
  }
  // Whether field k's rows are named by key alone, for the executor to take
  // from the rows it keeps.
  bool named_only(size_t k) const {
    return k < shared.size() && !shared[k].owner && !shared[k].key.empty() && fields[k].empty() &&
           shared[k].size > 0 && !from_file(k);
  }
  // Field k's bytes, wherever they are.
  size_t field_size(size_t k) const {
    if (from_file(k)) return static_cast<size_t>(file_rows[k].size);
    return named_only(k) ? shared[k].size : field_rows(k).size();
  }
};

// Reads the rows of every field that comes from a file (file_rows) into
// its `fields` entry with `threads` threads, for executors that hold rows in
// host memory; an error, and nothing read stale, when a file changed since
// the worker located its rows.
Status read_file_fields(PartitionData* data, int threads);

// How begin_run obtained the binary it runs: compiled it for the run's
// specialised param values, or found it in a cache.
struct CompileStats {
  double compile_ms = 0;  // time spent compiling; 0 when the binary came from a cache
  bool cache_hit = true;  // from the in-memory or the on-disk cache
  // Began on a quick build (a GPU's; see BuildTier in exec/cuda/nvrtc_compiler.h)
  // while its optimised build compiles; the run switches between iterations.
  bool quick_build = false;
};

// The stats of one run over several executors: the slowest compile, a
// cache hit when every executor's binary came from a cache, and a quick
// build when any executor began on one.
CompileStats combine_compile_stats(const std::vector<CompileStats>& each);

struct IterationStats {
  double kernel_ms = 0;  // time in kernels
  double total_ms = 0;   // time in iterate(), transfers included
  // The run began on a quick build, and this iteration is its first on the
  // optimised build (exec/executor.h, CompileStats::quick_build).
  bool switched_build = false;
};

class Executor {
 public:
  virtual ~Executor() = default;
  virtual const ExecutorInfo& info() const = 0;

  // Compiles `program` for this device; a compile error carries the log.
  virtual Status build(const ProgramImage& program) = 0;
  // Compiles the program for the run's specialised param values unless a
  // cache holds that build (see program_variant.h), allocates the run's
  // buffers and uploads the partition.
  virtual Status begin_run(const ProgramImage& program, const ParamValues& params,
                           PartitionData data) = 0;
  // Sets `aggregate` (sized by the caller) to the reducer identities, runs
  // the `iterate` kernels with `state`, and leaves their results in
  // `aggregate`.  The kernels see `iteration` (the run's, from 0) as
  // data.iteration.
  virtual Status iterate(const SectionBuffer& state, int64_t iteration, SectionBuffer* aggregate,
                         IterationStats* stats) = 0;
  // As iterate(), over rows [first, first + count) of the partition alone, as
  // if they were the whole partition: the kernels see data.rows == count and
  // data.first_row advanced by `first`.  A worker runs a long iteration in
  // such slices, folding their aggregates, to report its progress.
  virtual Status iterate_rows(const SectionBuffer& state, int64_t iteration,
                              SectionBuffer* aggregate, IterationStats* stats, int64_t first,
                              int64_t count) = 0;
  // Ends the run.  With `want_outputs`, returns the dataset fields marked
  // `output: true` (others empty), in manifest order.
  virtual Result<std::vector<std::vector<uint8_t>>> end_run(bool want_outputs) = 0;
  // As end_run(), the fields left where they are: an executor in another
  // process hands over the memory they came back in, and its caller sends
  // them on from there.  By default, end_run()'s vectors, owned.
  virtual Result<OutputFieldBytes> end_run_in_place(bool want_outputs);
  // While a run is begun: the bytes of each field end_run(true) would give
  // back, in manifest order, for an executor that can write them where its
  // caller says (end_run_into); empty for one that cannot.
  virtual std::vector<uint64_t> output_field_sizes() const { return {}; }
  // As end_run(true), with field k's bytes written at to[k] (as many as
  // output_field_sizes() said; null where none) rather than given back.
  virtual Status end_run_into(const std::vector<char*>& to);
  // Frees what the last end_run left to free later (a CPU run's buffers and
  // mappings), so that a run's end waits for its outputs alone: the caller
  // calls it once it has passed them on.  A later begin_run frees it too.
  virtual void free_ended_run() {}

  // How the latest begin_run obtained its binary.
  virtual CompileStats run_compile_stats() const = 0;

  // True when the device cannot be used again in this process (a GPU whose
  // context keeps a kernel fault); the worker then restarts itself.
  virtual bool lost() const { return false; }
  // Reads the memory now free on the device into info().free_memory.
  virtual void refresh_free_memory() = 0;
  // The keys of the input rows this executor keeps from earlier runs
  // (PartitionData::SharedRows::key), which a later begin_run may name by
  // key alone.  Executors that keep none: empty.
  virtual std::vector<std::string> kept_rows() const { return {}; }
  // Reads `where` (checking the file's identity) and keeps its rows under
  // `key`, as if a run had loaded them, evicting the least recently used
  // kept rows for room; between runs only.  kTooLarge when they cannot fit
  // the kept-rows budget; executors that keep no rows: kConflict.
  virtual Status keep_file_rows(const std::string& key, const FileRows& where);
  // Lets go of the kept rows under these keys (those it does not keep are
  // ignored); between runs only.
  virtual void forget_kept_rows(const std::set<std::string>& keys) { (void)keys; }
  // Measures how busy the device is now into info().utilization and
  // info().launch_delay_us; executors without such telemetry (the CPU
  // backend) leave them unknown.
  virtual void refresh_load() {}
};

}  // namespace lizard
