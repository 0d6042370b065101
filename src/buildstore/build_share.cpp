#include "buildstore/build_share.h"

#include <spdlog/spdlog.h>

#include "common/clock.h"
#include "common/sha256.h"

namespace lizard {

Result<std::unique_ptr<BuildShare>> BuildShare::make(const BackendOptions& o,
                                                     const std::vector<ExecutorInfo>& executors,
                                                     Send send,
                                                     std::chrono::milliseconds fetch_timeout) {
  LIZARD_ASSIGN_OR_RETURN(std::unique_ptr<VariantCompiler> vc, VariantCompiler::make(o, executors));
  return std::make_unique<BuildShare>(std::move(vc), std::move(send), fetch_timeout);
}

BuildShare::BuildShare(std::unique_ptr<VariantCompiler> compiler, Send send,
                       std::chrono::milliseconds fetch_timeout)
    : compiler_(std::move(compiler)),
      send_(std::move(send)),
      fetch_timeout_(fetch_timeout),
      toolchain_(compiler_->toolchain()) {}

BuildRef BuildShare::ref_of(const ProgramVariant& v, BuildTier tier, const std::string& arch) {
  BuildRef ref;
  ref.hash = v.image.hash;
  ref.values = v.values.to_json();
  ref.tier = tier_name(tier);
  ref.arch = arch;
  return ref;
}

BuildShare::Got BuildShare::fetch_missing(const ProgramVariant& variant, BuildTier tier) {
  const std::vector<VariantCompiler::Entry> entries = compiler_->entries(variant, tier);
  if (entries.empty()) return Got::kCompile;
  bool fetched_any = false;
  for (const VariantCompiler::Entry& e : entries) {
    BuildFacts facts;
    facts.cached = compiler_->read(variant.image.hash, e.name).ok();
    {
      std::lock_guard<std::mutex> l(mu_);
      facts.can_ask = connected_;
    }
    std::string payload;
    const auto t0 = SteadyClock::now();
    if (next_build_step(facts) == BuildStep::kAskServer)
      facts.answer = ask(ref_of(variant, tier, e.arch), &payload);
    const BuildStep step = next_build_step(facts);
    if (step == BuildStep::kUseCached) continue;
    if (step == BuildStep::kCompile) return Got::kCompile;
    if (Status st = compiler_->store(variant.image.hash, e.name, payload); !st.ok()) {
      spdlog::warn("cannot keep the build fetched from the server: {}", st.message());
      return Got::kCompile;
    }
    ++fetched_;
    fetched_any = true;
    {  // a build the server gave need not be offered back
      std::lock_guard<std::mutex> l(mu_);
      offered_.insert(e.name);
    }
    spdlog::info("fetched the {} {} build of {}{} from the server ({} bytes, {:.1f} ms)",
                 tier_name(tier), e.arch, variant.image.manifest.name,
                 variant.values.empty() ? "" : " " + variant.values.key(), payload.size(),
                 ms_since(t0));
  }
  return fetched_any ? Got::kFetched : Got::kCached;
}

FetchAnswer BuildShare::ask(const BuildRef& ref, std::string* payload) {
  BuildFetchMsg msg;
  static_cast<BuildRef&>(msg) = ref;
  std::unique_lock<std::mutex> l(mu_);
  msg.request = next_request_++;
  pending_[msg.request];
  l.unlock();
  send_(encode(msg.to_message()));
  l.lock();
  const bool answered = answered_.wait_for(
      l, fetch_timeout_, [&] { return !connected_ || pending_[msg.request].answered; });
  Pending p = std::move(pending_[msg.request]);
  pending_.erase(msg.request);
  l.unlock();
  if (!p.answered) {
    spdlog::info("no answer from the server about the {} {} build of {} within {} ms; compiling",
                 ref.tier, ref.arch, ref.hash.substr(0, 12), fetch_timeout_.count());
    return answered ? FetchAnswer::kFailed : FetchAnswer::kTimedOut;
  }
  const FetchAnswer a = check_fetched(p.answer, p.payload);
  if (a == FetchAnswer::kBadDigest) {
    ++refused_;
    spdlog::warn(
        "refused the {} {} build of {} from the server: its bytes do not have the SHA-256 the "
        "server states; compiling it here",
        ref.tier, ref.arch, ref.hash.substr(0, 12));
  } else if (a == FetchAnswer::kNone) {
    spdlog::debug("the server has no {} {} build of {} {}: {}", ref.tier, ref.arch,
                  ref.hash.substr(0, 12), ref.values.dump(), p.answer.error);
  }
  if (a == FetchAnswer::kFound) *payload = std::move(p.payload);
  return a;
}

void BuildShare::offer(const ProgramVariant& variant, BuildTier tier) {
  for (const VariantCompiler::Entry& e : compiler_->entries(variant, tier)) {
    {
      std::lock_guard<std::mutex> l(mu_);
      if (!connected_ || !offered_.insert(e.name).second) continue;
    }
    auto payload = compiler_->read(variant.image.hash, e.name);
    if (!payload.ok()) continue;
    BuildOfferMsg msg;
    static_cast<BuildRef&>(msg) = ref_of(variant, tier, e.arch);
    msg.sha256 = sha256_hex(*payload);
    msg.bytes = payload->size();
    spdlog::info("offered the {} {} build of {}{} to the server ({} bytes)", msg.tier, e.arch,
                 variant.image.manifest.name,
                 variant.values.empty() ? "" : " " + variant.values.key(), payload->size());
    send_(encode(msg.to_message(std::move(payload).value())));
  }
}

void BuildShare::on_fetched(const BuildFetchedMsg& answer, std::string payload) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = pending_.find(answer.request);
  if (it == pending_.end()) return;  // answered after its time: the build was compiled
  it->second.answered = true;
  it->second.answer = answer;
  it->second.payload = std::move(payload);
  answered_.notify_all();
}

void BuildShare::set_connected(bool up) {
  std::lock_guard<std::mutex> l(mu_);
  connected_ = up;
  if (!up) offered_.clear();  // a new connection may reach a server that lacks them
  answered_.notify_all();
}

}  // namespace lizard
