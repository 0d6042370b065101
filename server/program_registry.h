// ProgramRegistry: the programs registered with the server, by checksum.  It
// owns each program's bundle, its generated image and its host hooks (checked
// in a hook process, never loaded here), keeps the bundles in
// <state-dir>/programs/ so that they survive a restart, and builds a program
// the same way whether it arrives with POST /programs or is read back at start.  Pushing programs
// to workers and waiting for their builds is the coordinator's (it knows the workers).
//
// Thread-safe: `mu_` guards the map; entries are immutable once added.
//
//   ProgramRegistry reg(state_dir, &compiler);
//   reg.load_stored();
//   Result<std::shared_ptr<ProgramEntry>> p = reg.prepare(bundle_json);   // may take seconds
//   // or reg.check(bundle_json), then reg.build_hooks(p->get()) on a pool of its own
//   auto added = reg.add(*p);        // {entry, is_new}, or the reason it was not stored
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "exec/executor.h"
#include "exec/host_compiler.h"
#include "hooks/host_hooks.h"
#include "program/bundle.h"
#include "server/state_dir_identity.h"

namespace lizard {

struct ProgramEntry {
  ProgramImage image;
  ProgramBundle bundle;
  std::shared_ptr<HostHooks> hooks;
  std::string registered_at;
  // Who registered it first ("" for one from before owners were kept): they
  // or an admin may delete it.  Kept with its stored bundle.
  std::string registered_by;
};

class ProgramRegistry {
 public:
  // `hook_options` bound the check of a program's host.cpp in a hook process;
  // `max_state_bytes`: the most the state and aggregate fields whose shapes
  // are constants may take (413 beyond).
  ProgramRegistry(std::string state_dir, const HostCompiler* compiler,
                  HookProcessOptions hook_options = {},
                  uint64_t max_state_bytes = uint64_t{1} << 30);

  // Checks a bundle, generates its image and builds its host hooks, without
  // registering it.  Errors are the user's (400, 413, 422).
  Result<std::shared_ptr<ProgramEntry>> prepare(const nlohmann::json& bundle) const;
  // prepare() in two steps: check() is quick (no compiler, no hook process);
  // build_hooks() compiles host.cpp and loads it in a hook process, which
  // may take up to the hook time-out (static initialisers that never return).
  Result<std::shared_ptr<ProgramEntry>> check(const nlohmann::json& bundle) const;
  Status build_hooks(ProgramEntry* entry) const;
  // Whether build_hooks() has host code to compile and load.
  static bool has_host_code(const ProgramEntry& e) { return !e.image.manifest.host_source.empty(); }
  // Registers and stores `entry` unless a program of its checksum is there;
  // returns the registered entry and whether it is new.  Nothing is
  // registered when its bundle cannot be stored (kStorageFull: a full disk).
  Result<std::pair<std::shared_ptr<const ProgramEntry>, bool>> add(
      std::shared_ptr<ProgramEntry> entry);
  // Forgets a program and its stored bundle.
  Status remove(const std::string& hash);
  std::shared_ptr<const ProgramEntry> find(const std::string& hash) const;
  std::vector<std::shared_ptr<const ProgramEntry>> list() const;
  // Registers the programs stored by an earlier server; skips (and logs) those
  // that no longer build.
  void load_stored();

 private:
  std::string dir() const;
  Status store(const ProgramEntry& p) const;

  const std::string state_dir_;
  StateDirIdentity state_dir_identity_;
  const HostCompiler* compiler_;
  const HookProcessOptions hook_options_;
  const uint64_t max_state_bytes_;
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<const ProgramEntry>> programs_;  // GUARDED_BY(mu_)
};

}  // namespace lizard
