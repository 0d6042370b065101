#include "server/run_store.h"
#include "common/clock.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

#ifdef LIZARD_HAVE_SQLITE
#include <sqlite3.h>
#endif

namespace lizard {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int kSchemaVersion = 1;

// Records carry text from outside (compiler and worker messages), so bytes
// that are not UTF-8 are replaced rather than refused.
std::string to_text(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

// Run ids and field names become file names, so they must not reach outside
// their directory.
Status check_name(const std::string& what, const std::string& name) {
  bool ok = !name.empty() && name.size() <= 200 && name[0] != '.';
  for (char c : name)
    ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.');
  if (ok) return Status::Ok();
  return invalid_argument("invalid " + what + " '" + name +
                          "': use letters, digits, '_', '-' and '.', not starting with '.'");
}

std::string errno_text() {
  return std::strerror(errno);
}

// Writes `bytes` to a fresh temporary file beside `path`, flushes it to disk
// and renames it over `path`, so readers see the old or the new content.
Status write_file_atomically(const fs::path& path, const std::string& bytes) {
  static std::atomic<uint64_t> counter{0};
  const fs::path tmp = path.string() + ".tmp." + std::to_string(::getpid()) + "." +
                       std::to_string(counter.fetch_add(1));
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return internal_error("cannot create " + tmp.string() + ": " + errno_text());
  const char* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    p += n;
    left -= static_cast<size_t>(n);
  }
  Status st;
  if (left > 0 || ::fsync(fd) != 0)
    st = internal_error("cannot write " + tmp.string() + ": " + errno_text());
  ::close(fd);
  if (st.ok() && ::rename(tmp.c_str(), path.c_str()) != 0)
    st = internal_error("cannot rename " + tmp.string() + " to " + path.string() + ": " +
                        errno_text());
  if (!st.ok()) ::unlink(tmp.c_str());
  return st;
}

Result<std::string> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return internal_error("cannot read " + path.string() + ": " + errno_text());
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) return internal_error("cannot read " + path.string() + ": " + errno_text());
  return s.str();
}

Status create_dirs(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return internal_error("cannot create directory " + dir.string() + ": " + ec.message());
  return Status::Ok();
}

fs::path runs_dir(const std::string& state_dir) {
  return fs::path(state_dir) / "runs";
}

// Creates the store's directories and proves they are writable, so that a bad
// --state-dir is reported at startup rather than at the first run.
Status prepare_state_dir(const std::string& state_dir) {
  LIZARD_RETURN_IF_ERROR(create_dirs(runs_dir(state_dir)));
  const fs::path probe = runs_dir(state_dir) / ".write-test";
  LIZARD_RETURN_IF_ERROR(write_file_atomically(probe, ""));
  ::unlink(probe.c_str());
  return Status::Ok();
}

// ---- JSON files -------------------------------------------------------------

class FileRunStore : public RunStore {
 public:
  explicit FileRunStore(std::string state_dir) : RunStore(std::move(state_dir)) {}

  Status save(const std::string& run_id, uint64_t seq, const std::string& status,
              const json& record) override {
    LIZARD_RETURN_IF_ERROR(check_name("run id", run_id));
    json j = {{"schema", kSchemaVersion}, {"id", run_id},    {"seq", seq}, {"status", status},
              {"updated_at", now_iso()},  {"record", record}};
    std::lock_guard<std::mutex> l(mu_);
    return write_file_atomically(record_path(run_id), to_text(j))
        .with_context("saving run " + run_id);
  }

