#include "dataset/data_roots.h"

#include <filesystem>

namespace lizard {

namespace fs = std::filesystem;

Result<DataRoots> DataRoots::make(const std::vector<std::string>& dirs, const std::string& who) {
  DataRoots out;
  out.who_ = who;
  for (const auto& d : dirs) {
    std::error_code ec;
    fs::path p = fs::canonical(d, ec);
    if (ec || !fs::is_directory(p, ec))
      return invalid_argument("--data-root " + d + ": not a directory");
    out.roots_.push_back(p.string());
  }
  return out;
}

Status DataRoots::check(const std::string& path) const {
  if (roots_.empty()) return Status::Ok();
  const Status refusal =
      permission_denied("dataset path is outside the " + who_ + "'s data roots (--data-root)");
  if (path.empty() || path.find('\0') != std::string::npos) return refusal;
  std::error_code ec;
  fs::path abs = fs::absolute(path, ec);
  if (ec) return refusal;
  // Symlinks in the part that exists are resolved; the rest is normalised.
  fs::path real = fs::weakly_canonical(abs, ec);
  if (ec) return refusal;
  for (const auto& root : roots_) {
    fs::path rel = real.lexically_relative(root);
    if (rel.empty() || rel == ".") continue;  // not below it, or the root itself
    if (*rel.begin() == "..") continue;
    return Status::Ok();
  }
  return refusal;
}

}  // namespace lizard
