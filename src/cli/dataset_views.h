// Text views of the cluster's datasets for `lizard datasets`, `lizard
// upload` and `lizard stage`: pure functions from the server's JSON (GET /datasets, POST
// /datasets/stage, the removal answers) to tables and lines for people,
// with readable byte sizes.  --json prints the JSON itself instead.
//
//   std::cout << datasets_view(api.get("/datasets").value());
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace lizard {

// Two tables: the uploads (id, format, dtype, shape, size) and the rows each
// worker's executors keep (worker, executor, source, rows, size, in use).
std::string datasets_view(const nlohmann::json& datasets);

// What `lizard upload` stored: the id to name in runs, what it holds, and the
// rate the server received it at.
std::string uploaded_view(const nlohmann::json& stored);

// What a stage put where, one line per executor, and the total.
std::string staged_view(const nlohmann::json& staged);

// Whether `arg` names an upload ("u" and 12 hex digits) rather than a path.
bool looks_like_upload_id(const std::string& arg);

}  // namespace lizard
