#include "server/worker_registry.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdint>

#include "common/clock.h"

namespace lizard {

using nlohmann::json;

json ProgramBuild::to_json() const {
  switch (state) {
    case BuildState::kBuilding:
      return "building";
    case BuildState::kReady:
      return "ready";
    case BuildState::kFailed:
      break;
  }
  return {{"error", error}};
}

json kept_rows_json(const KeptRowsEntry& k) {
  json j = {{"key", k.key}, {"description", k.description}, {"bytes", k.bytes}};
  if (!k.source.empty()) j["source"] = k.source, j["rows"] = {k.first_row, k.first_row + k.rows};
  return j;
}

json WorkerRegistry::Worker::to_json() const {
  json hw = hello.to_json();
  hw.erase("slurm_job_id");  // shown once, beside the worker's id
  for (size_t i = 0; i < hw["executors"].size() && i < serving.size(); ++i) {
    hw["executors"][i]["run"] = serving[i].empty() ? json(nullptr) : json(serving[i]);
    hw["executors"][i]["runs_served"] = runs_served[i];
    json rows = json::array();
    if (i < kept.size())
      for (const auto& k : kept[i]) rows.push_back(kept_rows_json(k));
    hw["executors"][i]["kept_rows"] = std::move(rows);
  }
  json j = {{"id", id},
            {"address", link ? link->peer() : ""},
            {"connected_at", connected_at},
            {"hardware", hw},
            {"programs", json::object()}};
  if (!hello.slurm_job_id.empty()) j["slurm_job_id"] = hello.slurm_job_id;
  j["fold_address"] = fold_address().empty() ? json(nullptr) : json(fold_address());
  if (!resources_at.empty()) j["resources_at"] = resources_at;
  if (!unresponsive.empty()) j["unresponsive"] = unresponsive;
  if (!bad_message.empty()) j["bad_message"] = bad_message;
  for (const auto& [h, b] : programs) j["programs"][h] = b.to_json();
  return j;
}

std::string WorkerRegistry::connect(std::shared_ptr<WorkerLink> link) {
  std::lock_guard<std::mutex> l(mu_);
  std::string id = "w" + std::to_string(next_id_++);
  Worker& w = workers_[id];
  w.id = id;
  w.link = std::move(link);
  w.connected_at = now_iso();
  return id;
}

bool WorkerRegistry::hello(const std::string& id, HelloMsg hello,
                           const std::vector<std::pair<std::string, std::string>>& programs) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = workers_.find(id);
  if (it == workers_.end()) return false;
  Worker& w = it->second;
  w.joined = true;
  w.serving.assign(hello.executors.size(), "");
  w.runs_served.assign(hello.executors.size(), 0);
  w.hello = std::move(hello);
  w.programs.clear();
  w.link->send(encode(WelcomeMsg{id, kWireVersion, "", share_builds_.load()}.to_message()));
  for (const auto& [hash, frame] : programs) {
    w.programs[hash] = ProgramBuild{BuildState::kBuilding, "", /*at_join=*/true};
    w.link->send(frame);
  }
  return true;
}

std::vector<std::string> WorkerRegistry::remove(const std::string& id) {
  std::vector<std::string> runs;
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = workers_.find(id);
    if (it == workers_.end()) return runs;
    for (const auto& r : it->second.serving)
      if (!r.empty() && std::find(runs.begin(), runs.end(), r) == runs.end()) runs.push_back(r);
    if (!it->second.unresponsive.empty()) --unresponsive_;
    workers_.erase(it);
  }
  built_.notify_all();
  return runs;
}

void WorkerRegistry::clear() {
  std::map<std::string, Worker> gone;
  {
    std::lock_guard<std::mutex> l(mu_);
    gone.swap(workers_);
    unresponsive_ = 0;
  }
  built_.notify_all();
}

Status WorkerRegistry::send(const std::string& id, OutgoingFrame frame) const {
  std::shared_ptr<WorkerLink> l = link(id);
  if (!l) return worker_lost("lost worker " + id);
  l->send(std::move(frame));
  return Status::Ok();
}

std::string WorkerRegistry::Worker::fold_address() const {
  if (!joined || hello.fold_port <= 0 || !link) return "";
  const std::string peer = link->peer();
  const size_t colon = peer.rfind(':');
  if (colon == std::string::npos || colon == 0) return "";
  return peer.substr(0, colon) + ":" + std::to_string(hello.fold_port);
}

std::vector<std::string> WorkerRegistry::fold_addresses(const std::vector<std::string>& ids) const {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<std::string> out;
  for (const auto& id : ids) {
    auto it = workers_.find(id);
    out.push_back(it == workers_.end() ? "" : it->second.fold_address());
  }
  return out;
}

std::shared_ptr<WorkerLink> WorkerRegistry::link(const std::string& id) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = workers_.find(id);
  return it == workers_.end() ? nullptr : it->second.link;
}

