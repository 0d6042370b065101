#include "server/upload_syncer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include <spdlog/spdlog.h>

#include "common/piece_digest.h"
#include "dataset/input_file.h"
#include "server/durable_write.h"

namespace fs = std::filesystem;

namespace lizard {
namespace {

// fsync of a file, and of its directory (where its rename went).
void flush_to_disk(const std::string& file) {
  for (const std::string& path : {file, fs::path(file).parent_path().string()}) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;  // removed meanwhile: nothing to keep
    if (::fsync(fd) != 0) spdlog::warn("cannot flush {} to disk: {}", path, std::strerror(errno));
    ::close(fd);
  }
}

}  // namespace

UploadSyncer::UploadSyncer(std::string dir) : dir_(std::move(dir)) {
  thread_ = std::thread([this] { run(); });
}

UploadSyncer::~UploadSyncer() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

std::string UploadSyncer::marker(const std::string& id) const {
  return (fs::path(dir_) / (id + ".syncing")).string();
}

bool UploadSyncer::marked(const std::string& id) const {
  std::error_code ec;
  return fs::exists(marker(id), ec);
}

Status UploadSyncer::mark(const std::string& id) {
  return write_file_durably(marker(id), "", "the marker of upload " + id);
}

void UploadSyncer::sync_later(const std::string& id, std::string file) {
  {
    std::lock_guard<std::mutex> l(mu_);
    queue_.emplace_back(id, std::move(file));
  }
  cv_.notify_all();
}

void UploadSyncer::sync_now(const std::string& id, const std::string& file) {
  flush_to_disk(file);
  unmark(id);
}

void UploadSyncer::unmark(const std::string& id) {
  std::error_code ec;
  fs::remove(marker(id), ec);
}

void UploadSyncer::wait_idle() {
  std::unique_lock<std::mutex> l(mu_);
  cv_.wait(l, [&] { return queue_.empty() && !busy_; });
}

// Drains the queue before it stops, so that a clean stop leaves no marker.
void UploadSyncer::run() {
  std::unique_lock<std::mutex> l(mu_);
  for (;;) {
    cv_.wait(l, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping
    auto [id, file] = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    l.unlock();
    sync_now(id, file);
    l.lock();
    busy_ = false;
    cv_.notify_all();
  }
}

Status UploadSyncer::check_whole(const nlohmann::json& meta) {
  const std::string file = meta.value("file", "");
  const std::string digest = meta.value("digest", "");
  if (digest.empty()) return internal_error("its description has no digest to check it by");
  LIZARD_ASSIGN_OR_RETURN(InputFile f, InputFile::open(file));
  const uint64_t bytes = meta.value("bytes", uint64_t{0});
  if (f.size() != bytes)
    return internal_error("its file has " + std::to_string(f.size()) + " bytes of the " +
                          std::to_string(bytes) + " it had");
  PieceDigest d;
  std::vector<char> buf(PieceDigest::kPieceBytes);
  for (uint64_t at = 0; at < bytes;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(buf.size(), bytes - at));
    LIZARD_RETURN_IF_ERROR(f.read_at(at, n, buf.data()));
    d.update(buf.data(), n);
    at += n;
  }
  if (d.hex_digest() != digest) return internal_error("its bytes are not those it was sent with");
  return Status::Ok();
}

}  // namespace lizard
