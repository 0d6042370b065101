// HttpRoutes' GET /runs/{id}/logs: what a run printed (server/run_logs.h), as
// plain text, one tagged line each; ?worker=w1 keeps one source's lines.
// While the run goes, the lines that have arrived so far.
#include <string>

#include "runlog/log_format.h"
#include "server/http_routes.h"
#include "server/run_book.h"
#include "server/run_logs.h"

namespace lizard {

void HttpRoutes::get_logs(Call& c, Responder& r) {
  const std::string id = c.path["id"];
  std::string source;
  if (auto w = c.query.find("worker"); w != c.query.end()) {
    source = w->second;
    if (!valid_log_source(source))
      return r(error_response(invalid_argument(
          "worker must be a worker's id as GET /workers lists it (w1), or `server` for the "
          "server's hooks")));
  }
  auto run = s_.runs->find(id);
  if (!run || !s_.logs) return r(error_response(not_found("no run " + id)));
  if (auto a = s_.runs->access_of(id); a.ok())
    if (auto no = read_refusal(c.caller, *a, "run " + id)) return r(std::move(*no));
  s_.offload([logs = s_.logs, id = run->id, source, respond = std::move(r)] {
    answer_guarded(respond, [&](const Responder& respond) {
      auto text = logs->read(id, source);
      if (!text.ok()) return respond(error_response(text.status()));
      respond({200, "text/plain; charset=utf-8", std::move(text).value()});
    });
  });
}

}  // namespace lizard
