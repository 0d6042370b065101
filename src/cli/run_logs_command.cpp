#include "cli/run_logs_command.h"

#include <chrono>
#include <thread>

#include "runlog/log_format.h"

namespace lizard {
namespace {

// The run's log as the server has it now.
Result<std::string> fetch_logs(const ServerApi& api, const LogsOptions& o) {
  LIZARD_ASSIGN_OR_RETURN(HttpReply reply, api.send("GET", run_logs_path(o), "", 30));
  if (reply.status != 200) return status_of_error_answer(reply.status, reply.body);
  return std::move(reply.body);
}

// Whether the run has ended (done, failed or cancelled).
Result<bool> run_ended(const ServerApi& api, const std::string& id) {
  LIZARD_ASSIGN_OR_RETURN(nlohmann::json record, api.get("/runtimes/" + id));
  const std::string status = record.value("status", "");
  return status != "queued" && status != "running";
}

int fail(std::ostream* err, const Status& s) {
  *err << "lizard: " << s.message() << "\n";
  return 1;
}

}  // namespace

std::string run_logs_path(const LogsOptions& o) {
  std::string path = "/runtimes/" + o.run_id + "/logs";
  if (!o.worker.empty()) path += "?worker=" + o.worker;
  return path;
}

int show_run_logs(const ServerApi& api, const LogsOptions& o, std::ostream* out,
                  std::ostream* err) {
  if (!o.worker.empty() && !valid_log_source(o.worker)) {
    *err << "lizard logs: --worker takes a worker's id (w1), or `server`\n";
    return 2;
  }
  size_t shown = 0;  // bytes of the log printed: it only grows at its end
  for (;;) {
    // Whether the run had ended is asked first, so that the lines fetched
    // after it are all there are.
    bool ended = true;
    if (o.follow) {
      auto e = run_ended(api, o.run_id);
      if (!e.ok()) return fail(err, e.status());
      ended = *e;
    }
    auto text = fetch_logs(api, o);
    if (!text.ok()) return fail(err, text.status());
    if (text->size() > shown) {
      *out << text->substr(shown);
      out->flush();
      shown = text->size();
    }
    if (ended) return 0;
    std::this_thread::sleep_for(std::chrono::duration<double>(o.poll_s));
  }
}

}  // namespace lizard
