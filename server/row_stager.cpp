#include "server/row_stager.h"

#include <algorithm>
#include <cstdio>

#include "plan/partition_plan.h"
#include "server/worker_registry.h"

namespace lizard {

using nlohmann::json;

RowStager::RowStager(WorkerRegistry* workers, std::vector<std::string> data_roots,
                     StageDeadline deadline)
    : workers_(workers), data_roots_(std::move(data_roots)), deadline_(deadline) {}

Result<std::vector<ExecutorRef>> RowStager::pick_executors(int64_t wanted) const {
  std::vector<ExecutorRef> free;
  int64_t all = 0;
  for (const WorkerView& w : workers_->view())
    for (size_t i = 0; i < w.executors.size(); ++i, ++all)
      if (!w.executors[i].busy) free.push_back({w.id, static_cast<int>(i)});
  if (free.empty() || static_cast<int64_t>(free.size()) < wanted)
    return unavailable("the stage needs " + std::to_string(std::max<int64_t>(wanted, 1)) +
                       " free executor(s), but " + std::to_string(free.size()) + " of the " +
                       std::to_string(all) + " connected are free; stage again later");
  std::sort(free.begin(), free.end());  // as a run's placement lists them
  if (wanted > 0) free.resize(static_cast<size_t>(wanted));
  return free;
}

Result<json> RowStager::stage(const StageRequest& req) {
  LIZARD_ASSIGN_OR_RETURN(std::vector<ExecutorRef> refs, pick_executors(req.executors));
  std::string id;
  {
    std::lock_guard<std::mutex> l(mu_);
    id = "stage-" + std::to_string(next_id_++);
    replies_[id];
  }
  if (!workers_->claim(refs, id)) {
    std::lock_guard<std::mutex> l(mu_);
    replies_.erase(id);
    return unavailable("the executors were taken by a run meanwhile; stage again later");
  }
  // The plan a run over these executors makes (within their free memory).
  std::vector<ExecutorSlot> slots = workers_->slots(refs);
  const int64_t row_bytes = req.width * static_cast<int64_t>(dtype_size(req.dtype));
  for (ExecutorSlot& s : slots)
    s.max_rows = s.max_rows <= 0 ? -1 : std::max<int64_t>(0, s.max_rows) / row_bytes;
  Result<std::map<std::string, RowsStagedMsg>> replies = Status::Ok();
  PartitionPlan plan;
  if (!fits(req.rows, slots)) {
    replies = too_large("the file's " + std::to_string(req.rows * row_bytes) +
                        " bytes do not fit in the free memory of " + std::to_string(slots.size()) +
                        " executor(s)");
  } else {
    plan = plan_partition(req.rows, slots);
    std::map<std::string, StageRowsMsg> by_worker;
    int64_t most_rows = 0;  // of one worker: its deadline allows for them
    std::map<std::string, int64_t> rows_of;
    for (const PlanEntry& e : plan.entries) {
      if (e.rows == 0) continue;
      most_rows = std::max(most_rows, rows_of[e.worker_id] += e.rows);
      auto [it, fresh] = by_worker.try_emplace(e.worker_id);
      if (fresh)
        it->second = {id,
                      req.path,
                      file_format_name(req.format),
                      dtype_name(req.dtype),
                      req.width,
                      data_roots_,
                      {},
                      req.program};
      it->second.parts.push_back({e.executor, e.first_row, e.rows});
    }
    std::vector<std::string> waiting;
    for (const auto& [worker, m] : by_worker)
      if (workers_->send(worker, encode(m.to_message())).ok()) waiting.push_back(worker);
    replies = waiting.size() < by_worker.size()
                  ? Result<std::map<std::string, RowsStagedMsg>>(
                        worker_lost("a worker left before its rows were staged"))
                  : await(id, waiting, deadline_s(most_rows * row_bytes));
  }
  workers_->release(refs, id);
  {
    std::lock_guard<std::mutex> l(mu_);
    replies_.erase(id);
  }
  if (!replies.ok()) return replies.status();
  json out = req.to_json();
  out["executors"] = json::array();
  uint64_t bytes = 0;
  for (const auto& [worker, r] : *replies) {
    if (!r.ok) return runtime_error("worker " + worker + " could not stage the rows: " + r.error);
    for (const StagedPart& p : r.parts) {
      out["executors"].push_back({{"worker", worker},
                                  {"executor", p.executor},
                                  {"rows", {p.first_row, p.first_row + p.rows}},
                                  {"bytes", p.bytes},
                                  {"was_kept", p.was_kept}});
      bytes += p.bytes;
    }
  }
  out["bytes"] = bytes;
  return out;
}

double RowStager::deadline_s(int64_t bytes) const {
  if (deadline_.floor_s <= 0) return static_cast<double>(kStageTimeout.count());
  const double transfer =
      deadline_.bytes_per_s > 0 ? static_cast<double>(bytes) / deadline_.bytes_per_s : 0;
  return deadline_.floor_s + transfer;
}

Result<std::map<std::string, RowsStagedMsg>> RowStager::await(const std::string& id,
                                                              std::vector<std::string> waiting,
                                                              double seconds) {
  const auto deadline =
      std::chrono::steady_clock::now() +
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(seconds));
  std::unique_lock<std::mutex> l(mu_);
  for (;;) {
    std::map<std::string, RowsStagedMsg>& got = replies_[id];
    bool all = true;
    for (const std::string& w : waiting) {
      if (got.count(w)) continue;
      all = false;
      if (!workers_->link(w)) return worker_lost("worker " + w + " left while staging the rows");
    }
    if (all) return got;
    if (std::chrono::steady_clock::now() >= deadline) {
      // Left out of placement until it answers again, as after a run's deadline.
      char limit[32];
      std::snprintf(limit, sizeof limit, "%.4g", seconds);
      std::string late;
      for (const std::string& w : waiting) {
        if (got.count(w)) continue;
        workers_->missed_deadline(w, std::string("missed the stage deadline (") + limit + " s)");
        late += (late.empty() ? "" : ", ") + w;
      }
      return unavailable("worker " + late + " did not stage the rows within " + limit +
                         " s (--load-timeout, plus 1 s per 50 MB of rows); it gets no runs " +
                         "until it answers again");
    }
    answered_.wait_for(l, std::chrono::milliseconds(250));
  }
}

void RowStager::on_reply(const std::string& worker_id, const RowsStagedMsg& m) {
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = replies_.find(m.stage_id);
    if (it == replies_.end()) return;  // late: the stage gave up on it
    it->second[worker_id] = m;
  }
  answered_.notify_all();
}

size_t RowStager::drop(const std::string& source) {
  const std::string frame = encode(DropRowsMsg{source}.to_message());
  size_t told = 0;
  for (const WorkerView& w : workers_->view()) told += workers_->send(w.id, frame).ok();
  return told;
}

}  // namespace lizard
