#include "server/run_store.h"

#include <spdlog/spdlog.h>

#include "common/clock.h"
#include "server/durable_write.h"
#include "server/run_store_detail.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
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

namespace lizard {
namespace run_store_detail {

namespace fs = std::filesystem;
using nlohmann::json;

std::string to_text(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

Status check_name(const std::string& what, const std::string& name) {
  bool ok = !name.empty() && name.size() <= 200 && name[0] != '.';
  for (char c : name)
    ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.');
  if (ok) return Status::Ok();
  return invalid_argument("invalid " + what + " '" + name +
                          "': use letters, digits, '_', '-' and '.', not starting with '.'");
}

Status create_dirs(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return internal_error("cannot create directory " + dir.string() + ": " + ec.message());
  return Status::Ok();
}

Status write_file_atomically(const fs::path& path, const std::string& bytes) {
  return write_file_durably(path.string(), bytes, path.string());
}

Result<std::string> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return internal_error("cannot read " + path.string() + ": " + std::strerror(errno));
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) return internal_error("cannot read " + path.string() + ": " + std::strerror(errno));
  return s.str();
}

Result<std::string> read_first_line(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return internal_error("cannot read " + path.string() + ": " + std::strerror(errno));
  std::string line;
  std::getline(in, line);
  if (in.bad()) return internal_error("cannot read " + path.string() + ": " + std::strerror(errno));
  return line;
}

fs::path runs_dir(const std::string& state_dir) {
  return fs::path(state_dir) / "runs";
}

Status prepare_state_dir(const std::string& state_dir) {
  LIZARD_RETURN_IF_ERROR(create_dirs(runs_dir(state_dir)));
  const fs::path probe = runs_dir(state_dir) / ".write-test";
  LIZARD_RETURN_IF_ERROR(write_file_atomically(probe, ""));
  ::unlink(probe.c_str());
  return Status::Ok();
}

}  // namespace run_store_detail

namespace {

using namespace run_store_detail;
namespace fs = std::filesystem;
using nlohmann::json;

constexpr int kSchemaVersion = 1;  // of the JSON files

// ---- JSON files -------------------------------------------------------------

class FileRunStore : public RunStore {
 public:
  explicit FileRunStore(std::string state_dir) : RunStore(std::move(state_dir)) {}

  Status save(const std::string& run_id, uint64_t seq, const std::string& status,
              const json& record) override {
    LIZARD_RETURN_IF_ERROR(check_name("run id", run_id));
    return write_record(run_id, seq, status, record, nullptr);
  }

  // A finished run in one write: its record, followed by the bytes of its
  // fields of up to kInlineFieldBytes (as the SQLite store keeps them in its
  // database), so that a run's end costs one fsync rather than one a field.
  // Larger fields are files of their own, as save_blob writes them.
  Status save_finished(const std::string& run_id, uint64_t seq, const std::string& status,
                       const json& record, const std::vector<FieldBytes>& fields) override {
    LIZARD_RETURN_IF_ERROR(check_name("run id", run_id));
    std::vector<NamedBytes> small;
    for (const FieldBytes& f : fields) {
      LIZARD_RETURN_IF_ERROR(check_name("field name", f.name));
      if (f.size() <= kInlineFieldBytes)
        small.emplace_back(f.name, f.joined());
      else
        LIZARD_RETURN_IF_ERROR(save_blob_file(run_id, f.name, f.head, f.data));
    }
    LIZARD_RETURN_IF_ERROR(write_record(run_id, seq, status, record, &small));
    return drop_checkpoint(run_id);
  }

  Result<std::string> load_blob(const std::string& run_id,
                                const std::string& field) const override {
    LIZARD_RETURN_IF_ERROR(check_name("run id", run_id));
    LIZARD_RETURN_IF_ERROR(check_name("field name", field));
    {
      std::lock_guard<std::mutex> l(mu_of(run_id));
      for (auto& [name, bytes] : stored_fields(run_id))
        if (name == field) return std::move(bytes);
    }
    return RunStore::load_blob(run_id, field);
  }