void WorkerRegistry::push_program(const std::string& hash, const Message& program,
                                  const std::string& only) {
  std::string frame;
  std::lock_guard<std::mutex> l(mu_);
  for (auto& [id, w] : workers_) {
    if (!w.joined || w.programs.count(hash) || (!only.empty() && id != only)) continue;
    if (frame.empty()) frame = encode(program);
    w.programs[hash] = ProgramBuild{};
    w.link->send(frame);
  }
}

void WorkerRegistry::program_status(const std::string& id, const ProgramStatusMsg& m) {
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = workers_.find(id);
    if (it == workers_.end()) return;
    // Only a build this worker was sent and has not been forgotten since: a
    // late answer must not leave a verdict that keeps the program from being
    // sent again when it is registered anew.
    auto b_it = it->second.programs.find(m.hash);
    if (b_it == it->second.programs.end()) {
      spdlog::debug("worker {} reported a build of {} it was not asked for", id,
                    m.hash.substr(0, 12));
      return;
    }
    ProgramBuild& b = b_it->second;
    b.state = m.ok ? BuildState::kReady : BuildState::kFailed;
    b.error = m.error;
  }
  spdlog::debug("worker {} built {}: {}", id, m.hash.substr(0, 12), m.ok ? "ok" : m.error);
  built_.notify_all();
}

void WorkerRegistry::forget_program(const std::string& hash) {
  std::string frame;
  std::lock_guard<std::mutex> l(mu_);
  for (auto& [_, w] : workers_) {
    if (w.programs.erase(hash) == 0 || !w.joined || !w.link) continue;
    if (frame.empty()) frame = encode(ProgramRemovedMsg{hash}.to_message());
    w.link->send(frame);
  }
}

std::map<std::string, ProgramBuild> WorkerRegistry::wait_for_builds(
    const std::string& hash, std::chrono::steady_clock::time_point deadline,
    const std::function<bool()>& stop) {
  std::unique_lock<std::mutex> l(mu_);
  auto settled = [&] {
    for (const auto& [_, w] : workers_) {
      auto b = w.programs.find(hash);
      if (w.joined && b != w.programs.end() && b->second.state == BuildState::kBuilding)
        return false;
    }
    return true;
  };
  built_.wait_until(l, deadline, [&] { return stop() || settled(); });
  std::map<std::string, ProgramBuild> out;
  for (const auto& [id, w] : workers_) {
    auto b = w.programs.find(hash);
    if (w.joined && b != w.programs.end()) out[id] = b->second;
  }
  return out;
}

json WorkerRegistry::builds_of(const std::string& hash) const {
  std::lock_guard<std::mutex> l(mu_);
  json out = json::object();
  for (const auto& [id, w] : workers_) {
    auto b = w.programs.find(hash);
    if (b != w.programs.end()) out[id] = b->second.to_json();
  }
  return out;
}

void WorkerRegistry::wake() {
  { std::lock_guard<std::mutex> l(mu_); }
  built_.notify_all();
}

void WorkerRegistry::resources(const std::string& id, const ResourcesMsg& m) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = workers_.find(id);
  if (it == workers_.end()) return;
  auto& ex = it->second.hello.executors;
  for (size_t i = 0; i < ex.size(); ++i) {
    if (i < m.free_memory.size()) ex[i].free_memory = m.free_memory[i];
    if (i < m.utilization.size()) ex[i].utilization = m.utilization[i];
    if (i < m.launch_delay_us.size()) ex[i].launch_delay_us = m.launch_delay_us[i];
  }
  if (!m.kept.empty()) it->second.kept = m.kept;
  it->second.resources_at = now_iso();
}

void WorkerRegistry::missed_deadline(const std::string& id, const std::string& why) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = workers_.find(id);
  if (it == workers_.end()) return;
  if (it->second.unresponsive.empty()) ++unresponsive_;
  it->second.unresponsive = why;
}

void WorkerRegistry::answered(const std::string& id) {
  if (unresponsive_.load() == 0) return;
  std::lock_guard<std::mutex> l(mu_);
  auto it = workers_.find(id);
  if (it == workers_.end() || it->second.unresponsive.empty()) return;
  it->second.unresponsive.clear();
  --unresponsive_;
  spdlog::info("worker {} answers again: runs may be placed on it", id);
}

void WorkerRegistry::sent_bad_message(const std::string& id, const std::string& why) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = workers_.find(id);
  if (it != workers_.end()) it->second.bad_message = why;
}

bool WorkerRegistry::claim(const std::vector<ExecutorRef>& executors, const std::string& run_id) {
  std::lock_guard<std::mutex> l(mu_);
  for (const auto& e : executors) {
    auto it = workers_.find(e.worker_id);
    if (it == workers_.end() || e.index < 0 ||
        static_cast<size_t>(e.index) >= it->second.serving.size() ||
        !it->second.serving[static_cast<size_t>(e.index)].empty())
      return false;
  }
  for (const auto& e : executors) {
    Worker& w = workers_[e.worker_id];
    w.serving[static_cast<size_t>(e.index)] = run_id;
    ++w.runs_served[static_cast<size_t>(e.index)];
  }
  return true;
}

