#include "server/program_registry.h"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <fstream>

#include "common/clock.h"

namespace lizard {

namespace fs = std::filesystem;
using nlohmann::json;

ProgramRegistry::ProgramRegistry(std::string state_dir, const HostCompiler* compiler,
                                 HookProcessOptions hook_options)
    : state_dir_(std::move(state_dir)),
      compiler_(compiler),
      hook_options_(std::move(hook_options)) {}

std::string ProgramRegistry::dir() const {
  return (fs::path(state_dir_) / "programs").string();
}

Result<std::shared_ptr<ProgramEntry>> ProgramRegistry::prepare(const json& bundle) const {
  LIZARD_ASSIGN_OR_RETURN(ProgramBundle b, ProgramBundle::from_json(bundle));
  LIZARD_ASSIGN_OR_RETURN(ProgramImage image, make_program_image(b));
  auto entry = std::make_shared<ProgramEntry>();
  entry->bundle = std::move(b);
  entry->image = std::move(image);
  entry->registered_at = now_iso();
  LIZARD_ASSIGN_OR_RETURN(entry->hooks, HostHooks::build(entry->image, *compiler_, hook_options_));
  return entry;
}

std::pair<std::shared_ptr<const ProgramEntry>, bool> ProgramRegistry::add(
    std::shared_ptr<ProgramEntry> entry) {
  std::lock_guard<std::mutex> l(mu_);
  auto [it, is_new] = programs_.emplace(entry->image.hash, entry);
  if (is_new) {
    store(*entry);
    spdlog::info("registered program {} ({})", entry->image.hash.substr(0, 12),
                 entry->image.manifest.name);
  }
  return {it->second, is_new};
}

void ProgramRegistry::remove(const std::string& hash) {
  std::lock_guard<std::mutex> l(mu_);
  programs_.erase(hash);
  std::error_code ec;
  fs::remove(fs::path(dir()) / (hash + ".json"), ec);
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

// Written to a temporary file and renamed, so a crash leaves the old file or the new.
void ProgramRegistry::store(const ProgramEntry& p) const {
  std::error_code ec;
  fs::create_directories(dir(), ec);
  const auto path = fs::path(dir()) / (p.image.hash + ".json");
  const auto tmp = fs::path(dir()) / (p.image.hash + ".json.tmp");
  {
    std::ofstream out(tmp, std::ios::binary);
    out << p.bundle.to_json().dump();
    if (!out) {
      spdlog::warn("cannot save program {} in {}", p.image.hash.substr(0, 12), dir());
      return;
    }
  }
  fs::rename(tmp, path, ec);
}

void ProgramRegistry::load_stored() {
  std::error_code ec;
  for (const auto& f : fs::directory_iterator(dir(), ec)) {
    if (f.path().extension() != ".json") continue;
    std::ifstream in(f.path(), std::ios::binary);
    auto entry = prepare(json::parse(in, nullptr, false));
    if (!entry.ok()) {
      spdlog::warn("skipping stored program {}: {}", f.path().string(), entry.status().message());
      continue;
    }
    std::lock_guard<std::mutex> l(mu_);
    spdlog::info("restored program {} ({})", (*entry)->image.hash.substr(0, 12),
                 (*entry)->image.manifest.name);
    programs_[(*entry)->image.hash] = std::move(entry).value();
  }
}

}  // namespace lizard
