// The run store's SQLite backend: <state_dir>/runs.sqlite3 in WAL mode.
//
// synchronous=NORMAL: in WAL mode a commit is appended to the log with
// write(2) before it returns, so it survives the server's death (kill -9)
// whole or not at all; only a crash of the machine itself may lose the last
// commits (never corrupt the database), since the log is flushed to disk at
// checkpoints rather than at every commit.  FULL would add an fsync to every
// commit — to every iteration of every run — to guard against power loss,
// where losing a checkpoint only means resuming a run a few iterations
// earlier.  docs/operations.md measures the cost per iteration.
//
// Copying the log into the database (a WAL checkpoint, which does fsync) is
// left to a thread of the store's own, on a second connection, once a
// second: it never blocks a writer, so a run's per-iteration commit costs
// no fsync on the run's thread.  For the same reason a finished run's small
// fields (up to RunStore::kInlineFieldBytes: its state and aggregate, most
// outputs of small runs) are rows of run_fields, a commit each, where a file
// would cost an fsync each; larger ones stay files beside the database.
#ifdef LIZARD_HAVE_SQLITE

#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <map>
#include <mutex>
#include <thread>

#include "common/clock.h"
#include "server/durable_write.h"
#include "server/run_store_detail.h"
#include "server/run_store_sqlite_testing.h"

namespace lizard::run_store_detail {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// 1: runs.  2: run_requests and run_checkpoints.  3: run_fields.
constexpr int kSchemaVersion = 3;

struct StatementDeleter {
  void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
};
using Statement = std::unique_ptr<sqlite3_stmt, StatementDeleter>;

// Resets a prepared statement when leaving the scope that ran it.
struct ResetOnExit {
  sqlite3_stmt* s;
  ~ResetOnExit() {
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
  }
};

void bind_text(sqlite3_stmt* s, int col, const std::string& text) {
  sqlite3_bind_text64(s, col, text.data(), text.size(), SQLITE_STATIC, SQLITE_UTF8);
}

void bind_blob(sqlite3_stmt* s, int col, const std::string& bytes) {
  sqlite3_bind_blob64(s, col, bytes.data(), bytes.size(), SQLITE_STATIC);
}

std::string column_text(sqlite3_stmt* s, int col) {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s, col));
  return p ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(s, col))) : std::string();
}

std::string column_blob(sqlite3_stmt* s, int col) {
  const auto* p = static_cast<const char*>(sqlite3_column_blob(s, col));
  return p ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(s, col))) : std::string();
}

// A busy handler: true (try again) after 50 us, for up to 5 s.
int retry_soon(void*, int attempts) {
  if (attempts >= 100000) return 0;
  std::this_thread::sleep_for(std::chrono::microseconds(50));
  return 1;
}

class SqliteRunStore : public RunStore {
 public:
  explicit SqliteRunStore(std::string state_dir) : RunStore(std::move(state_dir)) {}
  ~SqliteRunStore() override {
    {
      std::lock_guard<std::mutex> l(checkpointer_mu_);
      stopping_ = true;
    }
    checkpointer_cv_.notify_all();
    if (checkpointer_.joinable()) checkpointer_.join();
    upsert_.reset();
    select_all_.reset();
    delete_.reset();
    upsert_request_.reset();
    upsert_checkpoint_.reset();
    delete_checkpoint_.reset();
    delete_request_.reset();
    select_requests_.reset();
    select_checkpoints_.reset();
    upsert_field_.reset();
    select_field_.reset();
    delete_field_.reset();
    delete_fields_.reset();
    if (db_) sqlite3_close(db_);
  }

