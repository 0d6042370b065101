#include "server/dataset_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <system_error>

#include <spdlog/spdlog.h>

#include "common/write_fully.h"
#include "dataset/dataset_file.h"
#include "dataset/input_file.h"
#include "dataset/npy.h"
#include "server/durable_write.h"
#include "server/ownership_json.h"

namespace fs = std::filesystem;

namespace lizard {

using nlohmann::json;

namespace {

std::string random_id() {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  static const char* kHex = "0123456789abcdef";
  std::string id = "u";
  uint64_t v = rng();
  for (int i = 0; i < 12; ++i, v >>= 4) id.push_back(kHex[v & 15]);
  return id;
}

bool valid_id(const std::string& id) {
  if (id.empty() || id.size() > 64 || id[0] == '.') return false;
  for (char c : id)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
  return true;
}

// Describes an .npy file from its header.
Result<json> describe_npy(const std::string& path) {
  LIZARD_ASSIGN_OR_RETURN(InputFile f, InputFile::open(path));
  LIZARD_ASSIGN_OR_RETURN(NpyHeader h, read_npy_header(f));
  if (h.data_offset + h.data_bytes() != f.size())
    return invalid_argument("the .npy data is " + std::to_string(f.size() - h.data_offset) +
                            " bytes; its header says " + std::to_string(h.data_bytes()));
  return json{{"format", "npy"}, {"dtype", dtype_name(h.dtype)}, {"shape", h.shape}};
}

// An upload's body on its way to the page cache; the store flushes it to
// disk after the commit (server/upload_syncer.h).  Any failure closes and
// removes the file, so that a full disk gets its space back at once.
class UploadFile : public UploadSink {
 public:
  UploadFile(std::string id, std::string path, int fd)
      : id_(std::move(id)), path_(std::move(path)), fd_(fd) {}
  ~UploadFile() override {
    if (fd_ >= 0) discard();  // cut short: never finished
  }

  const std::string& path() const override { return path_; }

  Status write(const char* data, size_t size) override {
    if (fd_ < 0) return internal_error("upload " + id_ + " is closed");
    if (storage_write_fails()) return fail(ENOSPC);
    const int err = write_fully(fd_, data, size);
    if (err != 0) return fail(err);
    return Status::Ok();
  }

  Status finish() override {
    if (fd_ < 0) return internal_error("upload " + id_ + " is closed");
    if (storage_write_fails()) return fail(ENOSPC);
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) {  // NFS may say only now that there was no room
      const int err = errno;
      ::unlink(path_.c_str());
      return error_for(err);
    }
    return Status::Ok();
  }

 private:
  Status error_for(int err) const {
    if (err == ENOSPC || err == EDQUOT) return disk_full_error("upload " + id_);
    return internal_error("cannot write upload " + id_ + " to " + path_ + ": " +
                          std::strerror(err));
  }
  Status fail(int err) {
    discard();
    return error_for(err);
  }
  void discard() {
    ::close(fd_);
    fd_ = -1;
    ::unlink(path_.c_str());
  }

  const std::string id_, path_;
  int fd_;
};

}  // namespace

DatasetStore::DatasetStore(std::string state_dir)
    : dir_((fs::path(state_dir) / "datasets").string()), syncer_(dir_) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (auto id = StateDirIdentity::take(state_dir, "the state directory"); id.ok())
    state_dir_identity_ = std::move(id).value();
  for (const auto& e : fs::directory_iterator(dir_, ec)) {
    if (e.path().extension() == ".part") fs::remove(e.path(), ec);  // an upload cut short
    if (e.path().string().find(".json.tmp.") != std::string::npos) fs::remove(e.path(), ec);
    if (e.path().extension() != ".json") continue;
    std::ifstream in(e.path());
    json meta = json::parse(in, nullptr, false);
    const bool valid = meta.is_object() && meta.value("id", json()).is_string() &&
                       meta.value("file", json()).is_string() &&
                       meta.value("format", json()).is_string();
    if (!valid) {  // not written by this server: left alone
      spdlog::warn("skipping dataset description {}: not one this server wrote", e.path().string());
      continue;
    }
    const std::string id = meta["id"].get<std::string>();
    if (syncer_.marked(id) && !kept_after_stop(meta)) continue;
    datasets_[id] = meta;
  }
  // Markers whose description never got written: their uploads were never listed.
  for (const auto& e : fs::directory_iterator(dir_, ec))
    if (e.path().extension() == ".syncing" && !datasets_.count(e.path().stem().string()))
      fs::remove(e.path(), ec);
}

// An upload the server stopped before flushing (a crash, a power cut): kept,
// and flushed now, when its file is whole; else removed, with why.
bool DatasetStore::kept_after_stop(const json& meta) {
  const std::string id = meta["id"].get<std::string>();
  Status whole = UploadSyncer::check_whole(meta);
  if (whole.ok()) {
    syncer_.sync_now(id, meta["file"].get<std::string>());
    return true;
  }
  spdlog::warn("removing upload {}: the server stopped before it was on disk, and {}", id,
               whole.message());
  std::error_code ec;
  fs::remove(meta["file"].get<std::string>(), ec);
  fs::remove(fs::path(dir_) / (id + ".json"), ec);
  syncer_.unmark(id);
  return false;
}

