#include "server/dataset_views.h"

#include <set>
#include <string>

#include "server/dataset_store.h"
#include "server/worker_registry.h"

namespace lizard {

using nlohmann::json;

json datasets_view(const DatasetStore& store, const WorkerRegistry& workers,
                   const std::string& digest) {
  json uploads = store.list(digest);
  std::set<std::string> ids;
  for (const json& u : uploads) ids.insert(u.value("id", ""));
  json kept = json::array();
  for (const KeptRowsReport& r : workers.kept_rows()) {
    json j = kept_rows_json(r.rows);
    if (!digest.empty() &&
        !(j.value("source", json()).is_string() && ids.count(j["source"].get<std::string>())))
      continue;
    j["worker"] = r.worker_id;
    j["executor"] = r.executor;
    j["in_use"] = r.in_use;
    if (!j.contains("source")) j["source"] = nullptr, j["rows"] = nullptr;  // not described
    kept.push_back(std::move(j));
  }
  return {{"uploads", std::move(uploads)}, {"kept", std::move(kept)}};
}

}  // namespace lizard