  Result<std::vector<StoredRun>> load_all() const override {
    std::lock_guard<std::mutex> l(mu_);
    std::vector<StoredRun> out;
    std::error_code ec;
    for (const auto& f : fs::directory_iterator(runs_dir(state_dir_), ec)) {
      if (f.path().extension() != ".json" || !f.is_regular_file()) continue;
      LIZARD_ASSIGN_OR_RETURN(std::string text, read_file(f.path()));
      json j = json::parse(text, nullptr, false);
      const bool valid = j.is_object() && j.value("schema", 0) == kSchemaVersion &&
                         j.contains("record") && j["id"].is_string() &&
                         j["seq"].is_number_unsigned() && j["status"].is_string();
      if (!valid) {
        if (j.is_object() && j.value("schema", 0) > kSchemaVersion)
          return internal_error("run record " + f.path().string() +
                                " was written by a newer lizard (schema version " +
                                std::to_string(j.value("schema", 0)) + ")");
        return internal_error("corrupt run record " + f.path().string());
      }
      out.push_back({j["id"].get<std::string>(), j["seq"].get<uint64_t>(),
                     j["status"].get<std::string>(), std::move(j["record"])});
    }
    if (ec)
      return internal_error("cannot list " + runs_dir(state_dir_).string() + ": " + ec.message());
    std::sort(out.begin(), out.end(), [](const StoredRun& a, const StoredRun& b) {
      return a.seq != b.seq ? a.seq < b.seq : a.id < b.id;
    });
    return out;
  }

  Status remove(const std::string& run_id) override {
    LIZARD_RETURN_IF_ERROR(check_name("run id", run_id));
    std::lock_guard<std::mutex> l(mu_);
    std::error_code ec;
    fs::remove(record_path(run_id), ec);
    if (ec) return internal_error("cannot remove run " + run_id + ": " + ec.message());
    return remove_blobs(run_id);
  }

 private:
  fs::path record_path(const std::string& run_id) const {
    return runs_dir(state_dir_) / (run_id + ".json");
  }

  mutable std::mutex mu_;
};

// ---- SQLite -----------------------------------------------------------------

#ifdef LIZARD_HAVE_SQLITE

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

class SqliteRunStore : public RunStore {
 public:
  explicit SqliteRunStore(std::string state_dir) : RunStore(std::move(state_dir)) {}
  ~SqliteRunStore() override {
    upsert_.reset();
    select_all_.reset();
    delete_.reset();
    if (db_) sqlite3_close(db_);
  }

  Status init() {
    LIZARD_RETURN_IF_ERROR(prepare_state_dir(state_dir_));
    path_ = (fs::path(state_dir_) / "runs.sqlite3").string();
    int rc =
        sqlite3_open_v2(path_.c_str(), &db_,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
    if (rc != SQLITE_OK) return error("cannot open");
    sqlite3_busy_timeout(db_, 5000);
    LIZARD_RETURN_IF_ERROR(exec("PRAGMA journal_mode=WAL"));
    LIZARD_RETURN_IF_ERROR(exec("PRAGMA synchronous=NORMAL"));
    LIZARD_RETURN_IF_ERROR(migrate());
    LIZARD_RETURN_IF_ERROR(prepare(
        "INSERT OR REPLACE INTO runs(id, seq, status, record, updated_at) VALUES(?, ?, ?, ?, ?)",
        &upsert_));
    LIZARD_RETURN_IF_ERROR(
        prepare("SELECT id, seq, status, record FROM runs ORDER BY seq, id", &select_all_));
    LIZARD_RETURN_IF_ERROR(prepare("DELETE FROM runs WHERE id = ?", &delete_));
    return Status::Ok();
  }

  Status save(const std::string& run_id, uint64_t seq, const std::string& status,
              const json& record) override {
    LIZARD_RETURN_IF_ERROR(check_name("run id", run_id));
    const std::string text = to_text(record);
    const std::string updated_at = now_iso();
    std::lock_guard<std::mutex> l(mu_);
    sqlite3_stmt* s = upsert_.get();
    ResetOnExit reset{s};
    sqlite3_bind_text(s, 1, run_id.data(), static_cast<int>(run_id.size()), SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, static_cast<sqlite3_int64>(seq));
    sqlite3_bind_text(s, 3, status.data(), static_cast<int>(status.size()), SQLITE_STATIC);
    sqlite3_bind_text64(s, 4, text.data(), text.size(), SQLITE_STATIC, SQLITE_UTF8);
    sqlite3_bind_text(s, 5, updated_at.data(), static_cast<int>(updated_at.size()), SQLITE_STATIC);
    if (sqlite3_step(s) != SQLITE_DONE) return error("cannot save run " + run_id + " in");
    return Status::Ok();
  }

  Result<std::vector<StoredRun>> load_all() const override {
    std::lock_guard<std::mutex> l(mu_);
    sqlite3_stmt* s = select_all_.get();
    ResetOnExit reset{s};
    std::vector<StoredRun> out;
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
      StoredRun r;
      r.id = column_text(s, 0);
      r.seq = static_cast<uint64_t>(sqlite3_column_int64(s, 1));
      r.status = column_text(s, 2);
      r.record = json::parse(column_text(s, 3), nullptr, false);
      if (r.record.is_discarded())
        return internal_error("corrupt record of run " + r.id + " in " + path_);
      out.push_back(std::move(r));
    }
    if (rc != SQLITE_DONE) return error("cannot read runs from");
    return out;
  }

