// The JSON view of GET /datasets: the uploads the DatasetStore holds and the
// rows each worker's executors keep for later runs (as last reported), so
// that one listing shows what data the cluster holds and where.
//
//   json j = datasets_view(store, workers);
//   // {"uploads": [...as POST /datasets answers...],
//   //  "kept": [{"worker", "executor", "source", "rows": [b, e], "bytes", "in_use", "key",
//   //            "description"}]}
#pragma once

#include <nlohmann/json.hpp>

namespace lizard {

class DatasetStore;
class WorkerRegistry;

nlohmann::json datasets_view(const DatasetStore& store, const WorkerRegistry& workers);

}  // namespace lizard
