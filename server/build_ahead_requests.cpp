#include "server/build_ahead_requests.h"

#include <set>

#include "program/specialisation.h"
#include "protocol/messages.h"

namespace lizard {

std::vector<std::pair<std::string, Message>> BuildAheadRequests::update(
    const std::vector<std::shared_ptr<const RunRecord>>& waiting,
    const std::vector<WorkerView>& cluster) {
  // The variants wanted: each program's first kPerProgram, in queue order.
  std::map<std::string, Variant> wanted;
  std::map<std::string, size_t> per_program;
  for (const auto& run : waiting) {
    if (!run || !run->program) continue;
    const Specialisation values =
        run_specialisation(run->program->image.manifest, run->request.params);
    if (values.empty()) continue;
    const std::string key = run->hash + "/" + values.key();
    if (wanted.count(key) || per_program[run->hash] >= kPerProgram) continue;
    ++per_program[run->hash];
    wanted[key] = {run->hash, run->params_json};
  }
  std::vector<std::pair<std::string, Message>> out;
  std::lock_guard<std::mutex> l(mu_);
  for (const WorkerView& w : cluster) {
    std::map<std::string, Variant>& asked = asked_[w.id];
    for (auto it = asked.begin(); it != asked.end();) {
      if (wanted.count(it->first)) {
        ++it;
        continue;
      }
      BuildAheadMsg withdraw{it->second.hash, it->second.params};
      withdraw.withdrawn = true;
      out.emplace_back(w.id, withdraw.to_message());
      it = asked.erase(it);
    }
    for (const auto& [key, variant] : wanted) {
      if (!w.ready.count(variant.hash) || !asked.emplace(key, variant).second) continue;
      out.emplace_back(w.id, BuildAheadMsg{variant.hash, variant.params}.to_message());
    }
  }
  return out;
}

bool BuildAheadRequests::asking() {
  std::lock_guard<std::mutex> l(mu_);
  for (const auto& [worker, asked] : asked_)
    if (!asked.empty()) return true;
  return false;
}

void BuildAheadRequests::forget_worker(const std::string& id) {
  std::lock_guard<std::mutex> l(mu_);
  asked_.erase(id);
}

}  // namespace lizard
