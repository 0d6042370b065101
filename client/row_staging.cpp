#include "client/row_staging.h"
#include "client/keyed_file_rows.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "common/dtype.h"
#include "dataset/file_rows_key.h"
#include "exec/file_rows.h"

namespace lizard {

namespace {

constexpr const char* kOwner = "staging rows";

}  // namespace

RowStaging::RowStaging(std::vector<std::unique_ptr<ExecutorHandle>>* executors,
                       KeptRowsCatalog* catalog, UploadCache* uploads,
                       const DataRoots* worker_roots, Done done)
    : executors_(executors),
      catalog_(catalog),
      uploads_(uploads),
      worker_roots_(worker_roots),
      done_(std::move(done)) {
  thread_ = std::thread([this] { loop(); });
}

RowStaging::~RowStaging() {
  stopping_ = true;
  jobs_.close();
  for (auto& h : *executors_) h->wake();  // a stage waiting for a busy executor
  if (thread_.joinable()) thread_.join();
}

void RowStaging::post(std::string frame) {
  jobs_.push(std::move(frame));
}

void RowStaging::loop() {
  while (!stopping_) {
    // Drops deferred for a running run are tried again every second.
    auto job =
        jobs_.pop_for(deferred_.empty() ? std::chrono::seconds(3600) : std::chrono::seconds(1));
    if (stopping_) return;
    if (job) handle(*job);
    if (!deferred_.empty()) retry_deferred();
  }
}

void RowStaging::handle(const std::string& frame) {
  auto m = decode_view(frame);
  if (!m.ok()) return;
  if (m->type == MessageType::kStageRows) {
    auto msg = StageRowsMsg::parse(m->header);
    RowsStagedMsg reply;
    if (msg.ok()) {
      reply = stage(*msg);
    } else {
      reply.stage_id = m->header.value("stage_id", "");
      reply.error = msg.status().message();
    }
    done_(encode(reply.to_message()));
  } else if (m->type == MessageType::kDropRows) {
    auto msg = DropRowsMsg::parse(m->header);
    if (!msg.ok()) return spdlog::warn("{}", msg.status().message());
    drop(msg->source);
    done_("");
  }
}

RowsStagedMsg RowStaging::stage(const StageRowsMsg& m) {
  RowsStagedMsg reply;
  reply.stage_id = m.stage_id;
  auto roots = DataRoots::of_server(m.data_roots);
  if (!roots.ok()) {
    reply.error = roots.status().message();
    return reply;
  }
  for (StagedPart part : m.parts) {
    if (Status st = stage_part(m, *roots, &part); !st.ok()) {
      reply.error = st.message();
      return reply;
    }
    reply.parts.push_back(std::move(part));
  }
  reply.ok = true;
  return reply;
}

Status RowStaging::stage_part(const StageRowsMsg& m, const DataRoots& server_roots,
                              StagedPart* part) {
  const std::string what = "executor " + std::to_string(part->executor);
  if (part->executor >= static_cast<int64_t>(executors_->size()))
    return invalid_argument(what + ": this worker has " + std::to_string(executors_->size()) +
                            " executor(s)");
  LIZARD_ASSIGN_OR_RETURN(FileFormat format, parse_file_format(m.format));
  if (format != FileFormat::kNpy && format != FileFormat::kRaw)
    return invalid_argument("only npy and raw files can be staged (got " + m.format + ")");
  DType dtype;
  if (!parse_dtype(m.dtype, &dtype)) return invalid_argument("unknown dtype " + m.dtype);
  // Keyed as a run keys them (keyed_file_rows.h).
  LIZARD_ASSIGN_OR_RETURN(FileRowsKey key,
                          open_file_rows_key(server_roots, worker_roots_, m.path, format, dtype,
                                             m.width, part->first_row, part->rows));
  part->key = key.key();
  part->bytes = key.bytes();
  if (part->rows == 0) return Status::Ok();
  const size_t i = static_cast<size_t>(part->executor);
  ExecutorClaim claim = take(i, kExecutorWaitS);
  if (!claim)
    return unavailable(what + " is still busy with a run after " + std::to_string(kExecutorWaitS) +
                       " s");
  ExecutorHandle& h = *(*executors_)[i];
  if (h.process && m.program.empty())  // a server that names none
    return invalid_argument(what +
                            ": name the program whose runs read the rows: each program's "
                            "executor processes keep rows for its runs alone");
  // Executor processes keep rows per program, for its runs alone.
  const std::string& owner = OwnerProcessExecutor::owner_of(m.program);
  Status result = Status::Ok();
  const std::vector<std::string> kept =
      h.process ? h.process->kept_rows_for(owner) : h.executor->kept_rows();
  part->was_kept = std::find(kept.begin(), kept.end(), part->key) != kept.end();
  if (!part->was_kept) {
    auto located = locate_keyed_rows(key, "stage again");
    if (!located.ok())
      result = located.status();
    else if (h.process)
      result = h.process->keep_file_rows_for(owner, part->key, *located);
    else
      result = h.executor->keep_file_rows(part->key, *located);
  }
  if (result.ok()) catalog_->note(key);
  return result.with_context(what);
}

void RowStaging::drop(const std::string& source) {
  if (uploads_) uploads_->erase_upload(source);
  for (size_t i = 0; i < executors_->size(); ++i) deferred_[i].insert(source);
  retry_deferred();
}

void RowStaging::retry_deferred() {
  for (auto it = deferred_.begin(); it != deferred_.end();) {
    const size_t i = it->first;
    ExecutorClaim claim = take(i, 0);
    if (!claim) {
      ++it;
      continue;
    }
    std::set<std::string> keys;
    for (const std::string& source : it->second) {
      std::set<std::string> of = catalog_->keys_of(source);
      keys.insert(of.begin(), of.end());
    }
    Executor& executor = *(*executors_)[i]->executor;
    if (!keys.empty()) executor.forget_kept_rows(keys);
    // A forget the executor refused (it still served a run) is tried again.
    bool still_kept = false;
    for (const std::string& key : executor.kept_rows()) still_kept = still_kept || keys.count(key);
    if (still_kept) {
      ++it;
      continue;
    }
    it = deferred_.erase(it);
  }
}

ExecutorClaim RowStaging::take(size_t i, int wait_s) {
  auto claim = ExecutorClaim::take((*executors_)[i].get(), kOwner,
                                   SteadyClock::now() + std::chrono::seconds(wait_s), stopping_);
  return claim.ok() ? std::move(claim).value() : ExecutorClaim();
}

}  // namespace lizard
