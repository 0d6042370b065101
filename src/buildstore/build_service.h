// BuildService: the server's side of shared builds.  Workers offer the
// builds they compiled (build_offer) and ask for those they lack
// (build_fetch); the service checks each offer, files it in the BuildStore
// under the key it computes itself (buildstore/build_key.h) and answers
// each fetch with build_fetched.  Offers and fetches are queued by the
// thread that received them (the io thread, which does nothing more) and
// handled on the service's own thread, where the disk is touched.  A bad
// offer (a worker that reported no toolchain or another architecture, an
// unknown program, a payload that is not what its header says or is too
// large, values that are not the program's) is refused with a logged reason.
//
//   BuildService builds(state_dir + "/builds", {max_bytes}, {find_program, send_to_worker});
//   builds.joined(worker_id, hello);                     // on each accepted hello
//   builds.offer(worker_id, std::move(msg), payload);    // from the io thread
//   builds.drop_program(hash);                           // DELETE /programs/<hash>
#pragma once

#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <variant>

#include "buildstore/build_key.h"
#include "buildstore/build_store.h"
#include "common/mailbox.h"
#include "program/program_image.h"
#include "protocol/messages.h"

namespace lizard {

struct BuildServiceOptions {
  uint64_t max_bytes = BuildStore::kDefaultMaxBytes;  // the store's bound (--build-store-mb)
  uint64_t max_build_bytes = uint64_t{256} << 20;     // the largest build taken in one offer
  size_t max_queued = 64;                         // offers and fetches waiting; more are refused
  uint64_t max_queued_bytes = uint64_t{1} << 30;  // and the bytes of the offers among them
};

struct BuildServiceHooks {
  // The program registered under `hash`, or null.
  std::function<std::shared_ptr<const ProgramImage>(const std::string& hash)> find_program;
  // Sends a frame to a worker (dropped when it is gone).
  std::function<void(const std::string& worker_id, std::string frame)> send;
};

class BuildService {
 public:
  BuildService(std::string dir, BuildServiceOptions options, BuildServiceHooks hooks);
  ~BuildService();  // handles what is queued no more; joins its thread
  BuildService(const BuildService&) = delete;
  BuildService& operator=(const BuildService&) = delete;

  // A worker's accepted hello, and its leaving.
  void joined(const std::string& worker_id, const HelloMsg& hello);
  void left(const std::string& worker_id);
  // Queue a worker's message; they return at once.
  void offer(const std::string& worker_id, BuildOfferMsg msg, std::string payload);
  void fetch(const std::string& worker_id, BuildFetchMsg msg);
  // Removes the builds of a deleted program, on the service's thread (after
  // the offers queued before it).
  void drop_program(const std::string& hash);

  // What the service's thread does with each, for tests without a thread:
  // the key the offer was filed under, or why it was refused.
  Result<std::string> handle_offer(const std::string& worker_id, const BuildOfferMsg& msg,
                                   const std::string& payload);
  // The answer to a fetch and its payload.
  BuildFetchedMsg handle_fetch(const std::string& worker_id, const BuildFetchMsg& msg,
                               std::string* payload);

  BuildStore& store() { return store_; }
  // Waits until everything queued so far is handled (tests).
  void drain();

 private:
  struct Offer {
    std::string worker_id;
    BuildOfferMsg msg;
    std::string payload;
  };
  struct Fetch {
    std::string worker_id;
    BuildFetchMsg msg;
  };
  struct Drop {
    std::string hash;
  };
  struct Drained {
    std::shared_ptr<std::promise<void>> done;
  };
  using Job = std::variant<Offer, Fetch, Drop, Drained>;

  // The key of `ref` for the worker, checked against what it reported.
  Result<std::string> key_for(const std::string& worker_id, const BuildRef& ref,
                              std::shared_ptr<const ProgramImage>* program) const;
  void queue(Job job);
  void work();

  BuildServiceOptions options_;
  BuildServiceHooks hooks_;
  BuildStore store_;
  mutable std::mutex mu_;
  std::map<std::string, BuildIdentity> workers_;  // GUARDED_BY(mu_)
  size_t queued_ = 0;                             // GUARDED_BY(mu_)
  uint64_t queued_bytes_ = 0;                     // GUARDED_BY(mu_): offers' payloads
  Mailbox<Job> jobs_;
  std::thread thread_;
};

}  // namespace lizard
