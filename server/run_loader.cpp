#include "server/run_loader.h"

#include <algorithm>
#include <future>

#include "common/clock.h"
#include "protocol/messages.h"
#include "protocol/staging_messages.h"
#include "server/row_streamer.h"
#include "server/run_files.h"
#include "server/server_metrics.h"

namespace lizard {

Status RunLoader::wait_for_placement(const std::string& last_loss) {
  const bool have = ctx_.book->update(run_, [](RunRecord& r) {
    if (r.executors.empty()) r.needs_executors = true;
    return !r.executors.empty();
  });
  if (have) return Status::Ok();
  ctx_.wake_scheduler();
  const auto deadline = SteadyClock::now() + std::chrono::seconds(ctx_.worker_wait_s);
  while (SteadyClock::now() < deadline) {
    LIZARD_RETURN_IF_ERROR(channel_->interrupted());
    auto ev = channel_->pop_for(std::chrono::milliseconds(200));
    if (ev && ev->kind == DriverEvent::Kind::kPlacement) return Status::Ok();
  }
  ctx_.book->update(run_, [](RunRecord& r) { r.needs_executors = false; });
  if (!last_loss.empty())
    return unavailable(last_loss + "; no other worker that has built program " +
                       run_->hash.substr(0, 12) + " became free within " +
                       std::to_string(ctx_.worker_wait_s) + " s (GET /clients lists the workers)");
  return unavailable("no worker has built program " + run_->hash.substr(0, 12) + " after " +
                     std::to_string(ctx_.worker_wait_s) + " s (GET /clients lists the workers)");
}

// Turns each executor's free memory (max_rows holds bytes on entry) into the
// rows it can hold; fails before any work when they cannot hold them all.
Status RunLoader::limit_rows_to_memory(std::vector<ExecutorSlot>* slots) const {
  const Manifest& m = run_->program->image.manifest;
  const ParamValues& p = run_->request.params;
  int64_t row_bytes = 0;
  for (const auto& f : m.dataset) {
    LIZARD_ASSIGN_OR_RETURN(int64_t width, row_width(f, m, p));
    row_bytes += width * static_cast<int64_t>(dtype_size(f.type));
  }
  LIZARD_ASSIGN_OR_RETURN(SectionBuffer st, make_section(m.state, m, p));
  LIZARD_ASSIGN_OR_RETURN(SectionBuffer ag, make_section(m.aggregate, m, p));
  const int64_t fixed =
      static_cast<int64_t>(st.bytes.size() + 2 * ag.bytes.size()) + (int64_t{64} << 20);
  int64_t room = 0;
  for (auto& s : *slots) {
    const int64_t free_bytes = s.max_rows;
    s.max_rows = free_bytes <= 0 || row_bytes == 0
                     ? -1
                     : std::max<int64_t>(0, free_bytes - fixed) / row_bytes;
    room += std::max<int64_t>(0, free_bytes - fixed);
  }
  const int64_t rows = run_->request.rows;
  if (fits(rows, *slots)) return Status::Ok();
  return too_large("the dataset does not fit: " + std::to_string(rows) + " rows x " +
                   std::to_string(row_bytes) + " bytes = " + std::to_string(rows * row_bytes) +
                   " bytes, but the " + std::to_string(slots->size()) + " executor(s) have " +
                   std::to_string(room) + " bytes free between them");
}

// Plans the rows over the run's executors and loads every worker, each on a
// thread of its own so that uploaded rows stream to all of them at once.
Result<std::vector<std::string>> RunLoader::load(const std::string& wire_id, bool fold_tree) {
  const auto t0 = SteadyClock::now();
  tree_failed_ = false;
  const std::vector<ExecutorRef> held =
      ctx_.book->update(run_, [](RunRecord& r) { return r.executors; });
  std::vector<ExecutorSlot> slots = ctx_.workers->slots(held);
  if (slots.size() < held.size()) {  // a worker left before the plan
    for (const auto& e : held)
      if (!ctx_.workers->link(e.worker_id)) {
        channel_->drop_executors_of(e.worker_id);
        return worker_lost("lost worker " + e.worker_id);
      }
  }
  LIZARD_RETURN_IF_ERROR(limit_rows_to_memory(&slots));
  PartitionPlan plan = plan_partition(run_->request.rows, slots);
  ctx_.book->update(run_, [&](RunRecord& r) {
    r.plan = plan;
    r.phases.planning_ms = ms_since(t0);
  });
  std::map<std::string, std::vector<const PlanEntry*>> by_worker;
  for (const auto& e : plan.entries)
    if (e.rows > 0) by_worker[e.worker_id].push_back(&e);
  const auto t_load = SteadyClock::now();
  std::vector<std::string> participants;
  for (const auto& [id, _] : by_worker) participants.push_back(id);
  // A custom reducer folds at the server, in its aggregate hook.
  const bool tree_allowed = fold_tree && !run_->program->image.manifest.has_custom_reducer();
  tree_ = RunFoldTree::plan(participants, ctx_.workers->fold_addresses(participants),
                            tree_allowed ? ctx_.fold_fan_in : 0,
                            ctx_.iteration_timeout_s > 0 ? ctx_.iteration_timeout_s / 2 : 86400);
  // A run cancelled by now sends its workers nothing.
  LIZARD_RETURN_IF_ERROR(channel_->interrupted());
  // Uploaded rows are first offered from the workers' caches; a worker that
  // no longer holds them says so, and is sent them.
  auto ready = load_workers(wire_id, by_worker, participants, /*stream_uploads=*/false);
  std::vector<std::string> missing;
  if (ready.ok()) {
    for (const auto& [id, r] : ready.value())
      if (!r.ok && !r.missing.empty()) missing.push_back(id);
    if (!missing.empty()) {
      auto again = load_workers(wire_id, by_worker, missing, /*stream_uploads=*/true);
      if (again.ok())
        for (auto& [id, r] : again.value()) ready.value()[id] = std::move(r);
      else
        ready = again.status();
    }
  }
  Status failed = ready.status();
  if (ready.ok())
    for (const auto& [id, r] : ready.value()) {
      if (!r.ok && failed.ok()) failed = runtime_error("worker " + id + ": " + r.error);
      tree_failed_ = tree_failed_ || (!r.ok && r.fold_unreachable);
    }
  // Files whose content the run verifies are read again now: a write through
  // a shared mapping while the workers read them moves no identity.
  if (failed.ok()) failed = check_contents_unchanged(run_->request.spec.files);
  if (!failed.ok()) {
    channel_->end_on_workers(wire_id, participants, false);
    if (failed.code() == Code::kConflict) drop_kept_rows(participants);
    return failed.with_context("loading the dataset");
  }
  double compile_ms = 0;
  bool cache_hit = true, quick_build = false;
  uint64_t file_bytes_read = 0, file_bytes_kept = 0;
  for (const auto& [_, r] : ready.value()) {
    compile_ms = std::max(compile_ms, r.compile_ms);
    file_bytes_read += r.file_bytes_read;
    file_bytes_kept += r.file_bytes_kept;
    cache_hit = cache_hit && r.compile_cache_hit;
    quick_build = quick_build || r.quick_build;
    if (ctx_.metrics)
      ctx_.metrics->count_run_ready(r.compile_cache_hit, r.compile_ms, r.quick_build);
  }
  ctx_.book->update(run_, [&](RunRecord& r) {
    r.phases.loading_ms = ms_since(t_load);
    r.phases.compile_ms = compile_ms;
    r.phases.compile_cache_hit = cache_hit;
    if (quick_build) r.phases.quick_build = true;
    bool uploads = false, files = false;
    for (const auto& d : run_->request.dataset) {
      if (!d.source) continue;
      uploads = uploads || d.source->delivery() == RowDelivery::kCached;
      files = files || d.source->delivery() == RowDelivery::kFile;
    }
    if (uploads) r.phases.uploads_cached = missing.empty();
    // Rows of `path` fields, and of uploads read from the server's copy:
    // read from their files, or kept on the executors.
    if (files || file_bytes_read + file_bytes_kept > 0) {
      r.phases.file_bytes_read = file_bytes_read;
      r.phases.file_bytes_kept = file_bytes_kept;
    }
  });
  return participants;
}

// Rows of a file that changed while they were read hold neither version:
// the workers let go of them.
void RunLoader::drop_kept_rows(const std::vector<std::string>& workers) const {
  for (const PinnedFile& pin : run_->request.spec.files) {
    const std::string frame = encode(DropRowsMsg{pin.path}.to_message());
    for (const std::string& id : workers) (void)ctx_.workers->send(id, frame);
  }
}

// Loads `which` workers, each on a thread of its own so that uploaded rows
// stream to all of them at once, and collects their run_ready answers.
Result<std::map<std::string, RunReadyMsg>> RunLoader::load_workers(
    const std::string& wire_id,
    const std::map<std::string, std::vector<const PlanEntry*>>& by_worker,
    const std::vector<std::string>& which, bool stream_uploads) {
  Status loaded = Status::Ok();
  if (which.size() == 1) {  // no thread to start for one worker
    loaded = start_worker(wire_id, which.front(), by_worker.at(which.front()), stream_uploads);
  } else {
    std::vector<std::future<Status>> loads;
    for (const auto& id : which)
      loads.push_back(std::async(std::launch::async, [&, id] {
        return start_worker(wire_id, id, by_worker.at(id), stream_uploads);
      }));
    for (auto& f : loads) {
      Status st = f.get();
      if (loaded.ok() && !st.ok()) loaded = st;
    }
  }
  if (!loaded.ok()) return loaded;
  int64_t most_rows = 0;
  for (const auto& id : which) {
    int64_t rows = 0;
    for (const PlanEntry* e : by_worker.at(id)) rows += e->rows;
    most_rows = std::max(most_rows, rows);
  }
  channel_->expect_answers("run_start", 0, channel_->load_deadline_s(most_rows), which);
  LIZARD_ASSIGN_OR_RETURN(auto got, channel_->collect(wire_id, MessageType::kRunReady, which,
                                                      /*keep_failures=*/true));
  std::map<std::string, RunReadyMsg> ready;
  for (const auto& [id, msg] : got) {
    auto r = RunReadyMsg::parse(msg.header);
    if (!r.ok())
      return channel_->refuse_message(id,
                                      "a run_ready that does not parse: " + r.status().message());
    ready[id] = std::move(r).value();
  }
  return ready;
}

// Sends one worker its rows (uploaded ones as chunks, or from its cache;
// others as sources it reads or generates) and then its run_start.
Status RunLoader::start_worker(const std::string& wire_id, const std::string& worker_id,
                               const std::vector<const PlanEntry*>& entries, bool stream_uploads) {
  const Manifest& m = run_->program->image.manifest;
  const RunRequest& req = run_->request;
  RunStartMsg start;
  static_cast<RunSpec&>(start) = req.spec;
  start.run_id = wire_id;
  start.hash = run_->hash;
  start.data_roots = ctx_.data_roots;
  // A map-style run (one iteration) runs in slices that report progress.
  start.progress = run_->reports_rows();
  for (const auto* e : entries) start.parts.push_back({e->executor, e->first_row, e->rows});
  start.first_row = entries.front()->first_row;
  for (const auto* e : entries) start.rows += e->rows;
  start.fold = tree_.place_of(worker_id);
  std::shared_ptr<WorkerLink> link = ctx_.workers->link(worker_id);
  if (!link) return worker_lost("lost worker " + worker_id);
  std::string payload;
  for (size_t k = 0; k < m.dataset.size(); ++k) {
    const ParsedSource& s = req.dataset[k];
    FieldSource f;
    f.name = m.dataset[k].name;
    if (s.source) {  // its kind says how (dataset/dataset_source.h)
      f.source = s.source;
      const size_t row_bytes = static_cast<size_t>(s.width) * dtype_size(m.dataset[k].type);
      LIZARD_RETURN_IF_ERROR(s.source->to_wire(
          s, {start.first_row, start.rows, row_bytes, stream_uploads}, &f, &payload));
    }
    if (f.delivery == RowDelivery::kChunks)  // sent just before run_start
      LIZARD_RETURN_IF_ERROR(
          stream_upload_rows(*link, wire_id, k, s, m.dataset[k].type, start.first_row, start.rows));
    if (f.delivery == RowDelivery::kCached && !f.path.empty() && s.file)
      start.files.push_back({f.name, f.path, *s.file, ""});  // the version a reader must find
    start.fields.push_back(std::move(f));
  }
  link->send(encode(start.to_message(std::move(payload))));
  return Status::Ok();
}

}  // namespace lizard
