#include "dataset/file_identity.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace lizard {
namespace {

int64_t nanoseconds(const struct timespec& t) {
  return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
}

// 1764312345.000000123: seconds since the epoch, to the nanosecond.
std::string time_text(int64_t ns) {
  char text[48];
  std::snprintf(text, sizeof text, "%lld.%09lld", static_cast<long long>(ns / 1000000000),
                static_cast<long long>(ns % 1000000000));
  return text;
}

void note(std::string* out, const char* what, const std::string& was, const std::string& now) {
  if (was == now) return;
  if (!out->empty()) *out += ", ";
  *out += std::string(what) + " " + was + " -> " + now;
}

}  // namespace

Result<FileIdentity> FileIdentity::of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return not_found(path + ": " + std::strerror(errno));
  return of(st);
}

FileIdentity FileIdentity::of(const struct ::stat& st) {
  FileIdentity id;
  id.device = static_cast<uint64_t>(st.st_dev);
  id.inode = static_cast<uint64_t>(st.st_ino);
  id.size = static_cast<uint64_t>(st.st_size);
  id.mtime_ns = nanoseconds(st.st_mtim);
  id.ctime_ns = nanoseconds(st.st_ctim);
  return id;
}

std::string FileIdentity::key_prefix() const {
  return "file:" + std::to_string(device) + ":" + std::to_string(inode) + ":" +
         std::to_string(size) + ":" + std::to_string(mtime_ns) + ":" + std::to_string(ctime_ns) +
         ":";
}

std::string version_changes(const FileIdentity& was, const FileIdentity& now) {
  std::string out;
  note(&out, "size", std::to_string(was.size), std::to_string(now.size));
  note(&out, "inode", std::to_string(was.inode), std::to_string(now.inode));
  note(&out, "mtime", time_text(was.mtime_ns), time_text(now.mtime_ns));
  note(&out, "ctime", time_text(was.ctime_ns), time_text(now.ctime_ns));
  return out;
}

Status check_pinned(const PinnedFile& pin, const FileIdentity& now) {
  const std::string changes = version_changes(pin.identity, now);
  if (changes.empty()) return Status::Ok();
  return Status(Code::kConflict, pin.path + " changed since the run first read it: " + changes +
                                     " (a run reads one version of its files; run again)");
}

}  // namespace lizard
