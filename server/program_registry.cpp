#include "server/program_registry.h"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <fstream>

#include "common/clock.h"
#include "server/durable_write.h"

namespace lizard {

namespace fs = std::filesystem;
using nlohmann::json;

ProgramRegistry::ProgramRegistry(std::string state_dir, const HostCompiler* compiler,
                                 HookProcessOptions hook_options, uint64_t max_state_bytes)
    : state_dir_(std::move(state_dir)),
      compiler_(compiler),
      hook_options_(std::move(hook_options)),
      max_state_bytes_(max_state_bytes) {
  // Where it exists already; programs stored later check it is still there.
  if (auto id = StateDirIdentity::take(state_dir_, "the state directory"); id.ok())
    state_dir_identity_ = std::move(id).value();
}

namespace {

// Fields whose shapes name no params have one size for every run: one that
// could never fit is refused when the program is registered.
Status check_constant_shapes(const Manifest& m, uint64_t limit) {
  uint64_t total = 0;
  for (const auto* section : {&m.state, &m.aggregate})
    for (const auto& f : *section) {
      bool constant = true;
      for (const auto& e : f.shape) constant = constant && e.names().empty();
      if (!constant) continue;
      LIZARD_ASSIGN_OR_RETURN(int64_t n, field_elements(f, m, ParamValues{}));
      total += static_cast<uint64_t>(n) * dtype_size(f.type);
      if (total > limit)
        return too_large("field '" + f.name + "' brings the state and aggregate to " +
                         std::to_string(total) + " bytes or more; the server's limit is " +
                         std::to_string(limit) + " bytes (--max-state-bytes)");
    }
  return Status::Ok();
}

}  // namespace

std::string ProgramRegistry::dir() const {
  return (fs::path(state_dir_) / "programs").string();
}

Result<std::shared_ptr<ProgramEntry>> ProgramRegistry::prepare(const json& bundle) const {
  LIZARD_ASSIGN_OR_RETURN(std::shared_ptr<ProgramEntry> entry, check(bundle));
  LIZARD_RETURN_IF_ERROR(build_hooks(entry.get()));
  return entry;
}

Result<std::shared_ptr<ProgramEntry>> ProgramRegistry::check(const json& bundle) const {
  // Its host code is compiled into the state directory: not into a new one.
  LIZARD_RETURN_IF_ERROR(state_dir_identity_.check());
  LIZARD_ASSIGN_OR_RETURN(ProgramBundle b, ProgramBundle::from_json(bundle));
  LIZARD_ASSIGN_OR_RETURN(ProgramImage image, make_program_image(b));
  LIZARD_RETURN_IF_ERROR(check_constant_shapes(image.manifest, max_state_bytes_));
  auto entry = std::make_shared<ProgramEntry>();
  entry->bundle = std::move(b);
  entry->image = std::move(image);
  entry->registered_at = now_iso();
  return entry;
}

Status ProgramRegistry::build_hooks(ProgramEntry* entry) const {
  LIZARD_ASSIGN_OR_RETURN(entry->hooks, HostHooks::build(entry->image, *compiler_, hook_options_));
  return Status::Ok();
}

Result<std::pair<std::shared_ptr<const ProgramEntry>, bool>> ProgramRegistry::add(
    std::shared_ptr<ProgramEntry> entry) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = programs_.find(entry->image.hash);
  if (it != programs_.end()) return std::make_pair(it->second, false);
  LIZARD_RETURN_IF_ERROR(store(*entry));
  spdlog::info("registered program {} ({})", entry->image.hash.substr(0, 12),
               entry->image.manifest.name);
  std::shared_ptr<const ProgramEntry> added = entry;
  programs_.emplace(entry->image.hash, added);
  return std::make_pair(added, true);
}

Status ProgramRegistry::remove(const std::string& hash) {
  std::lock_guard<std::mutex> l(mu_);
  programs_.erase(hash);
  std::error_code ec;
  fs::remove(fs::path(dir()) / (hash + ".json"), ec);
  if (ec) return internal_error("cannot delete the stored bundle of " + hash + ": " + ec.message());
  return Status::Ok();
}

std::shared_ptr<const ProgramEntry> ProgramRegistry::find(const std::string& hash) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = programs_.find(hash);
  return it == programs_.end() ? nullptr : it->second;
}

std::vector<std::shared_ptr<const ProgramEntry>> ProgramRegistry::list() const {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<std::shared_ptr<const ProgramEntry>> out;
  for (const auto& [_, p] : programs_) out.push_back(p);
  return out;
}

// Written to a temporary file, flushed and renamed, so a crash leaves the old
// file or the new.
Status ProgramRegistry::store(const ProgramEntry& p) const {
  if (Status gone = state_dir_identity_.check(); !gone.ok()) {
    spdlog::error("cannot save program {}: {}", p.image.hash.substr(0, 12), gone.message());
    return gone;
  }
  std::error_code ec;
  fs::create_directories(dir(), ec);
  const auto path = fs::path(dir()) / (p.image.hash + ".json");
  const std::string what = "program " + p.image.hash.substr(0, 12);
  json stored = p.bundle.to_json();
  if (!p.registered_by.empty()) stored["registered_by"] = p.registered_by;
  Status st = write_file_durably(path, stored.dump(), what);
  if (!st.ok()) spdlog::error("cannot save {} in {}: {}", what, dir(), st.message());
  return st;
}

void ProgramRegistry::load_stored() {
  std::error_code ec;
  for (const auto& f : fs::directory_iterator(dir(), ec)) {
    if (f.path().extension() != ".json") continue;
    std::ifstream in(f.path(), std::ios::binary);
    const json stored = json::parse(in, nullptr, false);
    auto entry = prepare(stored);
    if (!entry.ok()) {
      spdlog::warn("skipping stored program {}: {}", f.path().string(), entry.status().message());
      continue;
    }
    if (stored.is_object() && stored.contains("registered_by") &&
        stored["registered_by"].is_string())
      (*entry)->registered_by = stored["registered_by"].get<std::string>();
    std::lock_guard<std::mutex> l(mu_);
    spdlog::info("restored program {} ({})", (*entry)->image.hash.substr(0, 12),
                 (*entry)->image.manifest.name);
    programs_[(*entry)->image.hash] = std::move(entry).value();
  }
}

}  // namespace lizard
