#include "server/run_channel.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>

#include "protocol/messages.h"

namespace lizard {

void RunChannel::start_clock() {
  started_ = SteadyClock::now();
  time_limit_s_ = run_->request.timeout_s > 0 ? run_->request.timeout_s : ctx_.run_timeout_s;
}

Status RunChannel::interrupted() {
  if (ctx_.stopping()) return unavailable("the server is shutting down");
  if (ctx_.book->update(run_, [](RunRecord& r) { return r.cancel_requested; })) {
    abort_ = true;
    return Status(Code::kCancelled, "cancelled");
  }
  if (time_limit_s_ > 0 && ms_since(started_) > time_limit_s_ * 1000) {
    abort_ = true;
    char limit[32];
    std::snprintf(limit, sizeof limit, "%g", time_limit_s_);
    return runtime_error(std::string("the run ran past its time limit of ") + limit + " s");
  }
  return Status::Ok();
}

Status RunChannel::refuse_message(const std::string& worker_id, const std::string& what) {
  spdlog::warn("{}: worker {} sent {}", run_->id, worker_id, what);
  ctx_.workers->sent_bad_message(worker_id, what + " (run " + run_->id + ")");
  return runtime_error("worker " + worker_id + " sent " + what);
}

void RunChannel::drop_executors_of(const std::string& worker_id) {
  if (std::find(lost_workers_.begin(), lost_workers_.end(), worker_id) == lost_workers_.end())
    lost_workers_.push_back(worker_id);
  ctx_.book->update(run_, [&](RunRecord& r) {
    r.executors.erase(
        std::remove_if(r.executors.begin(), r.executors.end(),
                       [&](const ExecutorRef& e) { return e.worker_id == worker_id; }),
        r.executors.end());
  });
}

Result<std::optional<DriverEvent>> RunChannel::next_event_from(const std::vector<std::string>& from,
                                                               const ParticipantIndex* index) {
  LIZARD_RETURN_IF_ERROR(interrupted());
  auto ev = inbox_.pop_for(std::chrono::milliseconds(200));
  if (!ev) return std::optional<DriverEvent>();
  const bool of_from = index ? index->count(ev->worker_id) > 0
                             : std::find(from.begin(), from.end(), ev->worker_id) != from.end();
  const bool watched = ev->kind == DriverEvent::Kind::kWorkerLost &&
                       std::find(watched_.begin(), watched_.end(), ev->worker_id) != watched_.end();
  if (!of_from && !watched) return std::optional<DriverEvent>();
  if (ev->kind == DriverEvent::Kind::kWorkerLost) {
    drop_executors_of(ev->worker_id);
    const bool heartbeat = ev->reason.rfind("missed heartbeat", 0) == 0;
    deadline_.seconds = 0;
    return worker_lost("lost worker " + ev->worker_id +
                       (ev->worker_name.empty() ? "" : " (" + ev->worker_name + ")") +
                       ": it left during the run (" +
                       (ev->reason.empty() ? "its connection closed" : ev->reason) +
                       (heartbeat ? ")" : "; the worker's log says why)"));
  }
  if (ev->kind == DriverEvent::Kind::kMessage && ev->msg.type == MessageType::kProgress) {
    heard_from(ev->worker_id);  // at work: its deadline counts from now
    return std::optional<DriverEvent>();
  }
  return ev;
}

Result<std::map<std::string, Message>> RunChannel::collect(const std::string& wire_id,
                                                           MessageType type,
                                                           const std::vector<std::string>& from,
                                                           bool keep_failures) {
  std::map<std::string, Message> got;
  while (got.size() < from.size()) {
    LIZARD_RETURN_IF_ERROR(
        check_deadlines(wire_id, from, [&](size_t k) { return got.count(from[k]) > 0; }));
    LIZARD_ASSIGN_OR_RETURN(std::optional<DriverEvent> ev, next_event_from(from));
    if (!ev || ev->kind != DriverEvent::Kind::kMessage || ev->msg.type != type) continue;
    if (wire_run_id_of(ev->msg) != wire_id) continue;  // an earlier attempt's
    if (!keep_failures)
      if (auto error = reported_error(ev->msg))
        return runtime_error("worker " + ev->worker_id + ": " + *error);
    got[ev->worker_id] = std::move(ev->msg);
  }
  return got;
}

void RunChannel::end_on_workers(const std::string& wire_id,
                                const std::vector<std::string>& participants, bool want_outputs,
                                const std::vector<std::string>& outputs) {
  // A cancelled run, or one past its time limit, may have kernels that never
  // return: its workers kill them instead of waiting for them to end.
  // An abort goes ahead of the rows still queued for the workers.
  const std::string frame =
      abort_ ? encode(RunAbortMsg{wire_id, "cancelled or past its time limit"}.to_message())
             : encode(RunEndMsg{wire_id, want_outputs, outputs}.to_message());
  for (const auto& id : participants)
    (void)ctx_.workers->send(id, abort_ ? OutgoingFrame::control(frame) : OutgoingFrame(frame));
}

}  // namespace lizard
