// RunStore: the server's durable record of runs (status, params, plan,
// timings, results), so that `GET /runtimes` survives a restart.
//
// Each run is one record (its JSON description plus the id, sequence number
// and status it is listed by), the request it was submitted with, its latest
// checkpoint (state and iteration after a completed iteration, what a
// restarted server resumes it from) and any number of named binary fields
// (the run's outputs as .npy bytes).  Records, requests and checkpoints live
// in <state_dir>/runs.sqlite3 when lizard is built with SQLite, otherwise as
// files under <state_dir>/runs/.  Fields are files under <state_dir>/runs/<id>/,
// except that fields of up to kInlineFieldBytes that save_finished() stores
// are kept with the record (in the SQLite database, or after the record's
// JSON line in its file): a run's small results (its state and aggregate)
// cost no file and fsync each.  Every method is thread-safe; every write
// is complete or absent after a crash (kill -9 included), and a write that
// meets a full disk fails with Code::kStorageFull and changes nothing.
//
//   auto store = RunStore::open(state_dir);
//   if (!store.ok()) return store.status();
//   (*store)->save("r7", 7, "running", run.to_json());
//   (*store)->save_request("r7", body);                       // at submission
//   (*store)->save_checkpoint("r7", {it, done, state, agg});  // after each iteration
//   (*store)->save_blob("r7", "centroids", npy);
//   for (StoredRun& r : (*store)->load_all().value()) ...;   // in seq order
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "server/state_dir_identity.h"

namespace lizard {

// A run's progress after a completed iteration: what a restarted server
// resumes it from.
struct RunCheckpoint {
  int64_t iteration = 0;  // iterations completed
  bool done = false;      // the program's update said it has converged
  std::string state;      // the state section's bytes
  std::string aggregate;  // the aggregate section's bytes after the last fold
};

struct StoredRun {
  std::string id;
  uint64_t seq = 0;
  std::string status;
  nlohmann::json record;
  nlohmann::json request;                   // as submitted; null when none was saved
  std::optional<RunCheckpoint> checkpoint;  // the latest, if any
};

class RunStore {
 public:
  // Fields up to this size may be kept in the database rather than in files.
  static constexpr size_t kInlineFieldBytes = 1 << 20;
  // Disk kept back for the records written after a write met a full disk.
  static constexpr size_t kReservedBytes = 1 << 20;

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
  // Keeps the request a run was submitted with (its body as JSON).
  virtual Status save_request(const std::string& run_id, const nlohmann::json& body) = 0;
  // Replaces the run's checkpoint: one small transaction.
  virtual Status save_checkpoint(const std::string& run_id, const RunCheckpoint& cp) = 0;
  // Forgets the run's checkpoint (once it has finished); ok when there is none.
  virtual Status drop_checkpoint(const std::string& run_id) = 0;
  // Stores (or replaces) one named binary field of a run.
  virtual Status save_blob(const std::string& run_id, const std::string& field,
                           const std::string& bytes);
  // As a file of its own, `head` then `data`.
  Status save_blob_file(const std::string& run_id, const std::string& field, std::string_view head,
                        std::string_view data);
  // A finished run at once: its fields, its record (save) and the end of its
  // checkpoint (drop_checkpoint).  Fields of up to kInlineFieldBytes go with
  // the record: the SQLite store commits them in one transaction, the files
  // store writes them after the record's JSON line in one file; larger ones
  // are files of their own (save_blob).
  using NamedBytes = std::pair<std::string, std::string>;
  // A field to store: its bytes are `head` then `data`, written one after
  // the other (a .npy header and the run's own buffer: no copy of it).
  struct FieldBytes {
    std::string name;
    std::string head;
    std::string_view data = {};  // the caller's, until save_finished returns
    size_t size() const { return head.size() + data.size(); }
    std::string joined() const { return head + std::string(data); }
  };
  virtual Status save_finished(const std::string& run_id, uint64_t seq, const std::string& status,
                               const nlohmann::json& record, const std::vector<FieldBytes>& fields);
  // A field saved by save_blob; kNotFound when there is none.
  virtual Result<std::string> load_blob(const std::string& run_id, const std::string& field) const;
  // Every stored run, ordered by seq.
  virtual Result<std::vector<StoredRun>> load_all() const = 0;
  // Forgets the run, its request, checkpoint and fields; ok when there was no such run.
  virtual Status remove(const std::string& run_id) = 0;

  // Ok while the state directory (and database) are the ones opened; every
  // write checks it first.
  virtual Status health() const;
  // Frees the reserved disk space; false when there was none left to free.
  // It is reserved again when the store is next opened.
  bool release_reserved_space();

 protected:
  explicit RunStore(std::string state_dir) : state_dir_(std::move(state_dir)) {}
  Status remove_blobs(const std::string& run_id);
  // Takes the state directory's identity and reserves kReservedBytes: once
  // the backend has opened it.
  Status finish_opening();

  const std::string state_dir_;

 private:
  StateDirIdentity dir_identity_;
};

}  // namespace lizard
