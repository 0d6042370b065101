// The coordinator's answers about one run: the uploads it may read, its
// cancellation (DELETE /runtimes/{id}) and a wait for its end
// (GET /runtimes/{id}?wait_ms=N).
#include <boost/asio/steady_timer.hpp>

#include "server/coordinator_impl.h"

namespace lizard {

using nlohmann::json;

namespace {
HttpResponse record_or_error(const Result<json>& record) {
  return record.ok() ? json_response(200, record.value()) : error_response(record.status());
}
}  // namespace

UploadLookup Coordinator::Impl::upload_lookup_for(const User& caller) {
  return [this, caller](const std::string& id) -> Result<std::pair<std::string, FileFormat>> {
    if (auto held = datasets.access_of(id); held.ok() && !caller.runs_over_data_of(*held)) {
      const std::string& owner = held->owner;
      return permission_denied("upload " + id + " is " + (owner.empty() ? "nobody" : owner) +
                               "'s: a run reads only its owner's uploads and those shared "
                               "with its owner (POST /datasets?share=NAME)");
    }
    return datasets.lookup(id);
  };
}

void Coordinator::Impl::cancel_run(const std::string& id, Responder respond) {
  auto outcome = runs.cancel(id);
  if (!outcome.ok()) {
    json body = {{"error", outcome.status().message()}};
    if (auto run = runs.find(id)) body["status"] = runs.get_json(id).value().value("status", "");
    return respond(json_response(http_status(outcome.status()), body));
  }
  const bool cancelled = outcome.value() == RunBook::CancelOutcome::kCancelled;
  if (!cancelled) to_driver(id, DriverEvent{DriverEvent::Kind::kWake, "", {}, {}});
  respond(
      json_response(202, {{"runtime_id", id}, {"status", cancelled ? "cancelled" : "cancelling"}}));
}

// The record once the run has finished, or after `wait_ms` as it stands
// then, whichever comes first: a follower learns of the end at once without
// asking many times a second.  A wait the end answered leaves its timer to
// find nothing; a server shutting down answers at once.
void Coordinator::Impl::watch_run(const std::string& id, int wait_ms, Responder respond) {
  auto run = runs.find(id);
  if (!run || wait_ms <= 0 || stopping) return respond(record_or_error(runs.get_json(id)));
  const uint64_t token = runs.add_waiter(run, respond);
  if (token == 0) return;  // it had finished: answered
  auto timer = std::make_shared<boost::asio::steady_timer>(slot_deadlines);
  timer->expires_after(std::chrono::milliseconds(wait_ms));
  timer->async_wait([this, run, token, timer](const boost::system::error_code&) {
    if (Responder respond = runs.take_waiter(run, token))
      respond(record_or_error(runs.get_json(run->id)));
  });
}

}  // namespace lizard
