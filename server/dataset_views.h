// The JSON view of GET /datasets: the uploads the DatasetStore holds and the
// rows each worker's executors keep for later runs (as last reported), so
// that one listing shows what data the cluster holds and where.
//
//   json j = datasets_view(store, workers);
//   json j = datasets_view(store, workers, digest);  // only the uploads of those bytes
//   // {"uploads": [...as POST /datasets answers...],
//   //  "kept": [{"worker", "executor", "source", "rows": [b, e], "bytes", "in_use", "key",
//   //            "description"}]}
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace lizard {

class DatasetStore;
class WorkerRegistry;

// A `digest` narrows it to the uploads with that digest and the rows kept of them.
nlohmann::json datasets_view(const DatasetStore& store, const WorkerRegistry& workers,
                             const std::string& digest = "");

}  // namespace lizard
