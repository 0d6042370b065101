#include "server/build_ahead_requests.h"

#include "program/specialisation.h"
#include "protocol/messages.h"

namespace lizard {

namespace {

// Variants remembered per worker; beyond this it is asked afresh (it
// answers a repeated request from what it built, or its cache).
constexpr size_t kMaxAskedPerWorker = 4096;

}  // namespace

std::vector<std::pair<std::string, Message>> BuildAheadRequests::due(
    const RunRecord& run, const std::vector<WorkerView>& cluster) {
  std::vector<std::pair<std::string, Message>> out;
  if (!run.program) return out;
  const Specialisation values = run_specialisation(run.program->image.manifest, run.request.params);
  if (values.empty()) return out;
  const std::string variant = run.hash + "/" + values.key();
  std::lock_guard<std::mutex> l(mu_);
  for (const WorkerView& w : cluster) {
    if (!w.ready.count(run.hash)) continue;
    std::set<std::string>& asked = asked_[w.id];
    if (asked.size() >= kMaxAskedPerWorker) asked.clear();
    if (!asked.insert(variant).second) continue;
    out.emplace_back(w.id, BuildAheadMsg{run.hash, run.params_json}.to_message());
  }
  return out;
}

void BuildAheadRequests::forget_worker(const std::string& id) {
  std::lock_guard<std::mutex> l(mu_);
  asked_.erase(id);
}

}  // namespace lizard