void WorkerRegistry::release(const std::vector<ExecutorRef>& executors, const std::string& run_id) {
  std::lock_guard<std::mutex> l(mu_);
  for (const auto& e : executors) {
    auto it = workers_.find(e.worker_id);
    if (it == workers_.end() || static_cast<size_t>(e.index) >= it->second.serving.size()) continue;
    std::string& s = it->second.serving[static_cast<size_t>(e.index)];
    if (s == run_id) s.clear();
  }
}

void WorkerRegistry::release_run(const std::string& run_id) {
  std::lock_guard<std::mutex> l(mu_);
  for (auto& [_, w] : workers_)
    for (auto& s : w.serving)
      if (s == run_id) s.clear();
}

std::vector<ExecutorSlot> WorkerRegistry::slots(const std::vector<ExecutorRef>& executors) const {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<ExecutorSlot> out;
  for (const auto& e : executors) {
    auto it = workers_.find(e.worker_id);
    if (it == workers_.end()) continue;
    const auto& ex = it->second.hello.executors;
    if (e.index < 0 || static_cast<size_t>(e.index) >= ex.size()) continue;
    const ExecutorInfo& info = ex[static_cast<size_t>(e.index)];
    out.push_back({e.worker_id, e.index, info.weight,
                   static_cast<int64_t>(std::min<uint64_t>(info.free_memory, INT64_MAX))});
  }
  return out;
}

std::vector<KeptRowsReport> WorkerRegistry::kept_rows() const {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<KeptRowsReport> out;
  for (const auto& [id, w] : workers_) {
    if (!w.joined) continue;
    for (size_t i = 0; i < w.kept.size(); ++i) {
      const bool in_use = i < w.serving.size() && !w.serving[i].empty();
      for (const KeptRowsEntry& k : w.kept[i]) out.push_back({id, static_cast<int>(i), in_use, k});
    }
  }
  return out;
}

std::vector<WorkerView> WorkerRegistry::view() const {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<WorkerView> out;
  for (const auto& [id, w] : workers_) {
    if (!w.joined) continue;
    WorkerView v;
    v.id = id;
    for (size_t i = 0; i < w.hello.executors.size(); ++i) {
      const ExecutorInfo& e = w.hello.executors[i];
      const bool busy = !w.serving[i].empty() || !w.unresponsive.empty();
      v.executors.push_back({e.weight,
                             busy,
                             e.kind,
                             e.total_memory,
                             e.free_memory,
                             e.utilization,
                             e.launch_delay_us,
                             {}});
      if (i < w.kept.size())
        for (const auto& k : w.kept[i]) v.executors.back().kept.push_back(k.key);
    }
    for (const auto& [h, b] : w.programs) {
      if (b.state == BuildState::kReady) v.ready.insert(h);
      if (b.state == BuildState::kBuilding) v.building.insert(h);
      if (b.state == BuildState::kBuilding && b.at_join) v.joining.insert(h);
      if (b.state == BuildState::kFailed) v.failed[h] = b.error;
    }
    out.push_back(std::move(v));
  }
  return out;
}

std::vector<std::string> WorkerRegistry::not_joined_after(double seconds) const {
  const auto before = std::chrono::steady_clock::now() -
                      std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                          std::chrono::duration<double>(seconds));
  std::lock_guard<std::mutex> l(mu_);
  std::vector<std::string> out;
  for (const auto& [id, w] : workers_)
    if (!w.joined && w.connected < before) out.push_back(id);
  return out;
}

bool WorkerRegistry::joined(const std::string& id) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = workers_.find(id);
  return it != workers_.end() && it->second.joined;
}

size_t WorkerRegistry::joined() const {
  std::lock_guard<std::mutex> l(mu_);
  size_t n = 0;
  for (const auto& [_, w] : workers_) n += w.joined;
  return n;
}

std::vector<ExecutorReport> WorkerRegistry::executor_reports() const {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<ExecutorReport> out;
  for (const auto& [id, w] : workers_) {
    if (!w.joined) continue;
    for (size_t i = 0; i < w.hello.executors.size(); ++i)
      out.push_back({id, w.hello.hostname, static_cast<int>(i), w.hello.executors[i], w.serving[i],
                     w.runs_served[i]});
  }
  return out;
}

json WorkerRegistry::to_json() const {
  std::lock_guard<std::mutex> l(mu_);
  json out = json::array();
  for (const auto& [_, w] : workers_)
    if (w.joined) out.push_back(w.to_json());
  return out;
}

Result<json> WorkerRegistry::to_json(const std::string& id) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = workers_.find(id);
  if (it == workers_.end() || !it->second.joined) return not_found("no such worker: " + id);
  return it->second.to_json();
}

}  // namespace lizard
