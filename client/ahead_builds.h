// AheadBuilds: a worker's builds of program variants (exec/program_variant.h)
// ahead of the runs that need them.  The server sends build_ahead while runs
// of a program wait in its queue; each distinct variant is then compiled
// once, on threads of its own (never the daemon's or the io thread, never
// holding an executor), at most `threads` at a time, into the host's compile
// cache, where the executors find it when the run begins.  A variant
// requested again while queued, building or built is not built again, and
// one compiled by another process of the host at the same time is compiled
// once (the cache's single-flight).  Where the executors begin runs on
// quick builds (VariantCompiler::tiered), each variant's quick build is made
// too, on threads of their own (`threads`, or a quarter of the cores up to
// 8), so that a queue of new values soon has something to begin on, never
// waiting behind an optimised build.  For GPU executors its threads run at a
// lower CPU priority (nice 10, named "lizard-ahead"), so that the compile a
// starting run waits for, in the worker or an executor process, gets the
// cores first.  Run sessions ask it
// whether their kernels still have to be compiled, to tell the server so.
//
//   AheadBuilds ahead(std::move(variant_compiler), 2);
//   ahead.request(program, params);                   // returns at once
//   if (ahead.needs_compile(variant_for_run(*program, params))) ...
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "exec/program_variant.h"
#include "exec/variant_compiler.h"

namespace lizard {

class AheadBuilds {
 public:
  // Builds with `compiler` on `threads` threads (and at least as many for
  // quick builds, when tiered); requests beyond `max_queued` waiting ones are
  // dropped (their runs compile at start).
  AheadBuilds(std::unique_ptr<VariantCompiler> compiler, int threads, size_t max_queued = 64);
  // Half the host's cores, at least 2: what --ahead-builds defaults to.
  static int default_threads();
  // Lets the builds under way finish; drops those not begun.
  ~AheadBuilds();
  AheadBuilds(const AheadBuilds&) = delete;
  AheadBuilds& operator=(const AheadBuilds&) = delete;

  // Queues the build of `program` for the specialised values of `params`,
  // unless that variant is queued, building or built already.
  void request(std::shared_ptr<const ProgramImage> program, const ParamValues& params);
  // Drops the queued build of `program` for `params` (no waiting run needs
  // it any more); false when it is not queued (unknown, building or built),
  // which is then left as it is.  A later request queues it again.
  bool withdraw(const ProgramImage& program, const ParamValues& params);
  // Whether a run of `variant` has its kernels compiled (or waits for them
  // to be) when it begins: neither built here nor in the host's cache (nor,
  // with quick builds, its quick build in the cache).
  bool needs_compile(const ProgramVariant& variant) const;
  // Whether the executors begin a run on a quick build when its optimised
  // one is missing (VariantCompiler::tiered).
  bool begins_on_quick_builds() const { return compiler_->tiered(); }
  // Variants whose optimised build this compiled itself, for logs and tests.
  int compiled() const;

  // Builds shared with the server: `fetch` takes a variant's build from it
  // (true: nothing left to compile), `offer` gives it one compiled here.
  struct Sharing {
    std::function<bool(const ProgramVariant&)> fetch;
    std::function<void(const ProgramVariant&)> offer;
  };
  // Before the first request.
  void share(Sharing sharing) { sharing_ = std::move(sharing); }

 private:
  enum class State { kQueued, kBuilding, kBuilt, kFailed };
  struct Job {
    ProgramVariant variant;
    BuildTier tier = BuildTier::kOptimised;
  };
  // Takes the jobs of `queue` (quick_ or queue_) until stopped.
  void work(std::deque<Job>* queue);
  // Compiles `job`, logging what it did; `compiled` as VariantCompiler::compile.
  Status build(const Job& job, bool* compiled);

  std::unique_ptr<VariantCompiler> compiler_;
  Sharing sharing_;
  const size_t max_queued_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::deque<Job> quick_;                  // GUARDED_BY(mu_): quick builds
  std::deque<Job> queue_;                  // GUARDED_BY(mu_): optimised builds
  std::map<std::string, State> variants_;  // GUARDED_BY(mu_), by ProgramVariant::key: optimised
  int compiled_ = 0;                       // GUARDED_BY(mu_)
  bool stopping_ = false;                  // GUARDED_BY(mu_)
  std::vector<std::thread> threads_;
};

}  // namespace lizard
