// RunStore: the server's durable record of runs (status, params, plan,
// timings, results), so that `GET /runtimes` survives a restart.
//
// Each run is one record (its JSON description plus the id, sequence number
// and status it is listed by) and any number of named binary fields (the
// run's outputs as .npy bytes).  Records live in <state_dir>/runs.sqlite3
// when lizard is built with SQLite, otherwise one JSON file per run under
// <state_dir>/runs/; fields are files under <state_dir>/runs/<id>/ either way.
// Every method is thread-safe; every write is complete or absent after a crash.
//
//   auto store = RunStore::open(state_dir);
//   if (!store.ok()) return store.status();
//   (*store)->save("r7", 7, "running", run.to_json());
//   (*store)->save_blob("r7", "centroids", npy);
//   for (StoredRun& r : (*store)->load_all().value()) ...;   // in seq order
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace lizard {

struct StoredRun {
  std::string id;
  uint64_t seq = 0;
  std::string status;
  nlohmann::json record;
};

class RunStore {
 public:
  virtual ~RunStore() = default;

  // Opens (creating it when absent) the store in `state_dir`: SQLite when
  // built with it, JSON files otherwise.
  static Result<std::unique_ptr<RunStore>> open(const std::string& state_dir);
  // Records in <state_dir>/runs.sqlite3; an error when built without SQLite.
  static Result<std::unique_ptr<RunStore>> open_sqlite(const std::string& state_dir);
  // Records as <state_dir>/runs/<id>.json, each replaced atomically.
  static Result<std::unique_ptr<RunStore>> open_files(const std::string& state_dir);

  // Inserts the run or replaces what is stored for it (its fields stay).
  // Run ids and field names are used as file names: letters, digits, '_',
  // '-' and '.', not starting with '.'.
  virtual Status save(const std::string& run_id, uint64_t seq, const std::string& status,
                      const nlohmann::json& record) = 0;
  // Stores (or replaces) one named binary field of a run.
  Status save_blob(const std::string& run_id, const std::string& field, const std::string& bytes);
  // A field saved by save_blob; kNotFound when there is none.
  Result<std::string> load_blob(const std::string& run_id, const std::string& field) const;
  // Every stored run, ordered by seq.
  virtual Result<std::vector<StoredRun>> load_all() const = 0;
  // Forgets the run and its fields; ok when there was no such run.
  virtual Status remove(const std::string& run_id) = 0;

 protected:
  explicit RunStore(std::string state_dir) : state_dir_(std::move(state_dir)) {}
  Status remove_blobs(const std::string& run_id);

  const std::string state_dir_;
};

}  // namespace lizard
