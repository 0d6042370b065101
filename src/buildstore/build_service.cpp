#include "buildstore/build_service.h"

#include <spdlog/spdlog.h>

#include <future>

#include "common/sha256.h"

namespace lizard {

BuildService::BuildService(std::string dir, BuildServiceOptions options, BuildServiceHooks hooks)
    : options_(options),
      hooks_(std::move(hooks)),
      store_(std::move(dir), options.max_bytes),
      thread_([this] { work(); }) {}

BuildService::~BuildService() {
  jobs_.close();
  if (thread_.joinable()) thread_.join();
}

void BuildService::joined(const std::string& worker_id, const HelloMsg& hello) {
  std::lock_guard<std::mutex> l(mu_);
  workers_[worker_id] = BuildIdentity::of(hello);
}

void BuildService::left(const std::string& worker_id) {
  std::lock_guard<std::mutex> l(mu_);
  workers_.erase(worker_id);
}

void BuildService::queue(Job job) {
  const bool must = std::holds_alternative<Drop>(job) || std::holds_alternative<Drained>(job);
  const Offer* offer = std::get_if<Offer>(&job);
  const uint64_t bytes = offer ? offer->payload.size() : 0;
  {
    std::lock_guard<std::mutex> l(mu_);
    const bool room =
        queued_ < options_.max_queued && queued_bytes_ + bytes <= options_.max_queued_bytes;
    if (room || must) {
      ++queued_;
      queued_bytes_ += bytes;
      jobs_.push(std::move(job));
      return;
    }
  }
  if (auto* f = std::get_if<Fetch>(&job)) {  // answered at once: the worker compiles
    BuildFetchedMsg none{f->msg.request, false, "", 0, "the server is busy"};
    hooks_.send(f->worker_id, encode(none.to_message()));
  } else {
    spdlog::warn("build store: refused an offer of worker {}: too many waiting",
                 std::get<Offer>(job).worker_id);
  }
}

void BuildService::offer(const std::string& worker_id, BuildOfferMsg msg, std::string payload) {
  if (payload.size() > options_.max_build_bytes) {  // not kept in memory while queued
    spdlog::warn("build store: refused an offer of worker {}: {} bytes, more than the {} taken",
                 worker_id, payload.size(), options_.max_build_bytes);
    return;
  }
  queue(Offer{worker_id, std::move(msg), std::move(payload)});
}

void BuildService::fetch(const std::string& worker_id, BuildFetchMsg msg) {
  queue(Fetch{worker_id, std::move(msg)});
}

void BuildService::drain() {
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> f = done->get_future();
  queue(Drained{done});
  f.wait();
}

void BuildService::drop_program(const std::string& hash) {
  queue(Drop{hash});
}

void BuildService::work() {
  while (auto job = jobs_.pop()) {
    if (auto* o = std::get_if<Offer>(&*job)) {
      auto key = handle_offer(o->worker_id, o->msg, o->payload);
      if (!key.ok())
        spdlog::warn("build store: refused an offer of program {} from worker {}: {}",
                     o->msg.hash.substr(0, 12), o->worker_id, key.status().message());
    } else if (auto* f = std::get_if<Fetch>(&*job)) {
      std::string payload;
      BuildFetchedMsg answer = handle_fetch(f->worker_id, f->msg, &payload);
      hooks_.send(f->worker_id, encode(answer.to_message(std::move(payload))));
    } else if (auto* d = std::get_if<Drop>(&*job)) {
      const size_t n = store_.drop_program(d->hash);
      spdlog::info("build store: dropped {} build(s) of deleted program {}", n,
                   d->hash.substr(0, 12));
    }
    {
      std::lock_guard<std::mutex> l(mu_);
      --queued_;
      if (auto* o = std::get_if<Offer>(&*job)) queued_bytes_ -= o->payload.size();
    }
    if (auto* d = std::get_if<Drained>(&*job)) d->done->set_value();
  }
}

Result<std::string> BuildService::key_for(const std::string& worker_id, const BuildRef& ref,
                                          std::shared_ptr<const ProgramImage>* program) const {
  BuildIdentity identity;
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = workers_.find(worker_id);
    if (it == workers_.end()) return invalid_argument("the worker has not joined");
    identity = it->second;
  }
  if (identity.toolchain.empty()) return invalid_argument("the worker reported no toolchain");
  if (!identity.builds_for(ref.arch))
    return invalid_argument("the worker has no executor of architecture '" + ref.arch + "'");
  *program = hooks_.find_program(ref.hash);
  if (!*program) return not_found("no program " + ref.hash.substr(0, 12) + " is registered");
  // The program's own hash, as the registry computed it, names the build.
  return build_key((*program)->manifest, (*program)->hash, ref, identity.toolchain);
}

Result<std::string> BuildService::handle_offer(const std::string& worker_id,
                                               const BuildOfferMsg& msg,
                                               const std::string& payload) {
  if (payload.size() != msg.bytes)
    return invalid_argument("the payload holds " + std::to_string(payload.size()) +
                            " bytes, the header says " + std::to_string(msg.bytes));
  if (payload.size() > options_.max_build_bytes)
    return invalid_argument("a build of " + std::to_string(payload.size()) +
                            " bytes is larger than the " +
                            std::to_string(options_.max_build_bytes) + " taken");
  if (sha256_hex(payload) != msg.sha256)
    return invalid_argument("the payload's SHA-256 is not the one its header states");
  std::shared_ptr<const ProgramImage> program;
  LIZARD_ASSIGN_OR_RETURN(std::string key, key_for(worker_id, msg, &program));
  if (store_.contains(key)) return key;
  LIZARD_RETURN_IF_ERROR(store_.put(key, program->hash, payload, msg.sha256));
  spdlog::info("build store: kept the {} {} build of {} {} from worker {} ({} bytes)", msg.tier,
               msg.arch, program->manifest.name, msg.values.dump(), worker_id, payload.size());
  return key;
}

BuildFetchedMsg BuildService::handle_fetch(const std::string& worker_id, const BuildFetchMsg& msg,
                                           std::string* payload) {
  BuildFetchedMsg answer;
  answer.request = msg.request;
  std::shared_ptr<const ProgramImage> program;
  auto key = key_for(worker_id, msg, &program);
  if (!key.ok()) {
    answer.error = key.status().message();
    return answer;
  }
  auto build = store_.get(*key);
  if (!build.ok()) {
    answer.error = build.status().message();
    return answer;
  }
  answer.found = true;
  answer.sha256 = build->sha256;
  answer.bytes = build->payload.size();
  spdlog::info("build store: handed the {} {} build of {} {} to worker {}", msg.tier, msg.arch,
               program->manifest.name, msg.values.dump(), worker_id);
  *payload = std::move(build->payload);
  return answer;
}

}  // namespace lizard
