// HostHooks: a program's host.cpp, compiled with the system compiler against
// the generated lizard_program.h and loaded into the server.  Wraps the three
// optional C hooks behind calls on lizard's own buffers.  Immutable once
// built, with no lock: runs of one program call its hooks from their own
// driver threads, at the same time.
//
//   Result<std::shared_ptr<HostHooks>> h = HostHooks::build(image, compiler);
//   (*h)->init_state(params, &state);           // false when the hook is absent
//   bool done = (*h)->update_state(params, agg, &state, iteration);
#pragma once

#include <memory>
#include <string>

#include "common/shared_library.h"
#include "common/status.h"
#include "exec/executor.h"
#include "exec/host_compiler.h"

namespace lizard {

class HostHooks {
 public:
  // With no host source in the manifest, returns hooks that are all absent.
  static Result<std::shared_ptr<HostHooks>> build(const ProgramImage& image,
                                                  const HostCompiler& compiler);

  bool has_init() const { return init_ != nullptr; }
  bool has_update() const { return update_ != nullptr; }
  bool has_aggregate() const { return aggregate_ != nullptr; }

  // Each returns false when the hook is absent.
  bool init_state(const Manifest& m, const ParamValues& p, SectionBuffer* state) const;
  bool aggregate(const Manifest& m, const ParamValues& p, SectionBuffer* running,
                 SectionBuffer* partial) const;
  // Returns true when the run is done; without the hook, after one iteration.
  bool update_state(const Manifest& m, const ParamValues& p, SectionBuffer* agg,
                    SectionBuffer* state, int64_t iteration) const;

 private:
  using InitFn = void (*)(const void*, void*);
  using AggregateFn = void (*)(const void*, void*, const void*);
  using UpdateFn = int (*)(const void*, const void*, void*, int64_t);

  SharedLibrary lib_;
  InitFn init_ = nullptr;
  AggregateFn aggregate_ = nullptr;
  UpdateFn update_ = nullptr;
};

}  // namespace lizard
