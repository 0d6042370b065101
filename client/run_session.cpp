#include "client/run_session.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>

#include "common/background_release.h"
#include "common/clock.h"
#include "common/parallel.h"
#include "dataset/dataset_file.h"
#include "exec/file_rows.h"
#include "exec/program_variant.h"
#include "program/layout.h"

namespace lizard {

using nlohmann::json;

namespace {

// Whether a GPU begins some partition of `rows` on a first tier
// (first_tier_for) rather than waiting for the optimised build.
bool some_partition_begins_on_a_first_tier(const Manifest& m, const ParamValues& p,
                                           const std::vector<int64_t>& rows) {
  uint64_t row_bytes = 0;
  for (const FieldSpec& f : m.dataset) {
    auto width = row_width(f, m, p);
    if (width.ok() && *width > 0) row_bytes += static_cast<uint64_t>(*width) * dtype_size(f.type);
  }
  return std::any_of(rows.begin(), rows.end(), [&](int64_t n) {
    return first_tier_for(static_cast<uint64_t>(n) * row_bytes, false) != BuildTier::kOptimised;
  });
}

}  // namespace

RunSession::RunSession(SessionContext ctx, std::map<size_t, std::shared_ptr<UploadRows>> uploaded)
    : ctx_(std::move(ctx)), uploaded_(std::move(uploaded)) {
  thread_ = std::thread([this] { loop(); });
}

RunSession::~RunSession() {
  abort();
  if (thread_.joinable()) thread_.join();
}

void RunSession::abort() {
  aborting_ = true;
  inbox_.close();
  {  // a call blocked in a killed process returns at once; release() restarts it
    std::lock_guard<std::mutex> l(held_mu_);
    for (const ExecutorClaim& c : claims_)
      if (OwnerProcessExecutor* p = c.handle()->process) p->kill_process();
  }
  for (auto& h : *ctx_.executors) h->wake();  // a session waiting for an executor
}

// An aborted run answers nothing: its server has gone, or the worker is going.
void RunSession::reply(OutgoingFrame frame) {
  if (!aborting_) ctx_.send(std::move(frame));
}

// The run's outputs in one frame: each field of each executor goes out from
// where the executor gave it back, after the header.
void RunSession::reply_outputs(const RunOutputsMsg& out, std::vector<OutputFieldBytes> outs,
                               const std::vector<std::string_view>& payload) {
  // Written by the channel's io thread, whose last reference to the fields
  // then ends; their unmapping waits for the release thread, not the io one.
  auto owners = std::make_shared<std::vector<OutputFieldBytes>>(std::move(outs));
  reply(
      OutgoingFrame(encode(out.to_message()), payload, released_in_background(std::move(owners))));
}

void RunSession::loop() {
  while (!finished_) {
    std::optional<std::string> frame;
    if (stopped_by_) {
      frame = std::move(stopped_by_);
      stopped_by_.reset();
    } else {
      frame = inbox_.pop();
    }
    if (!frame) break;  // aborted
    auto m = decode_view(*frame);
    if (m.ok() && m->type == MessageType::kIterate && !fold_.children.empty()) send_down(*frame);
    if (m.ok()) handle(m.value());
    if (ctx_.frames) ctx_.frames->give(std::move(*frame));  // for the next frame received
  }
  leave_fold_tree();
  release();
  finished_ = true;
}

void RunSession::handle(const MessageView& m) {
  switch (m.type) {
    case MessageType::kRunStart: {
      auto h = RunStartMsg::parse(m.header);
      RunReadyMsg ready;
      ready.run_id = h.ok() ? h->run_id : "";
      Status st = h.status();
      CompileStats compile;
      if (st.ok()) st = start(m, h.value(), &compile);
      if (st.ok()) st = join_fold_tree(h->fold, &ready.fold_unreachable);
      if (!st.ok()) {
        // Rows gone from the upload cache are no fault: the server sends them.
        if (missing_.empty())
          spdlog::warn("run {}: {}", ready.run_id, st.message());
        else
          spdlog::debug("run {}: {}; the server sends them", ready.run_id, st.message());
        release();
      }
      ready.ok = st.ok();
      ready.error = st.message();
      ready.compile_ms = compile.compile_ms;
      ready.compile_cache_hit = st.ok() && compile.cache_hit;
      ready.quick_build = st.ok() && compile.quick_build;
      ready.missing = missing_;
      ready.file_bytes_read = file_bytes_read_;
      ready.file_bytes_kept = file_bytes_kept_;
      reply(encode(ready.to_message()));
      // The build compiled for it, once the run has its answer.
      if (st.ok() && compiled_here_ && ctx_.offer_build) ctx_.offer_build(*compiled_here_);
      return;
    }
    case MessageType::kIterate:
      return iterate(m);
    case MessageType::kLoop:
      return loop_here(m);
    case MessageType::kRunEnd: {
      auto h = RunEndMsg::parse(m.header);
      if (!h.ok()) return;
      RunOutputsMsg out;
      out.run_id = h->run_id;
      std::vector<OutputFieldBytes> outs;
      std::vector<std::string_view> payload;
      Status st = end(h.value(), &out.fields, &outs, &payload);
      out.ok = st.ok();
      out.error = st.message();
      if (h->want_outputs) reply_outputs(out, std::move(outs), payload);
      // What compiled while the run went (a GPU's optimised build, after
      // it began on a quick one) is offered too.
      if (compiled_here_ && ctx_.offer_build && !aborting_) ctx_.offer_build(*compiled_here_);
      compiled_here_.reset();
      leave_fold_tree();
      finished_ = true;
      return;
    }
    default:
      spdlog::debug("run {}: ignoring {} message", run_id_, message_type_name(m.type));
  }
}

// Keeps the uploaded rows that arrived as chunks for later runs, and finds
// those the server sent as `cached`; the fields no longer cached here go to
// missing_, and the server then sends their rows.
Status RunSession::use_upload_cache(const RunStartMsg& h, std::map<size_t, CachedRows>* cached) {
  const Manifest& man = program_->manifest;
  missing_.clear();
  for (size_t k = 0; k < man.dataset.size(); ++k) {
    const FieldSource& src = h.fields[k];
    const bool cached_rows = src.delivery == RowDelivery::kCached;
    if (src.delivery != RowDelivery::kChunks && !cached_rows) continue;
    LIZARD_ASSIGN_OR_RETURN(int64_t width, row_width(man.dataset[k], man, params_));
    const std::string key =
        UploadCache::key(src.upload, h.first_row, h.rows,
                         static_cast<size_t>(width) * dtype_size(man.dataset[k].type));
    if (cached_rows) {
      UploadCache::Rows rows = ctx_.uploads ? ctx_.uploads->find(key) : nullptr;
      if (rows)
        (*cached)[k] = {key, std::move(rows)};
      else if (!add_upload_copy(k, src, width, h.files).ok())  // else sent: the server learns
        missing_.push_back(static_cast<int64_t>(k));
    } else if (auto sent = uploaded_.find(k); sent != uploaded_.end() && sent->second) {
      // Kept for later runs, and this run's parts take them from there.
      UploadCache::Rows rows = std::move(sent->second);
      uploaded_.erase(sent);
      if (ctx_.uploads && !src.upload.empty()) ctx_.uploads->put(key, rows);
      (*cached)[k] = {src.upload.empty() ? "" : key, std::move(rows)};  // "": not to be kept
    }
  }
  if (missing_.empty()) return Status::Ok();
  return not_found("the rows of " + std::to_string(missing_.size()) +
                   " uploaded field(s) are no longer cached on this worker");
}

// One part's rows of field k that are not in the upload cache, by how its
// source delivers them (dataset/dataset_source.h): into *buf, or named in *d
// for the executor to fill.
Status RunSession::rows_of(size_t k, const FieldSource& src, const PartRows& part, PartitionData* d,
                           std::vector<uint8_t>* buf) {
  const std::string& name = program_->manifest.dataset[k].name;
  switch (src.delivery) {
    case RowDelivery::kRows: {
      LIZARD_ASSIGN_OR_RETURN(*buf, src.source->part_rows(src, part));
      return Status::Ok();
    }
    case RowDelivery::kChunks:  // taken from the upload's memory file (use_upload_cache)
      if (part.bytes > 0)
        return invalid_argument("run_start: rows of field '" + name + "' did not arrive");
      return Status::Ok();
    case RowDelivery::kGenerator:  // left empty: the executor allocates it zeroed
      if (std::find(d->generators.begin(), d->generators.end(), src.kernel) == d->generators.end())
        d->generators.push_back(src.kernel);
      return Status::Ok();
    case RowDelivery::kFile:    // read on its executor's turn (file_fields_)
    case RowDelivery::kCached:  // found in the upload cache, or reported missing
    case RowDelivery::kNone:
      return Status::Ok();
  }
  return Status::Ok();
}

Status RunSession::start(const MessageView& m, const RunStartMsg& h, CompileStats* compile) {
  const auto t0 = SteadyClock::now();
  run_id_ = h.run_id;
  report_progress_ = h.progress;
  program_ = ctx_.find_program(h.hash);
  if (!program_) return not_found("this worker has not built program " + h.hash);
  const Manifest& man = program_->manifest;
  LIZARD_ASSIGN_OR_RETURN(params_, bind_params(man, h.params));
  values_ = h;
  LIZARD_ASSIGN_OR_RETURN(state_, make_section(man.state, man, params_));
  if (h.fields.size() != man.dataset.size())
    return invalid_argument("run_start: field list does not match the manifest");
  file_fields_.clear();
  LIZARD_ASSIGN_OR_RETURN(server_roots_, DataRoots::of_server(h.data_roots));
  file_bytes_read_ = 0;
  file_bytes_kept_ = 0;
  std::map<size_t, CachedRows> cached;
  LIZARD_RETURN_IF_ERROR(use_upload_cache(h, &cached));
  for (size_t k = 0; k < man.dataset.size() && !h.parts.empty(); ++k) {
    if (h.fields[k].delivery != RowDelivery::kFile) continue;
    LIZARD_ASSIGN_OR_RETURN(int64_t width, row_width(man.dataset[k], man, params_));
    LIZARD_RETURN_IF_ERROR(add_file_field(k, h.fields[k], width, h.files));
  }
  std::vector<PartitionData> parts;
  for (const PartSpec& p : h.parts) {
    if (static_cast<size_t>(p.executor) >= ctx_.executors->size())
      return invalid_argument("run_start names executor " + std::to_string(p.executor));
    PartitionData d;
    static_cast<RunValues&>(d) = values_;  // the run's values, for its kernels
    d.first_row = p.first_row;
    d.rows = p.rows;
    if (d.first_row < h.first_row) return invalid_argument("run_start: a part precedes its rows");
    const size_t local_row = static_cast<size_t>(d.first_row - h.first_row);
    for (size_t k = 0; k < man.dataset.size(); ++k) {
      const FieldSpec& f = man.dataset[k];
      const FieldSource& src = h.fields[k];
      LIZARD_ASSIGN_OR_RETURN(int64_t width, row_width(f, man, params_));
      const size_t row_bytes = static_cast<size_t>(width) * dtype_size(f.type);
      const size_t off = row_bytes * local_row, n = row_bytes * static_cast<size_t>(d.rows);
      std::vector<uint8_t> buf;
      auto held = cached.find(k);  // uploaded rows: "cached", or "chunks" just sent
      if (held != cached.end()) {
        const UploadCache::Rows& all = held->second.rows;
        if (off + n > all->size())
          return invalid_argument("run_start: rows of field '" + f.name + "' are short");
        if ((*ctx_.executors)[static_cast<size_t>(p.executor)]->process) {
          // Read by the executor process from the worker's memory file, and
          // kept there under a key that names them for the next run.
          d.shared.resize(man.dataset.size());
          d.file_rows.resize(man.dataset.size());
          LIZARD_ASSIGN_OR_RETURN(d.file_rows[k], all->file_range(off, n));
          const std::string& key = held->second.key;
          d.shared[k] = {
              nullptr, 0, n,
              key.empty() ? key : key + "@" + std::to_string(off) + "+" + std::to_string(n)};
          if (ctx_.kept_catalog && !key.empty())
            ctx_.kept_catalog->note({d.shared[k].key,
                                     "upload " + src.upload + " rows " +
                                         std::to_string(d.first_row) + ".." +
                                         std::to_string(d.first_row + d.rows),
                                     n, src.upload, d.first_row, d.rows});
        } else {
          const std::string_view rows = all->view(off, n);
          buf.assign(rows.begin(), rows.end());
        }
      } else {
        LIZARD_RETURN_IF_ERROR(rows_of(k, src, {m.payload, off, n, f.type}, &d, &buf));
      }
      d.fields.push_back(std::move(buf));
    }
    executors_.push_back(static_cast<size_t>(p.executor));
    rows_.push_back(d.rows);
    parts.push_back(std::move(d));
  }
  uploaded_.clear();
  output_.bind(run_id_, [this](std::string frame) { reply(std::move(frame)); });
  engine_.bind({ctx_.executors, &executors_, &rows_, &man, &params_, report_progress_, run_id_,
                [this](std::string frame) { reply(std::move(frame)); }, &output_});
  const double rows_ms = ms_since(t0);
  // Built by another worker: taken from the server rather than compiled
  // (before the executors are held, as the server may take a while).
  compiled_here_.reset();
  if (ctx_.fetch_build) {
    ProgramVariant variant = variant_for_run(*program_, params_);
    if (ctx_.fetch_build(variant)) compiled_here_ = std::move(variant);
  }
  LIZARD_RETURN_IF_ERROR(acquire_executors());
  // The progress line says "compiling" only while something compiles.
  if (ctx_.needs_compile && ctx_.needs_compile(variant_for_run(*program_, params_))) {
    ProgressMsg compiling;
    compiling.run_id = run_id_;
    compiling.compiling = true;
    const bool first_tier =
        ctx_.begins_on_quick_builds && some_partition_begins_on_a_first_tier(man, params_, rows_);
    compiling.compiling_build = first_tier ? "quick" : "optimised";
    reply(encode(compiling.to_message()));
  }
  const auto t_begin = SteadyClock::now();
  std::vector<CompileStats> compiles(parts.size());
  Status st = first_error(for_each_parallel(parts.size(), [&](size_t i) {
    std::lock_guard<std::mutex> l(lock_of(i));
    log_output_outside_runs(process_of(i), static_cast<int64_t>(executors_[i]));
    LIZARD_RETURN_IF_ERROR(load_file_rows(i, &parts[i]));
    Status s = executor(i).begin_run(*program_, params_, std::move(parts[i]));
    output_.collect(process_of(i), static_cast<int64_t>(executors_[i]), -1);
    compiles[i] = executor(i).run_compile_stats();
    return s;
  }));
  output_.flush();
  begun_ = true;  // end_run frees whatever did begin
  LIZARD_RETURN_IF_ERROR(st);
  *compile = combine_compile_stats(compiles);
  for (size_t i = 0; i < compiles.size(); ++i)
    if (compiles[i].quick_build) engine_.began_on_quick_build(i);
  spdlog::debug(
      "run {}: loaded rows {}..{} (rows ready in {:.3f} ms, on the executors in {:.3f} ms)",
      run_id_, h.first_row, h.first_row + h.rows, rows_ms, ms_since(t_begin));
  return Status::Ok();
}

// The run's messages are reused from one iteration to the next, and the
// reply's buffer comes from the frame pool: an iteration allocates nothing.
void RunSession::iterate(const MessageView& m) {
  IterationResultMsg& r = result_msg_;
  Status st = iterate_msg_.read(m.packed);
  r.run_id.assign(st.ok() ? iterate_msg_.run_id : run_id_);
  r.iteration = st.ok() ? iterate_msg_.iteration : 0;
  r.kernel_ms = 0;
  r.quick_build = false;
  r.workers = 1;
  r.fold_failed = false;
  if (st.ok()) st = iterate_here(m);
  // In a tree a failure travels up through other workers: it names this one.
  if (!st.ok() && in_fold_tree())
    st = Status(st.code(), "worker " + ctx_.worker_id + ": " + st.message());
  if (st.ok() && !sent_down_.ok()) {
    r.fold_failed = true;
    st = Status(sent_down_.code(), "worker " + ctx_.worker_id + ": " + sent_down_.message());
  }
  if (st.ok() && in_fold_tree()) st = fold_children(r.iteration);
  r.ok = st.ok();
  r.error.assign(st.message());
  payload_parts_.clear();
  if (st.ok() && in_fold_tree()) {
    r.workers = fold_.workers;
    payload_parts_.emplace_back(reinterpret_cast<const char*>(folded_.bytes.data()),
                                folded_.bytes.size());
  } else if (st.ok()) {
    for (const SectionBuffer* a : engine_.partials())
      payload_parts_.emplace_back(reinterpret_cast<const char*>(a->bytes.data()), a->bytes.size());
  }
  std::string frame = take_frame();
  r.encode_into(&frame, payload_parts_.data(), payload_parts_.size());
  send_result(std::move(frame));
}

Status RunSession::iterate_here(const MessageView& m) {
  const IterateMsg& h = iterate_msg_;
  if (!begun_ || h.run_id != run_id_) return not_found("no such run on this worker");
  if (m.payload.size() != state_.bytes.size())
    return invalid_argument("state of " + std::to_string(m.payload.size()) + " bytes; expected " +
                            std::to_string(state_.bytes.size()));
  if (!state_.bytes.empty())
    std::memcpy(state_.bytes.data(), m.payload.data(), state_.bytes.size());
  LIZARD_RETURN_IF_ERROR(engine_.run(state_, h.iteration));
  result_msg_.kernel_ms = engine_.kernel_ms();
  result_msg_.quick_build = engine_.ran_on_quick_build();
  return Status::Ok();
}

Status RunSession::end(const RunEndMsg& h, std::vector<OutputPart>* fields,
                       std::vector<OutputFieldBytes>* kept,
                       std::vector<std::string_view>* payload) {
  if (!begun_ || h.run_id != run_id_) return not_found("no such run on this worker");
  const Manifest& man = program_->manifest;
  std::vector<OutputFieldBytes>& outs = *kept;
  outs.assign(executors_.size(), {});
  const auto t_end = SteadyClock::now();
  // Every executor's outputs at once: each waits on its own device and process.
  Status st = first_error(for_each_parallel(executors_.size(), [&](size_t i) {
    std::lock_guard<std::mutex> l(lock_of(i));
    auto r = executor(i).end_run_in_place(h.want_outputs);
    output_.collect(process_of(i), static_cast<int64_t>(executors_[i]), -1);
    if (!r.ok()) return r.status();
    outs[i] = std::move(r).value();
    return Status::Ok();
  }));
  if (h.want_outputs && st.ok()) {
    uint64_t total = 0;
    for (const auto& o : outs)
      for (std::string_view f : o.fields) total += f.size();
    spdlog::debug("run {}: {} bytes of outputs from {} executor(s) in {:.3f} ms", run_id_, total,
                  executors_.size(), ms_since(t_end));
  }
  begun_ = false;
  output_.finish();
  release();
  if (!h.want_outputs || !st.ok()) return st;
  for (size_t k = 0; k < man.dataset.size(); ++k) {
    if (!man.dataset[k].output) continue;
    if (std::find(h.outputs.begin(), h.outputs.end(), man.dataset[k].name) == h.outputs.end())
      continue;
    uint64_t bytes = 0;
    for (const auto& o : outs) {
      if (k >= o.fields.size()) continue;
      payload->push_back(o.fields[k]);
      bytes += o.fields[k].size();
    }
    fields->push_back({man.dataset[k].name, bytes});
  }
  return Status::Ok();
}

// Waits until the previous runs on this run's executors have let them go
// (their run_end may still be on its way through their sessions).  What it
// claimed before a failure or an abort stays in claims_, for release().
Status RunSession::acquire_executors() {
  const auto deadline = SteadyClock::now() + std::chrono::seconds(60);
  for (size_t i = 0; i < executors_.size(); ++i) {
    auto claim =
        ExecutorClaim::take((*ctx_.executors)[executors_[i]].get(), run_id_, deadline, aborting_);
    if (!claim.ok() && claim.status().code() == Code::kCancelled)
      return Status(Code::kCancelled, "aborted");
    if (!claim.ok())
      return unavailable("executor " + std::to_string(executors_[i]) + " is " +
                         claim.status().message());
    std::lock_guard<std::mutex> g(held_mu_);
    claims_.push_back(std::move(claim).value());
  }
  if (aborting_) return Status(Code::kCancelled, "aborted");
  return Status::Ok();
}

// Frees the run's buffers on every executor it began on and lets them go.
// An executor process that ended (a crash, or abort()) is restarted first,
// so that the next run finds it ready; all at once, as a GPU's takes a while.
void RunSession::release() {
  output_.finish();
  std::vector<ExecutorClaim> held;
  {
    std::lock_guard<std::mutex> l(held_mu_);
    held.swap(claims_);
  }
  (void)for_each_parallel(held.size(), [&](size_t i) {
    ExecutorHandle& h = *held[i].handle();
    {
      std::lock_guard<std::mutex> l(h.mu);
      if (begun_) (void)h.executor->end_run(false);
      if (h.process && !h.process->process_running()) {
        if (Status st = h.process->restart_if_ended(); st.ok())
          spdlog::info("restarted the executor process for executor {}", executors_[i]);
        else
          spdlog::error("cannot restart executor {}: {}", executors_[i], st.message());
      }
    }
    held[i].reset();
    return Status::Ok();
  });
  begun_ = false;
}

}  // namespace lizard