  Status init() {
    LIZARD_RETURN_IF_ERROR(prepare_state_dir(state_dir_));
    path_ = (fs::path(state_dir_) / "runs.sqlite3").string();
    int rc =
        sqlite3_open_v2(path_.c_str(), &db_,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
    if (rc != SQLITE_OK) return error("cannot open");
    // The checkpointer holds a lock for moments: retry every 50 us (up to
    // 5 s) rather than sleep whole milliseconds as busy_timeout does.
    sqlite3_busy_handler(db_, &retry_soon, nullptr);
    LIZARD_RETURN_IF_ERROR(exec("PRAGMA journal_mode=WAL"));
    LIZARD_RETURN_IF_ERROR(exec("PRAGMA synchronous=NORMAL"));
    LIZARD_RETURN_IF_ERROR(exec("PRAGMA wal_autocheckpoint=0"));  // the checkpointer's job
    LIZARD_RETURN_IF_ERROR(migrate());
    // Tests only (run_store_sqlite_testing.h): a database that cannot grow.
    if (const char* cap = std::getenv("LIZARD_TEST_SQLITE_MAX_PAGES"); cap && *cap)
      LIZARD_RETURN_IF_ERROR(limit_pages(std::strtoull(cap, nullptr, 10)));
    LIZARD_RETURN_IF_ERROR(prepare(
        "INSERT OR REPLACE INTO runs(id, seq, status, record, updated_at) VALUES(?, ?, ?, ?, ?)",
        &upsert_));
    LIZARD_RETURN_IF_ERROR(
        prepare("SELECT id, seq, status, record FROM runs ORDER BY seq, id", &select_all_));
    LIZARD_RETURN_IF_ERROR(prepare("DELETE FROM runs WHERE id = ?", &delete_));
    LIZARD_RETURN_IF_ERROR(
        prepare("INSERT OR REPLACE INTO run_requests(id, body) VALUES(?, ?)", &upsert_request_));
    LIZARD_RETURN_IF_ERROR(
        prepare("INSERT OR REPLACE INTO run_checkpoints(id, iteration, done, state, aggregate,"
                " updated_at) VALUES(?, ?, ?, ?, ?, ?)",
                &upsert_checkpoint_));
    LIZARD_RETURN_IF_ERROR(
        prepare("DELETE FROM run_checkpoints WHERE id = ?", &delete_checkpoint_));
    LIZARD_RETURN_IF_ERROR(prepare("DELETE FROM run_requests WHERE id = ?", &delete_request_));
    LIZARD_RETURN_IF_ERROR(prepare("SELECT id, body FROM run_requests", &select_requests_));
    LIZARD_RETURN_IF_ERROR(prepare(
        "SELECT id, iteration, done, state, aggregate FROM run_checkpoints", &select_checkpoints_));
    LIZARD_RETURN_IF_ERROR(prepare(
        "INSERT OR REPLACE INTO run_fields(id, name, bytes) VALUES(?, ?, ?)", &upsert_field_));
    LIZARD_RETURN_IF_ERROR(
        prepare("SELECT bytes FROM run_fields WHERE id = ? AND name = ?", &select_field_));
    LIZARD_RETURN_IF_ERROR(
        prepare("DELETE FROM run_fields WHERE id = ? AND name = ?", &delete_field_));
    LIZARD_RETURN_IF_ERROR(prepare("DELETE FROM run_fields WHERE id = ?", &delete_fields_));
    LIZARD_ASSIGN_OR_RETURN(db_identity_, StateDirIdentity::take(path_, "the run database"));
    LIZARD_RETURN_IF_ERROR(finish_opening());
    checkpointer_ = std::thread([this] { copy_log_into_database(); });
    return Status::Ok();
  }

  // A small field is a row; a larger one a file (and no row shadows it).
  Status save_blob(const std::string& run_id, const std::string& field,
                   const std::string& bytes) override {
    LIZARD_RETURN_IF_ERROR(check_name("run id", run_id));
    LIZARD_RETURN_IF_ERROR(check_name("field name", field));
    LIZARD_RETURN_IF_ERROR(health());
    std::lock_guard<std::mutex> l(mu_);
    return put_field_locked(run_id, field, bytes);
  }

  // One transaction for the rows, after the files of the large fields.
  Status save_finished(const std::string& run_id, uint64_t seq, const std::string& status,
                       const json& record, const std::vector<FieldBytes>& fields) override {
    LIZARD_RETURN_IF_ERROR(check_name("run id", run_id));
    for (const FieldBytes& f : fields) LIZARD_RETURN_IF_ERROR(check_name("field name", f.name));
    LIZARD_RETURN_IF_ERROR(health());
    const std::string text = to_text(record);
    std::lock_guard<std::mutex> l(mu_);
    LIZARD_RETURN_IF_ERROR(exec("BEGIN IMMEDIATE"));
    Status st = [&]() -> Status {
      for (const FieldBytes& f : fields)
        LIZARD_RETURN_IF_ERROR(f.size() > kInlineFieldBytes
                                   ? put_large_field_locked(run_id, f.name, f.head, f.data)
                                   : put_field_locked(run_id, f.name, f.joined()));
      LIZARD_RETURN_IF_ERROR(put_record_locked(run_id, seq, status, text));
      return drop_checkpoint_locked(run_id);
    }();
    if (!st.ok()) {
      (void)exec("ROLLBACK");
      return st;
    }
    return exec("COMMIT");
  }

  Result<std::string> load_blob(const std::string& run_id,
                                const std::string& field) const override {
    LIZARD_RETURN_IF_ERROR(check_name("run id", run_id));
    LIZARD_RETURN_IF_ERROR(check_name("field name", field));
    {
      std::lock_guard<std::mutex> l(mu_);
      sqlite3_stmt* s = select_field_.get();
      ResetOnExit reset{s};
      bind_text(s, 1, run_id);
      bind_text(s, 2, field);
      const int rc = sqlite3_step(s);
      if (rc == SQLITE_ROW) return column_blob(s, 0);
      if (rc != SQLITE_DONE)
        return error("cannot read field '" + field + "' of run " + run_id + " from");
    }
    return RunStore::load_blob(run_id, field);
  }

  Status save(const std::string& run_id, uint64_t seq, const std::string& status,
              const json& record) override {
    LIZARD_RETURN_IF_ERROR(check_name("run id", run_id));
    LIZARD_RETURN_IF_ERROR(health());
    const std::string text = to_text(record);
    std::lock_guard<std::mutex> l(mu_);
    return put_record_locked(run_id, seq, status, text);
  }

  Status save_request(const std::string& run_id, const json& body) override {
    LIZARD_RETURN_IF_ERROR(check_name("run id", run_id));
    LIZARD_RETURN_IF_ERROR(health());
    const std::string text = to_text(body);
    std::lock_guard<std::mutex> l(mu_);
    if (storage_write_fails()) return disk_full_error("the request of run " + run_id);
    sqlite3_stmt* s = upsert_request_.get();
    ResetOnExit reset{s};
    bind_text(s, 1, run_id);
    bind_text(s, 2, text);
    return step_done(s, "the request of run " + run_id);
  }

  Status save_checkpoint(const std::string& run_id, const RunCheckpoint& cp) override {
    LIZARD_RETURN_IF_ERROR(check_name("run id", run_id));
    LIZARD_RETURN_IF_ERROR(health());
    const std::string updated_at = now_iso();
    std::lock_guard<std::mutex> l(mu_);
    if (storage_write_fails()) return disk_full_error("the checkpoint of run " + run_id);
    sqlite3_stmt* s = upsert_checkpoint_.get();
    ResetOnExit reset{s};
    bind_text(s, 1, run_id);
    sqlite3_bind_int64(s, 2, cp.iteration);
    sqlite3_bind_int(s, 3, cp.done ? 1 : 0);
    bind_blob(s, 4, cp.state);
    bind_blob(s, 5, cp.aggregate);
    bind_text(s, 6, updated_at);
    return step_done(s, "the checkpoint of run " + run_id);
  }

  Status drop_checkpoint(const std::string& run_id) override {
    LIZARD_RETURN_IF_ERROR(check_name("run id", run_id));
    LIZARD_RETURN_IF_ERROR(health());
    std::lock_guard<std::mutex> l(mu_);
    return drop_checkpoint_locked(run_id);
  }

  Result<std::vector<StoredRun>> load_all() const override {
    std::lock_guard<std::mutex> l(mu_);
    std::vector<StoredRun> out;
    std::map<std::string, size_t> index;
    {
      sqlite3_stmt* s = select_all_.get();
      ResetOnExit reset{s};
      int rc;
      while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        StoredRun r;
        r.id = column_text(s, 0);
        r.seq = static_cast<uint64_t>(sqlite3_column_int64(s, 1));
        r.status = column_text(s, 2);
        r.record = json::parse(column_text(s, 3), nullptr, false);
        if (r.record.is_discarded())
          return internal_error("corrupt record of run " + r.id + " in " + path_);
        index[r.id] = out.size();
        out.push_back(std::move(r));
      }
      if (rc != SQLITE_DONE) return error("cannot read runs from");
    }
    {
      sqlite3_stmt* s = select_requests_.get();
      ResetOnExit reset{s};
      int rc;
      while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        auto it = index.find(column_text(s, 0));
        if (it == index.end()) continue;
        json body = json::parse(column_text(s, 1), nullptr, false);
        if (!body.is_discarded()) out[it->second].request = std::move(body);
      }
      if (rc != SQLITE_DONE) return error("cannot read run requests from");
    }
    sqlite3_stmt* s = select_checkpoints_.get();
    ResetOnExit reset{s};
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
      auto it = index.find(column_text(s, 0));
      if (it == index.end()) continue;
      out[it->second].checkpoint =
          RunCheckpoint{sqlite3_column_int64(s, 1), sqlite3_column_int(s, 2) != 0,
                        column_blob(s, 3), column_blob(s, 4)};
    }
    if (rc != SQLITE_DONE) return error("cannot read run checkpoints from");
    return out;
  }

  // The state directory, and the database file in it, are the ones opened.
  Status health() const override {
    LIZARD_RETURN_IF_ERROR(RunStore::health());
    return db_identity_.check();
  }

  // See run_store_sqlite_testing.h.
  Status limit_pages(uint64_t max_pages) {
    // The largest page count SQLite accepts, and its default.
    constexpr uint64_t kNoLimit = 4294967294u;
    std::lock_guard<std::mutex> l(mu_);
    return exec("PRAGMA max_page_count = " +
                std::to_string(max_pages == 0 ? kNoLimit : std::min(max_pages, kNoLimit)));
  }

  // The run's rows go in one transaction.
  Status remove(const std::string& run_id) override {
    LIZARD_RETURN_IF_ERROR(check_name("run id", run_id));
    LIZARD_RETURN_IF_ERROR(health());
    std::lock_guard<std::mutex> l(mu_);
    LIZARD_RETURN_IF_ERROR(exec("BEGIN IMMEDIATE"));
    Status st = [&]() -> Status {
      for (sqlite3_stmt* s :
           {delete_.get(), delete_checkpoint_.get(), delete_request_.get(), delete_fields_.get()}) {
        ResetOnExit reset{s};
        bind_text(s, 1, run_id);
        LIZARD_RETURN_IF_ERROR(step_done(s, "the removal of run " + run_id));
      }
      return Status::Ok();
    }();
    if (!st.ok()) {
      (void)exec("ROLLBACK");
      return st;
    }
    LIZARD_RETURN_IF_ERROR(exec("COMMIT"));
    return remove_blobs(run_id);
  }

 private:
  // The writes, with mu_ held.
  Status put_field_locked(const std::string& run_id, const std::string& field,
                          const std::string& bytes) {
    const std::string what = "field '" + field + "' of run " + run_id;
    if (bytes.size() > kInlineFieldBytes) return put_large_field_locked(run_id, field, bytes, {});
    if (storage_write_fails()) return disk_full_error(what);
    sqlite3_stmt* s = upsert_field_.get();
    ResetOnExit reset{s};
    bind_text(s, 1, run_id);
    bind_text(s, 2, field);
    bind_blob(s, 3, bytes);
    return step_done(s, what);
  }

  // A file of its own, `head` then `data`, in place of any row of the field.
  Status put_large_field_locked(const std::string& run_id, const std::string& field,
                                std::string_view head, std::string_view data) {
    sqlite3_stmt* s = delete_field_.get();
    ResetOnExit reset{s};
    bind_text(s, 1, run_id);
    bind_text(s, 2, field);
    LIZARD_RETURN_IF_ERROR(step_done(s, "field '" + field + "' of run " + run_id));
    return RunStore::save_blob_file(run_id, field, head, data);
  }

  Status put_record_locked(const std::string& run_id, uint64_t seq, const std::string& status,
                           const std::string& text) {
    if (storage_write_fails()) return disk_full_error("run " + run_id);
    sqlite3_stmt* s = upsert_.get();
    ResetOnExit reset{s};
    bind_text(s, 1, run_id);
    sqlite3_bind_int64(s, 2, static_cast<sqlite3_int64>(seq));
    bind_text(s, 3, status);
    bind_text(s, 4, text);
    const std::string updated_at = now_iso();
    bind_text(s, 5, updated_at);
    return step_done(s, "run " + run_id);
  }

  Status drop_checkpoint_locked(const std::string& run_id) {
    sqlite3_stmt* s = delete_checkpoint_.get();
    ResetOnExit reset{s};
    bind_text(s, 1, run_id);
    return step_done(s, "the checkpoint of run " + run_id);
  }

  // Brings a new or older database to kSchemaVersion; refuses a newer one.
  Status migrate() {
    LIZARD_RETURN_IF_ERROR(exec("BEGIN IMMEDIATE"));
    Status st = [&]() -> Status {
      Statement version;
      LIZARD_RETURN_IF_ERROR(prepare("PRAGMA user_version", &version));
      if (sqlite3_step(version.get()) != SQLITE_ROW) return error("cannot read schema version of");
      const int v = sqlite3_column_int(version.get(), 0);
      if (v > kSchemaVersion)
        return internal_error(path_ + " was written by a newer lizard (schema version " +
                              std::to_string(v) + ", this one knows " +
                              std::to_string(kSchemaVersion) + ")");
      if (v < 1) {
        LIZARD_RETURN_IF_ERROR(exec(
            "CREATE TABLE runs(id TEXT PRIMARY KEY, seq INTEGER NOT NULL, status TEXT NOT NULL,"
            " record TEXT NOT NULL, updated_at TEXT NOT NULL)"));
        LIZARD_RETURN_IF_ERROR(exec("CREATE INDEX runs_by_seq ON runs(seq)"));
      }
      if (v < 2) {
        LIZARD_RETURN_IF_ERROR(
            exec("CREATE TABLE run_requests(id TEXT PRIMARY KEY, body TEXT NOT NULL)"));
        LIZARD_RETURN_IF_ERROR(
            exec("CREATE TABLE run_checkpoints(id TEXT PRIMARY KEY, iteration INTEGER NOT NULL,"
                 " done INTEGER NOT NULL, state BLOB NOT NULL, aggregate BLOB NOT NULL,"
                 " updated_at TEXT NOT NULL)"));
      }
      if (v < 3) {
        LIZARD_RETURN_IF_ERROR(
            exec("CREATE TABLE run_fields(id TEXT NOT NULL, name TEXT NOT NULL,"
                 " bytes BLOB NOT NULL, PRIMARY KEY(id, name))"));
      }
      return exec("PRAGMA user_version = " + std::to_string(kSchemaVersion));
    }();
    LIZARD_RETURN_IF_ERROR(exec(st.ok() ? "COMMIT" : "ROLLBACK"));
    return st;
  }

  // The checkpointer's loop: once a second, copies what the log holds into
  // the database without waiting for readers or writers.
  void copy_log_into_database() {
    sqlite3* db = nullptr;
    if (sqlite3_open_v2(path_.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr) !=
        SQLITE_OK) {
      sqlite3_close(db);
      return;  // the log then grows until the store is closed, which copies it
    }
    std::unique_lock<std::mutex> l(checkpointer_mu_);
    while (!checkpointer_cv_.wait_for(l, std::chrono::seconds(1), [this] { return stopping_; }))
      sqlite3_wal_checkpoint_v2(db, nullptr, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
    sqlite3_close(db);
  }

  // Runs a prepared write; a full disk is the user's to fix (507).
  Status step_done(sqlite3_stmt* s, const std::string& what) {
    const int rc = sqlite3_step(s);
    if (rc == SQLITE_DONE) return Status::Ok();
    if (rc == SQLITE_FULL) return disk_full_error(what);
    return error("cannot store " + what + " in");
  }

  Status exec(const std::string& sql) {
    const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr);
    if (rc == SQLITE_FULL) return disk_full_error(path_);
    if (rc != SQLITE_OK) return error("'" + sql + "' failed on");
    return Status::Ok();
  }

  Status prepare(const std::string& sql, Statement* out) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr) != SQLITE_OK)
      return error("cannot prepare '" + sql + "' on");
    out->reset(s);
    return Status::Ok();
  }

  // "<what> <path>: <sqlite's message>"
  Status error(const std::string& what) const {
    return internal_error(what + " " + path_ + ": " +
                          (db_ ? sqlite3_errmsg(db_) : "out of memory"));
  }

  std::string path_;
  StateDirIdentity db_identity_;
  sqlite3* db_ = nullptr;
  Statement upsert_, select_all_, delete_, upsert_request_, upsert_checkpoint_, delete_checkpoint_,
      delete_request_, select_requests_, select_checkpoints_, upsert_field_, select_field_,
      delete_field_, delete_fields_;
  mutable std::mutex mu_;
  std::mutex checkpointer_mu_;
  std::condition_variable checkpointer_cv_;
  bool stopping_ = false;  // GUARDED_BY(checkpointer_mu_)
  std::thread checkpointer_;
};

}  // namespace

Result<std::unique_ptr<RunStore>> open_sqlite_store(const std::string& state_dir) {
  auto store = std::make_unique<SqliteRunStore>(state_dir);
  LIZARD_RETURN_IF_ERROR(store->init().with_context("run store"));
  return std::unique_ptr<RunStore>(std::move(store));
}

}  // namespace lizard::run_store_detail

namespace lizard {

Status limit_sqlite_run_store_pages(RunStore& store, uint64_t max_pages) {
  auto* sqlite = dynamic_cast<run_store_detail::SqliteRunStore*>(&store);
  if (!sqlite) return invalid_argument("not a SQLite run store");
  return sqlite->limit_pages(max_pages);
}

}  // namespace lizard

#endif  // LIZARD_HAVE_SQLITE
