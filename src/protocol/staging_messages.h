// The messages that stage and drop kept rows (exec/kept_rows.h) outside any
// run: the server asks a worker to load a file's rows onto its executors and
// keep them (stage_rows, answered by rows_staged), or to let go of every kept
// row of a source (drop_rows); and whether a worker sees a file at a path,
// and which version (probe_file, answered by file_probed), so that a client
// sends a dataset by path only where every worker reads that same file.
// JSON headers, no payload; their fields are listed in
// protocol/message_schemas_server.h and message_schemas_worker.h.
//
//   StageRowsMsg m{"s3", "/data/x.npy", "npy", "float32", 8, {}, {{0, 0, 1024}}};
//   conn.send(encode(m.to_message()));
//   Result<StageRowsMsg> back = StageRowsMsg::parse(header);
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "dataset/file_identity.h"
#include "protocol/wire.h"

namespace lizard {

// One executor's rows of a staged file: rows [first_row, first_row + rows).
struct StagedPart {
  int64_t executor = 0;
  int64_t first_row = 0, rows = 0;
  uint64_t bytes = 0;     // rows_staged: the rows' bytes
  std::string key{};      // rows_staged: the key they are kept under
  bool was_kept = false;  // rows_staged: the executor kept them already
};

// server → worker: load these rows of `path` (a binary file, `format` "npy"
// or "raw", of `width` values of `dtype` per row) onto each part's executor
// and keep them for the runs of `program`, opening the file within
// `data_roots` (the server's).
struct StageRowsMsg {
  std::string stage_id, path, format, dtype;
  int64_t width = 1;
  std::vector<std::string> data_roots;
  std::vector<StagedPart> parts;
  // The program whose runs read the rows (its checksum): the executor
  // processes of that program keep them (exec/process/owner_process_executor.h).
  std::string program{};
  Message to_message() const;
  static Result<StageRowsMsg> parse(const nlohmann::json& h);
};

// worker → server: what was staged (parts as asked, with bytes and keys), or why not.
struct RowsStagedMsg {
  std::string stage_id;
  bool ok = false;
  std::string error;
  std::vector<StagedPart> parts;
  Message to_message() const;
  static Result<RowsStagedMsg> parse(const nlohmann::json& h);
};

// server → worker: let go of the kept rows of `source` (a path as runs named
// it, or an upload's id) on every executor, each once no run uses it.
struct DropRowsMsg {
  std::string source;
  Message to_message() const;
  static Result<DropRowsMsg> parse(const nlohmann::json& h);
};

// server → worker: open `path` within `data_roots` (the server's) and the
// worker's own, as a run's loading would, and say which file it is.
struct ProbeFileMsg {
  std::string probe_id, path;
  std::vector<std::string> data_roots;
  Message to_message() const;
  static Result<ProbeFileMsg> parse(const nlohmann::json& h);
};

// worker → server: the file's identity there, or why it cannot be read.
struct FileProbedMsg {
  std::string probe_id;
  bool ok = false;
  std::string error;
  FileIdentity identity;
  Message to_message() const;
  static Result<FileProbedMsg> parse(const nlohmann::json& h);
};

}  // namespace lizard
