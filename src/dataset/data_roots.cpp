#include "dataset/data_roots.h"

#include <filesystem>

namespace lizard {

namespace fs = std::filesystem;

Result<DataRoots> DataRoots::of_server(const std::vector<std::string>& dirs) {
  auto roots = make(dirs, "server");
  if (!roots.ok())
    return roots.status().with_context("the server's data roots are not all directories here");
  return roots;
}

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

Status DataRoots::refusal(const std::string& who) {
  return permission_denied("dataset path is outside the " + who + "'s data roots (--data-root)");
}

std::string DataRoots::root_of(const std::string& real) const {
  for (const auto& root : roots_) {
    fs::path rel = fs::path(real).lexically_relative(root);
    if (rel.empty() || rel == ".") continue;  // not below it, or the root itself
    if (*rel.begin() == "..") continue;
    return root;
  }
  return "";
}

Status DataRoots::check(const std::string& path) const {
  return locate(path).status();
}

Result<DataRoots::Located> DataRoots::locate(const std::string& path, const DataRoots* also) const {
  const DataRoots* other = also && also->confined() ? also : nullptr;
  if (!confined() && !other) return Located{path, "", "", ""};
  const DataRoots& first = confined() ? *this : *other;
  if (path.empty() || path.find('\0') != std::string::npos) return refusal(first.who_);
  std::error_code ec;
  fs::path abs = fs::absolute(path, ec);
  if (ec) return refusal(first.who_);
  // Symlinks in the part that exists are resolved; the rest is normalised.
  const std::string real = fs::weakly_canonical(abs, ec).string();
  if (ec) return refusal(first.who_);
  Located at{path, "", "", ""};
  for (const DataRoots* r : {this, other}) {
    if (!r || !r->confined()) continue;
    std::string root = r->root_of(real);
    if (root.empty()) return refusal(r->who_);
    if (at.root.empty()) {
      at.root = root;
      at.who = r->who_;
    }
  }
  at.relative = fs::path(real).lexically_relative(at.root).string();
  return at;
}

Result<InputFile> DataRoots::open(const Located& at, BeneathMethod method) const {
  if (at.root.empty()) return InputFile::open(at.path);
  auto file = open_beneath(at.root, at.relative, method, at.path);
  if (!file.ok() && file.status().code() == Code::kPermissionDenied)
    return Status(Code::kPermissionDenied,
                  refusal(at.who).message() + ": a symlink in it changed as it was opened");
  return file;
}

Result<InputFile> DataRoots::open(const std::string& path, const DataRoots* also) const {
  LIZARD_ASSIGN_OR_RETURN(Located at, locate(path, also));
  return open(at, BeneathMethod::kBest);
}

}  // namespace lizard
