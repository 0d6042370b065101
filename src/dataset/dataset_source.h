// DatasetSource: one kind of place a run's input dataset field takes its rows
// from (inline `values`, a file `path`, an `upload`, a `generate` kernel).
// A kind owns every step of its rows' way to the executors:
//
//   1. parse():    the keys of its request object ({"path": ..., "format": ...}),
//                  checked, with the field's rows counted -> ParsedSource;
//   2. to_wire():  one worker's rows of the field in its run_start -> FieldSource
//                  (plus inline bytes of the payload);
//   3. encode() / decode(): the FieldSource's keys in run_start's `fields`;
//   4. delivery:   on the worker, how the rows reach the executors
//                  (RowDelivery; part_rows() gives them for kRows).
//
// Kinds are stateless and live in a DatasetSourceRegistry
// (dataset_source_registry.h), which finds them by request key or wire name;
// a ParsedSource and a FieldSource carry their kind as a pointer to it.
// To add a kind: one file that implements this interface, and one line in
// dataset_source_registry.cpp.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/dtype.h"
#include "common/status.h"
#include "dataset/data_roots.h"
#include "dataset/file_format.h"
#include "dataset/file_identity.h"

namespace lizard {

class DatasetSource;

// How a field's rows reach the executors of a worker; the worker does each.
enum class RowDelivery {
  kNone,       // not an input field: the executors allocate it
  kRows,       // bytes the kind gives on the worker (part_rows): inline, computed
  kChunks,     // arrived as data_chunk messages just before run_start
  kCached,     // from the worker's cache of uploaded rows of an earlier run
  kGenerator,  // filled on the executors by a generator kernel of the program
  kFile,       // read from a file under the data roots on each executor's turn
};

// Finds an uploaded dataset (POST /datasets) by id: its file and format.
using UploadLookup =
    std::function<Result<std::pair<std::string, FileFormat>>(const std::string& id)>;

// The dataset field a source is parsed for.
struct SourceField {
  std::string what;  // "dataset field 'x'": how errors name it
  DType type = DType::kFloat32;
  int64_t width = 1;                    // elements per row
  std::vector<std::string> generators;  // the manifest's `generate` kernels
};

// What the server lends parsers.
struct SourceContext {
  const DataRoots* data_roots = nullptr;  // dataset paths must lie inside; null: any
  UploadLookup uploads;                   // null: uploads are not available
};

// One dataset field's source as a run request gave it, checked and counted.
struct ParsedSource {
  const DatasetSource* source = nullptr;  // null: not an input field
  int64_t width = 1;                      // elements per row
  int64_t rows = 0;
  std::vector<uint8_t> values;  // inline: all rows, row-major
  std::string path;             // path; upload: the server's copy
  FileFormat format = FileFormat::kRaw;
  std::string generator;         // generate: a kernel of manifest.generate
  std::optional<uint64_t> seed;  // generate: its seed (all must agree)
  // The start of the keys executors keep these rows under
  // (dataset/file_rows_key.h, an upload's id); "" when none.
  std::string row_source;
  // path: the version of the file its rows were counted in, which the run
  // pins (every later read must find it).
  std::optional<FileIdentity> file;
  std::string content_sha256;  // path with "verify": "content": the bytes' digest
  nlohmann::json options = nlohmann::json::object();  // other kinds' own values
};

// Where one dataset field's rows come from, in a run_start.
struct FieldSource {
  std::string name;
  const DatasetSource* source = nullptr;  // null: not an input field ("none")
  RowDelivery delivery = RowDelivery::kNone;
  uint64_t offset = 0, bytes = 0;  // inline: where the rows lie in the payload
  std::string path, format;        // path
  std::string kernel;              // generate
  std::string upload;              // chunks, cached: the uploaded dataset the rows are of
  nlohmann::json options = nlohmann::json::object();  // other kinds' own keys
};

// One worker's rows of a field, for to_wire().
struct WireRows {
  int64_t first_row = 0, rows = 0;
  size_t row_bytes = 0;
  bool stream_uploads = false;  // send uploaded rows as chunks, not from the cache
};

// One part's rows of a kRows field on a worker, for part_rows().
struct PartRows {
  std::string_view payload;  // the run_start's payload
  size_t offset = 0;         // bytes into this worker's rows of the field
  size_t bytes = 0;
  DType type = DType::kFloat32;
};

class DatasetSource {
 public:
  virtual ~DatasetSource() = default;

  // The key that names the kind in a request's source object ("path"),
  // first of the keys the object may hold.
  virtual std::vector<std::string> request_keys() const = 0;
  std::string key() const { return request_keys().front(); }
  // The values of `source` in run_start fields this kind decodes.
  virtual std::vector<std::string> wire_names() const = 0;
  // How its rows usually reach the executors (an upload: kCached).
  virtual RowDelivery delivery() const = 0;

  // Checks `spec` (an object holding key() and only request_keys()) and
  // counts its rows; errors start with field.what.  May block on I/O.
  virtual Result<ParsedSource> parse(const nlohmann::json& spec, const SourceField& field,
                                     const SourceContext& context) const = 0;
  // Fills `out` (name and all) for one worker's rows; inline bytes go to `payload`.
  virtual Status to_wire(const ParsedSource& parsed, const WireRows& rows, FieldSource* out,
                         std::string* payload) const = 0;
  // The kind's keys of a run_start field, `source` among them.
  virtual void encode(const FieldSource& field, nlohmann::json* out) const = 0;
  // Reads them back (`source` said `wire_name`), setting delivery; errors
  // name the key at fault ("path is not a string").
  virtual Status decode(std::string_view wire_name, const nlohmann::json& in,
                        FieldSource* field) const = 0;
  // kRows only: one part's rows on the worker.
  virtual Result<std::vector<uint8_t>> part_rows(const FieldSource& field,
                                                 const PartRows& part) const;

 protected:
  // A run_start field's optional keys, type-checked.
  static Status read_wire(const nlohmann::json& in, const char* key, std::string* out);
  static Status read_wire(const nlohmann::json& in, const char* key, uint64_t* out);
};

}  // namespace lizard