  Status remove(const std::string& run_id) override {
    LIZARD_RETURN_IF_ERROR(check_name("run id", run_id));
    std::lock_guard<std::mutex> l(mu_);
    sqlite3_stmt* s = delete_.get();
    ResetOnExit reset{s};
    sqlite3_bind_text(s, 1, run_id.data(), static_cast<int>(run_id.size()), SQLITE_STATIC);
    if (sqlite3_step(s) != SQLITE_DONE) return error("cannot remove run " + run_id + " from");
    return remove_blobs(run_id);
  }

 private:
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
      return exec("PRAGMA user_version = " + std::to_string(kSchemaVersion));
    }();
    LIZARD_RETURN_IF_ERROR(exec(st.ok() ? "COMMIT" : "ROLLBACK"));
    return st;
  }

  Status exec(const std::string& sql) {
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK)
      return error("'" + sql + "' failed on");
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

  static std::string column_text(sqlite3_stmt* s, int col) {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s, col));
    return p ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(s, col))) : std::string();
  }

  std::string path_;
  sqlite3* db_ = nullptr;
  Statement upsert_, select_all_, delete_;
  mutable std::mutex mu_;
};

#endif  // LIZARD_HAVE_SQLITE

}  // namespace

Result<std::unique_ptr<RunStore>> RunStore::open(const std::string& state_dir) {
#ifdef LIZARD_HAVE_SQLITE
  return open_sqlite(state_dir);
#else
  return open_files(state_dir);
#endif
}

Result<std::unique_ptr<RunStore>> RunStore::open_sqlite(const std::string& state_dir) {
#ifdef LIZARD_HAVE_SQLITE
  auto store = std::make_unique<SqliteRunStore>(state_dir);
  LIZARD_RETURN_IF_ERROR(store->init().with_context("run store"));
  return std::unique_ptr<RunStore>(std::move(store));
#else
  return unavailable("cannot open the run store in " + state_dir +
                     " with SQLite: lizard was built without it");
#endif
}

Result<std::unique_ptr<RunStore>> RunStore::open_files(const std::string& state_dir) {
  LIZARD_RETURN_IF_ERROR(prepare_state_dir(state_dir).with_context("run store"));
  return std::unique_ptr<RunStore>(std::make_unique<FileRunStore>(state_dir));
}

Status RunStore::save_blob(const std::string& run_id, const std::string& field,
                           const std::string& bytes) {
  LIZARD_RETURN_IF_ERROR(check_name("run id", run_id));
  LIZARD_RETURN_IF_ERROR(check_name("field name", field));
  const fs::path dir = runs_dir(state_dir_) / run_id;
  LIZARD_RETURN_IF_ERROR(create_dirs(dir));
  return write_file_atomically(dir / (field + ".npy"), bytes)
      .with_context("saving field '" + field + "' of run " + run_id);
}

Result<std::string> RunStore::load_blob(const std::string& run_id, const std::string& field) const {
  LIZARD_RETURN_IF_ERROR(check_name("run id", run_id));
  LIZARD_RETURN_IF_ERROR(check_name("field name", field));
  const fs::path path = runs_dir(state_dir_) / run_id / (field + ".npy");
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    return not_found("run " + run_id + " has no stored field '" + field + "'");
  return read_file(path);
}

Status RunStore::remove_blobs(const std::string& run_id) {
  std::error_code ec;
  fs::remove_all(runs_dir(state_dir_) / run_id, ec);
  if (ec) return internal_error("cannot remove the fields of run " + run_id + ": " + ec.message());
  return Status::Ok();
}

}  // namespace lizard