  // Takes no lock: every file it reads is replaced whole (by rename).
  Result<std::vector<StoredRun>> load_all() const override {
    std::vector<StoredRun> out;
    std::error_code ec;
    for (const auto& f : fs::directory_iterator(runs_dir(state_dir_), ec)) {
      if (f.path().extension() != ".json" || !f.is_regular_file()) continue;
      // The JSON line only: a finished run's fields follow it.
      LIZARD_ASSIGN_OR_RETURN(std::string text, read_first_line(f.path()));
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
      StoredRun r{j["id"].get<std::string>(),
                  j["seq"].get<uint64_t>(),
                  j["status"].get<std::string>(),
                  std::move(j["record"]),
                  nullptr,
                  std::nullopt};
      LIZARD_RETURN_IF_ERROR(load_extras(&r));
      out.push_back(std::move(r));
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
    LIZARD_RETURN_IF_ERROR(health());
    std::lock_guard<std::mutex> l(mu_of(run_id));
    std::error_code ec;
    fs::remove(record_path(run_id), ec);
    if (ec) return internal_error("cannot remove run " + run_id + ": " + ec.message());
    fs::remove(extra_path(run_id, ".request"), ec);
    fs::remove(extra_path(run_id, ".checkpoint"), ec);
    return remove_blobs(run_id);
  }

  Status save_request(const std::string& run_id, const json& body) override {
    LIZARD_RETURN_IF_ERROR(check_name("run id", run_id));
    LIZARD_RETURN_IF_ERROR(health());
    std::lock_guard<std::mutex> l(mu_of(run_id));
    return write_file_atomically(extra_path(run_id, ".request"), to_text(body))
        .with_context("saving the request of run " + run_id);
  }

  // One line of JSON (iteration, done, section sizes), then the sections' bytes.
  Status save_checkpoint(const std::string& run_id, const RunCheckpoint& cp) override {
    LIZARD_RETURN_IF_ERROR(check_name("run id", run_id));
    LIZARD_RETURN_IF_ERROR(health());
    json head = {{"iteration", cp.iteration},
                 {"done", cp.done},
                 {"state_bytes", cp.state.size()},
                 {"aggregate_bytes", cp.aggregate.size()}};
    std::string bytes = head.dump() + "\n" + cp.state + cp.aggregate;
    std::lock_guard<std::mutex> l(mu_of(run_id));
    return write_file_atomically(extra_path(run_id, ".checkpoint"), bytes)
        .with_context("saving the checkpoint of run " + run_id);
  }

  Status drop_checkpoint(const std::string& run_id) override {
    LIZARD_RETURN_IF_ERROR(check_name("run id", run_id));
    LIZARD_RETURN_IF_ERROR(health());
    std::lock_guard<std::mutex> l(mu_of(run_id));
    std::error_code ec;
    fs::remove(extra_path(run_id, ".checkpoint"), ec);
    return Status::Ok();
  }

 private:
  fs::path record_path(const std::string& run_id) const {
    return runs_dir(state_dir_) / (run_id + ".json");
  }
  fs::path extra_path(const std::string& run_id, const char* ext) const {
    return runs_dir(state_dir_) / (run_id + ext);
  }

  // The record file: one line of JSON, then the bytes of the fields that
  // save_finished() kept in it, in the order its "inline_fields" lists them.
  // `fields` null: those the stored record has are kept (a finished run's
  // record saved again, as a restart's restore does, loses none).
  Status write_record(const std::string& run_id, uint64_t seq, const std::string& status,
                      const json& record, const std::vector<NamedBytes>* fields) {
    LIZARD_RETURN_IF_ERROR(health());
    json j = {{"schema", kSchemaVersion}, {"id", run_id},    {"seq", seq}, {"status", status},
              {"updated_at", now_iso()},  {"record", record}};
    std::lock_guard<std::mutex> l(mu_of(run_id));
    // Only a finished run has fields in its record: the saves of a queued or
    // running one read nothing back.
    std::vector<NamedBytes> kept;
    const bool finished = status == "done" || status == "failed" || status == "cancelled";
    if (!fields && finished) kept = stored_fields(run_id);
    if (!fields) fields = &kept;
    std::string tail;
    if (!fields->empty()) {
      json index = json::array();
      for (const auto& [name, bytes] : *fields) {
        index.push_back({name, bytes.size()});
        tail += bytes;
      }
      j["inline_fields"] = std::move(index);
    }
    return write_file_atomically(record_path(run_id), to_text(j) + "\n" + tail)
        .with_context("saving run " + run_id);
  }

  // The fields kept in the run's record file; none where it has none (or
  // the file is not whole).  mu_of(run_id) held.
  std::vector<NamedBytes> stored_fields(const std::string& run_id) const {
    std::error_code ec;
    if (!fs::is_regular_file(record_path(run_id), ec)) return {};
    auto bytes = read_file(record_path(run_id));
    if (!bytes.ok()) return {};
    const size_t eol = bytes->find('\n');
    if (eol == std::string::npos) return {};
    const json head = json::parse(bytes->substr(0, eol), nullptr, false);
    if (!head.is_object() || !head.contains("inline_fields")) return {};
    std::vector<NamedBytes> out;
    size_t at = eol + 1;
    for (const json& f : head["inline_fields"]) {
      if (!f.is_array() || f.size() != 2 || !f[0].is_string() || !f[1].is_number_unsigned())
        return {};
      const size_t n = f[1].get<size_t>();
      if (at + n > bytes->size()) return {};
      out.emplace_back(f[0].get<std::string>(), bytes->substr(at, n));
      at += n;
    }
    return out;
  }

  // The run's request and checkpoint, where they were saved.
  Status load_extras(StoredRun* r) const {
    std::error_code ec;
    if (fs::is_regular_file(extra_path(r->id, ".request"), ec)) {
      LIZARD_ASSIGN_OR_RETURN(std::string text, read_file(extra_path(r->id, ".request")));
      r->request = json::parse(text, nullptr, false);
      if (r->request.is_discarded()) r->request = nullptr;
    }
    if (!fs::is_regular_file(extra_path(r->id, ".checkpoint"), ec)) return Status::Ok();
    LIZARD_ASSIGN_OR_RETURN(std::string bytes, read_file(extra_path(r->id, ".checkpoint")));
    const size_t eol = bytes.find('\n');
    json head = json::parse(bytes.substr(0, eol), nullptr, false);
    if (eol == std::string::npos || !head.is_object()) return Status::Ok();
    const size_t ns = head.value("state_bytes", size_t{0}),
                 na = head.value("aggregate_bytes", size_t{0});
    if (bytes.size() != eol + 1 + ns + na) return Status::Ok();
    r->checkpoint = RunCheckpoint{head.value("iteration", int64_t{0}), head.value("done", false),
                                  bytes.substr(eol + 1, ns), bytes.substr(eol + 1 + ns, na)};
    return Status::Ok();
  }

  // A run's files are written under a lock of their own (one of kStripes,
  // by run id), so that the writes of different runs (a finishing run's
  // record, another's checkpoint) never wait for each other's fsync.
  static constexpr size_t kStripes = 64;
  std::mutex& mu_of(const std::string& run_id) const {
    return stripes_[std::hash<std::string>{}(run_id) % kStripes];
  }
  mutable std::array<std::mutex, kStripes> stripes_;
};

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
  return open_sqlite_store(state_dir);
#else
  return unavailable("cannot open the run store in " + state_dir +
                     " with SQLite: lizard was built without it");
#endif
}

Result<std::unique_ptr<RunStore>> RunStore::open_files(const std::string& state_dir) {
  LIZARD_RETURN_IF_ERROR(prepare_state_dir(state_dir).with_context("run store"));
  auto store = std::make_unique<FileRunStore>(state_dir);
  LIZARD_RETURN_IF_ERROR(
      static_cast<RunStore*>(store.get())->finish_opening().with_context("run store"));
  return std::unique_ptr<RunStore>(std::move(store));
}

Status RunStore::health() const {
  return dir_identity_.check();
}

namespace {
fs::path reserved_space_path(const std::string& state_dir) {
  return fs::path(state_dir) / "reserved-space";
}
}  // namespace

bool RunStore::release_reserved_space() {
  return ::unlink(reserved_space_path(state_dir_).c_str()) == 0;
}

Status RunStore::finish_opening() {
  LIZARD_ASSIGN_OR_RETURN(dir_identity_, StateDirIdentity::take(state_dir_, "the state directory"));
  const fs::path path = reserved_space_path(state_dir_);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  const int err = fd < 0 ? errno : ::posix_fallocate(fd, 0, static_cast<off_t>(kReservedBytes));
  if (fd >= 0) ::close(fd);
  if (err != 0) {
    ::unlink(path.c_str());
    spdlog::warn(
        "cannot reserve {} KiB in {} ({}): a run that meets a full disk may not be able "
        "to store its failure",
        kReservedBytes >> 10, state_dir_, std::strerror(err));
  }
  return Status::Ok();
}

Status RunStore::save_finished(const std::string& run_id, uint64_t seq, const std::string& status,
                               const nlohmann::json& record,
                               const std::vector<FieldBytes>& fields) {
  for (const FieldBytes& f : fields)
    LIZARD_RETURN_IF_ERROR(save_blob_file(run_id, f.name, f.head, f.data));
  LIZARD_RETURN_IF_ERROR(save(run_id, seq, status, record));
  return drop_checkpoint(run_id);
}

Status RunStore::save_blob(const std::string& run_id, const std::string& field,
                           const std::string& bytes) {
  return save_blob_file(run_id, field, bytes, {});
}

Status RunStore::save_blob_file(const std::string& run_id, const std::string& field,
                                std::string_view head, std::string_view data) {
  LIZARD_RETURN_IF_ERROR(check_name("run id", run_id));
  LIZARD_RETURN_IF_ERROR(check_name("field name", field));
  LIZARD_RETURN_IF_ERROR(health());
  const fs::path dir = runs_dir(state_dir_) / run_id;
  LIZARD_RETURN_IF_ERROR(create_dirs(dir));
  const fs::path path = dir / (field + ".npy");
  const std::string_view parts[] = {head, data};
  return write_file_durably(path.string(), parts, 2, path.string())
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
