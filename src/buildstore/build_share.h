// BuildShare: a worker's side of shared builds.  Before the worker compiles a
// build its compile cache lacks, it asks the server for it (build_fetch) and
// waits a bounded time for the answer; a build that comes back with the
// SHA-256 the server states is stored in the cache, where the executors then
// load it and compile nothing.  No answer in time, none kept, or bytes that
// do not check out: the worker compiles as before (next_build_step,
// buildstore/build_source.h), and offers what it compiled (build_offer).
// fetch_missing() blocks the calling thread (a build or run thread, never
// the io thread or the daemon's); on_fetched() is called with each answer
// from the thread that reads the server's messages.  Thread-safe.
//
//   auto share = BuildShare::make(backend_options, executor_infos, send);
//   hello.toolchain = (*share)->toolchain();
//   if ((*share)->fetch_missing(variant, BuildTier::kOptimised) == BuildShare::Got::kCompile) {
//     compile(variant);
//     (*share)->offer(variant, BuildTier::kOptimised);
//   }
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "buildstore/build_source.h"
#include "exec/variant_compiler.h"
#include "protocol/messages.h"

namespace lizard {

class BuildShare {
 public:
  static constexpr std::chrono::milliseconds kDefaultFetchTimeout{3000};
  using Send = std::function<void(std::string frame)>;

  // Sharing the builds of executors like `executors`, in the cache `o`
  // names; kUnavailable where VariantCompiler::make is.
  static Result<std::unique_ptr<BuildShare>> make(
      const BackendOptions& o, const std::vector<ExecutorInfo>& executors, Send send,
      std::chrono::milliseconds fetch_timeout = kDefaultFetchTimeout);
  BuildShare(std::unique_ptr<VariantCompiler> compiler, Send send,
             std::chrono::milliseconds fetch_timeout);

  // What the hello reports as the worker's toolchain.
  const std::string& toolchain() const { return toolchain_; }

  enum class Got {
    kCached,   // every entry was in the cache already
    kFetched,  // the missing ones came from the server
    kCompile,  // some are still missing: compile, then offer()
  };
  // Takes the entries of `variant`'s build at `tier` that the cache lacks
  // from the server.
  Got fetch_missing(const ProgramVariant& variant, BuildTier tier);
  // Offers the server every entry of that build that lies in the cache
  // (each entry once per connection).
  void offer(const ProgramVariant& variant, BuildTier tier);

  // The server's answer to a fetch.
  void on_fetched(const BuildFetchedMsg& answer, std::string payload);
  // The connection is up (after the hello went) or down: fetches wait only
  // while it is up; one under way when it goes fails at once.
  void set_connected(bool up);

  // Whether its executors begin runs on quick builds (VariantCompiler::tiered).
  bool tiered() const { return compiler_->tiered(); }
  int fetched() const { return fetched_; }  // entries taken from the server
  int refused() const { return refused_; }  // answers whose bytes did not check out

 private:
  struct Pending {
    bool answered = false;
    BuildFetchedMsg answer;
    std::string payload;
  };
  // Asks the server for one entry; its payload when kFound.
  FetchAnswer ask(const BuildRef& ref, std::string* payload);
  static BuildRef ref_of(const ProgramVariant& v, BuildTier tier, const std::string& arch);

  std::unique_ptr<VariantCompiler> compiler_;
  Send send_;
  std::chrono::milliseconds fetch_timeout_;
  std::string toolchain_;
  std::mutex mu_;
  std::condition_variable answered_;
  bool connected_ = false;               // GUARDED_BY(mu_)
  uint64_t next_request_ = 1;            // GUARDED_BY(mu_)
  std::map<uint64_t, Pending> pending_;  // GUARDED_BY(mu_)
  std::set<std::string> offered_;        // GUARDED_BY(mu_): entry names
  std::atomic<int> fetched_{0}, refused_{0};
};

}  // namespace lizard