std::string DatasetStore::reserve(std::string* id) {
  *id = random_id();
  return (fs::path(dir_) / (*id + ".part")).string();
}

Result<std::unique_ptr<UploadSink>> DatasetStore::open_upload(std::string* id) {
  LIZARD_RETURN_IF_ERROR(state_dir_identity_.check());
  const std::string path = reserve(id);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (errno == ENOSPC || errno == EDQUOT) return disk_full_error("upload " + *id);
    return internal_error("cannot create " + path + ": " + std::strerror(errno));
  }
  return std::unique_ptr<UploadSink>(std::make_unique<UploadFile>(*id, path, fd));
}

Result<json> DatasetStore::commit(const std::string& id, const std::string& part,
                                  const std::string& format, const std::string& digest,
                                  const std::string& owner, const std::vector<std::string>& share) {
  std::error_code ec;
  auto fail = [&](const Status& s) {
    fs::remove(part, ec);
    return s;
  };
  if (!format.empty() && format != "npy" && format != "raw")
    return fail(invalid_argument("format must be npy or raw (got '" + format + "')"));
  json meta;
  if (format != "raw") {
    auto npy = describe_npy(part);
    if (!npy.ok())
      return fail(invalid_argument("the upload is not a valid .npy file (" +
                                   npy.status().message() +
                                   "); send ?format=raw for raw little-endian rows"));
    meta = npy.value();
  } else {
    meta = {{"format", "raw"}};
  }
  if (Status gone = state_dir_identity_.check(); !gone.ok()) return fail(gone);
  const std::string ext = meta["format"] == "npy" ? ".npy" : ".raw";
  const fs::path final_path = fs::path(dir_) / (id + ext);
  fs::rename(part, final_path, ec);
  if (ec) return fail(internal_error("cannot store the upload: " + ec.message()));
  meta["id"] = id;
  meta["bytes"] = fs::file_size(final_path, ec);
  meta["file"] = final_path.string();
  if (!digest.empty()) meta["digest"] = digest;
  if (!owner.empty()) meta["owner"] = owner;
  if (!share.empty()) meta["share"] = share;
  // The description makes the upload exist after a restart: written whole or
  // not at all, and without it the data goes too.  Bytes that can be
  // checked again (a digest) go to disk after the answer, marked until then;
  // others before it.
  Status st = digest.empty() ? Status::Ok() : syncer_.mark(id);
  if (st.ok() && digest.empty()) syncer_.sync_now(id, final_path.string());
  if (st.ok())
    st = write_file_durably((fs::path(dir_) / (id + ".json")).string(), meta.dump(),
                            "the description of upload " + id);
  if (!st.ok()) {
    fs::remove(final_path, ec);
    syncer_.unmark(id);
    return st;
  }
  if (!digest.empty()) syncer_.sync_later(id, final_path.string());
  std::lock_guard<std::mutex> l(mu_);
  datasets_[id] = meta;
  return meta;
}

void DatasetStore::wait_on_disk() {
  syncer_.wait_idle();
}

json DatasetStore::list(const std::string& digest) const {
  std::lock_guard<std::mutex> l(mu_);
  json out = json::array();
  for (const auto& [id, meta] : datasets_)
    if (digest.empty() || meta.value("digest", "") == digest) out.push_back(meta);
  return out;
}

Result<json> DatasetStore::get(const std::string& id) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = datasets_.find(id);
  if (it == datasets_.end()) return not_found("no such dataset: " + id);
  return it->second;
}

Result<Ownership> DatasetStore::access_of(const std::string& id) const {
  LIZARD_ASSIGN_OR_RETURN(json meta, get(id));
  return ownership_in(meta);
}

Status DatasetStore::remove(const std::string& id) {
  if (!valid_id(id)) return not_found("no such dataset: " + id);
  std::lock_guard<std::mutex> l(mu_);
  auto it = datasets_.find(id);
  if (it == datasets_.end()) return not_found("no such dataset: " + id);
  std::error_code ec;
  fs::remove(it->second.value("file", ""), ec);
  fs::remove(fs::path(dir_) / (id + ".json"), ec);
  syncer_.unmark(id);
  datasets_.erase(it);
  return Status::Ok();
}

Result<std::pair<std::string, FileFormat>> DatasetStore::lookup(const std::string& id) const {
  LIZARD_ASSIGN_OR_RETURN(json meta, get(id));
  return std::make_pair(meta.value("file", ""),
                        meta.value("format", "") == "npy" ? FileFormat::kNpy : FileFormat::kRaw);
}

}  // namespace lizard
