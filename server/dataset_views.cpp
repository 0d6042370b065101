#include "server/dataset_views.h"

#include "server/dataset_store.h"
#include "server/worker_registry.h"

namespace lizard {

using nlohmann::json;

json datasets_view(const DatasetStore& store, const WorkerRegistry& workers) {
  json kept = json::array();
  for (const KeptRowsReport& r : workers.kept_rows()) {
    json j = kept_rows_json(r.rows);
    j["worker"] = r.worker_id;
    j["executor"] = r.executor;
    j["in_use"] = r.in_use;
    if (!j.contains("source")) j["source"] = nullptr, j["rows"] = nullptr;  // not described
    kept.push_back(std::move(j));
  }
  return {{"uploads", store.list()}, {"kept", std::move(kept)}};
}

}  // namespace lizard
