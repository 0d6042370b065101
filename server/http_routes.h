// HttpRoutes: the REST API — the route table, bearer tokens, and the JSON
// views of programs, workers, runs and datasets, under /api/v1 and under the
// paths they had before it (/runtimes, /clients, ...), which answer the same;
// also GET /metrics
// (server_metrics.h) and the dashboard (dashboard.h: `/` for browsers, its
// files under /ui/).  Every answer is counted in the metrics.  Reads are
// answered from the registries directly; work that may block (registering a
// program, checking a run request, assembling a field) goes to `offload`,
// and actions go to the RouteActions the coordinator implements.
//
// Called on the network layer's io thread; never blocks it.  Holds no state
// of its own beyond its options (no lock): the registries it reads guard
// theirs.
//
//   HttpRoutes routes(opts, services);
//   routes.handle(std::move(req), std::move(respond));
//   for (const RouteSpec& r : route_specs()) ...     // e.g. to check docs/openapi.yaml
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "common/status.h"
#include "server/transport.h"
#include "users/user_directory.h"

namespace lizard {

class DataRoots;
class DatasetStore;
class FileVisibility;
class ProgramRegistry;
class RowStager;
class RunBook;
class RunLogs;
class ServerMetrics;
class UsersFile;
class WorkerRegistry;

// One route: method and path, with OpenAPI templating ("/runtimes/{id}").
struct RouteSpec {
  std::string method;
  std::string path;
};
const std::vector<RouteSpec>& route_specs();
// The paths a route under /api/v1 had before it ("/api/v1/runs/{id}" →
// "/runtimes/{id}"), which the server still answers; none for the others.
std::vector<std::string> legacy_paths(const std::string& path);

// What a route asks the coordinator to do.
class RouteActions {
 public:
  virtual ~RouteActions() = default;
  // `caller`: who asks; kept as the program's first registrant and as the
  // run's owner, whose own uploads (anyone's, for an admin) the run may read.
  virtual void register_program(std::string body, const User& caller, Responder respond) = 0;
  virtual void submit_run(const std::string& hash, std::string body, bool wait, const User& caller,
                          Responder respond) = 0;
  virtual void cancel_run(const std::string& id, Responder respond) = 0;
  // GET /runtimes/<id>?wait_ms=N: the record once the run finishes, or
  // after `wait_ms` as it stands then.
  virtual void watch_run(const std::string& id, int wait_ms, Responder respond) = 0;
  // DELETE /programs/<hash>: 409 while runs of it are queued or running.
  virtual void delete_program(const std::string& hash, Responder respond) = 0;
};

// Without a users file, the server's single tokens: --token is the admin,
// --read-token the reader.  With one (`users`), each request's token names
// its user there, and `token` admits workers only.
struct RoutesOptions {
  std::string token;       // required of POST/DELETE (and the workers), when set
  std::string read_token;  // required of GET too, when set (the token also works)
  UsersFile* users = nullptr;
};

struct RouteServices {
  ProgramRegistry* programs = nullptr;
  WorkerRegistry* workers = nullptr;
  RunBook* runs = nullptr;
  DatasetStore* datasets = nullptr;
  RouteActions* actions = nullptr;
  ServerMetrics* metrics = nullptr;  // GET /metrics, and counts every answer; may be null
  std::function<void(std::function<void()>)> offload;  // runs work off the io thread
  RowStager* stager = nullptr;            // POST /datasets/stage and /datasets/drop; may be null
  const DataRoots* data_roots = nullptr;  // where staged files may lie; null: anywhere
  FileVisibility* visibility = nullptr;   // POST /datasets/probe; may be null
  RunLogs* logs = nullptr;                // GET /runs/{id}/logs; may be null
};

// The HTTP status for an error Status.
int http_status(const Status& s);
HttpResponse json_response(int status, const nlohmann::json& j);
HttpResponse error_response(const Status& s);
// Runs `work` with a responder.  An exception it lets out (a bug, or memory
// running out) becomes a JSON answer, 413 for std::bad_alloc and 500 for the
// rest, unless it had already answered: no request can take the server down.
void answer_guarded(Responder respond, const std::function<void(Responder)>& work);

class HttpRoutes {
 public:
  HttpRoutes(RoutesOptions opts, RouteServices services);
  void handle(HttpRequest req, Responder respond);
  // http_routes_access.cpp: who sends `req` (by its bearer token), or the
  // refusal (401 for a missing or unknown token, 403 for a reader's write).
  std::variant<User, HttpResponse> caller_of(const HttpRequest& req) const;
  // The refusal for a request without the token it needs; nullopt when allowed.
  std::optional<HttpResponse> check_token(const HttpRequest& req) const;

 private:
  using Params = std::map<std::string, std::string>;
  struct Call {
    HttpRequest req;
    Params path;   // from the route's {templates}
    Params query;  // from ?a=b&c
    User caller;   // who sent it (anonymous, as an admin, on the open routes)
  };
  using Handler = std::function<void(HttpRoutes*, Call&, Responder&)>;
  struct Route {
    RouteSpec spec;
    Handler handler;
  };
  static const std::vector<Route>& table();
  static std::vector<Route> versioned_routes();
  static std::vector<Route> with_aliases(std::vector<Route> routes);
  friend const std::vector<RouteSpec>& route_specs();

  // Whether the request may go without a token: the health check and the
  // dashboard's files, which hold no data.
  static bool open_to_all(const RouteSpec* route, const HttpRequest& req);
  // 403 unless `caller` may `action` ("cancel") `what` ("run r3"), which
  // `owner` owns; either way an audit line in the log.
  static std::optional<HttpResponse> steer_refusal(const User& caller, const std::string& owner,
                                                   const std::string& what,
                                                   const std::string& action);
  // 403 unless `caller` may read the data of `what`, held as `held`.
  static std::optional<HttpResponse> read_refusal(const User& caller, const Ownership& held,
                                                  const std::string& what);
  // The same for an upload, from its description.
  static std::optional<HttpResponse> upload_refusal(const User& caller, const nlohmann::json& meta);
  // A run's record as `caller` sees it: without its result unless it is
  // theirs to read.
  static nlohmann::json record_for(const User& caller, nlohmann::json record);
  void get_root(Call& c, Responder& r);
  void get_metrics(Call& c, Responder& r);
  void get_dashboard_file(Call& c, Responder& r);
  void get_programs(Call& c, Responder& r);
  void get_program(Call& c, Responder& r);
  void get_runs(Call& c, Responder& r);
  void get_run(Call& c, Responder& r);
  void get_field(Call& c, Responder& r);
  void get_logs(Call& c, Responder& r);
  void post_dataset(Call& c, Responder& r);
  // http_routes_datasets.cpp: the listing, removal, staging and dropping of datasets.
  void get_datasets(Call& c, Responder& r);
  void delete_dataset(Call& c, Responder& r);
  void post_stage(Call& c, Responder& r);
  void post_drop(Call& c, Responder& r);
  void post_probe(Call& c, Responder& r);

  RoutesOptions opts_;
  RouteServices s_;
};

}  // namespace lizard
