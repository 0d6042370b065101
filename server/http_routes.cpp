#include "server/http_routes.h"

#include <spdlog/spdlog.h>

#include <charconv>

#include <atomic>
#include <filesystem>

#include "common/auth.h"
#include "server/dashboard.h"
#include "server/dashboard_page.h"
#include "server/dataset_store.h"
#include "server/program_registry.h"
#include "server/run_book.h"
#include "server/server_metrics.h"
#include "server/worker_registry.h"

namespace lizard {

using nlohmann::json;

int http_status(const Status& s) {
  switch (s.code()) {
    case Code::kOk:
      return 200;
    case Code::kInvalidArgument:
      return 400;
    case Code::kPermissionDenied:
      return 403;
    case Code::kNotFound:
      return 404;
    case Code::kConflict:
      return 409;
    case Code::kTooLarge:
      return 413;
    case Code::kCompileError:
      return 422;
    case Code::kUnavailable:
    case Code::kWorkerLost:
      return 503;
    case Code::kStorageFull:
      return 507;
    default:
      return 500;
  }
}

HttpResponse json_response(int status, const json& j) {
  return {status, "application/json", j.dump(2) + "\n"};
}

HttpResponse error_response(const Status& s) {
  return json_response(http_status(s), {{"error", s.message()}});
}

void answer_guarded(Responder respond, const std::function<void(Responder)>& work) {
  auto answered = std::make_shared<std::atomic<bool>>(false);
  auto original = std::make_shared<Responder>(std::move(respond));
  try {
    work([answered, original](HttpResponse r) {
      answered->store(true);
      (*original)(std::move(r));
    });
  } catch (const std::bad_alloc&) {
    spdlog::warn("a request needed more memory than the server could get");
    if (!answered->exchange(true))
      (*original)(json_response(413, {{"error",
                                       "the request needs more memory than the server "
                                       "can give it"}}));
  } catch (const std::exception& e) {
    spdlog::error("internal error answering a request: {}", e.what());
    if (!answered->exchange(true))
      (*original)(json_response(500, {{"error", std::string("internal error: ") + e.what()}}));
  }
}

namespace {

std::vector<std::string> segments(const std::string& path) {
  std::vector<std::string> parts;
  size_t i = 0;
  while (i < path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    if (j > i) parts.push_back(path.substr(i, j - i));
    i = j + 1;
  }
  return parts;
}

std::map<std::string, std::string> parse_query(const std::string& q) {
  std::map<std::string, std::string> out;
  size_t start = 0;
  while (start < q.size()) {
    size_t amp = q.find('&', start);
    std::string kv = q.substr(start, amp == std::string::npos ? std::string::npos : amp - start);
    size_t eq = kv.find('=');
    out[kv.substr(0, eq)] = eq == std::string::npos ? "" : kv.substr(eq + 1);
    if (amp == std::string::npos) break;
    start = amp + 1;
  }
  return out;
}

// Matches a path against a route's template; fills the {names}.
bool match(const std::string& pattern, const std::vector<std::string>& parts,
           std::map<std::string, std::string>* params) {
  const auto want = segments(pattern);
  if (want.size() != parts.size()) return false;
  for (size_t i = 0; i < want.size(); ++i) {
    if (want[i].size() > 2 && want[i].front() == '{' && want[i].back() == '}')
      (*params)[want[i].substr(1, want[i].size() - 2)] = parts[i];
    else if (want[i] != parts[i])
      return false;
  }
  return true;
}

bool known_method(const std::string& m) {
  return m == "GET" || m == "HEAD" || m == "POST" || m == "DELETE";
}

// Responds with a Result's JSON value, or its error.
void reply(Responder& r, const Result<json>& j, int ok_status = 200) {
  r(j.ok() ? json_response(ok_status, j.value()) : error_response(j.status()));
}

bool truthy(const std::map<std::string, std::string>& q, const char* key) {
  auto it = q.find(key);
  return it != q.end() && it->second != "0" && it->second != "false";
}

std::string header(const HttpRequest& req, const char* name) {
  auto it = req.headers.find(name);
  return it == req.headers.end() ? "" : it->second;
}

// A responder that counts the answer in the metrics before sending it.
Responder counted(ServerMetrics* metrics, std::string method, std::string route,
                  Responder respond) {
  return [metrics, method = std::move(method), route = std::move(route),
          respond = std::move(respond)](HttpResponse r) {
    metrics->count_http(method, route, r.status);
    respond(std::move(r));
  };
}

}  // namespace

// The routes under /api/v1, and the paths they had before it, which stay
// as aliases: the same handler answers both.
const std::vector<HttpRoutes::Route>& HttpRoutes::table() {
  static const std::vector<Route> routes = with_aliases(versioned_routes());
  return routes;
}

std::vector<HttpRoutes::Route> HttpRoutes::versioned_routes() {
  using C = Call;
  using R = Responder;
  auto submit = [](HttpRoutes* h, C& c, R& r) {
    const std::string hash = c.path.count("hash") ? c.path["hash"] : c.path["id"];
    h->s_.actions->submit_run(hash, std::move(c.req.body), truthy(c.query, "wait"), c.caller,
                              std::move(r));
  };
  return {
      {{"GET", "/"}, [](HttpRoutes* h, C& c, R& r) { h->get_root(c, r); }},
      {{"GET", "/ruok"},
       [](HttpRoutes* h, C&, R& r) {
         // A stat or two: the run store's directory is still the one opened.
         Status store = h->s_.runs ? h->s_.runs->store_health() : Status::Ok();
         if (store.ok()) return r({200, "text/plain", "imok"});
         r({503, "text/plain", "the server cannot store anything: " + store.message() + "\n"});
       }},
      {{"GET", "/metrics"}, [](HttpRoutes* h, C& c, R& r) { h->get_metrics(c, r); }},
      {{"GET", "/ui/{file}"}, [](HttpRoutes* h, C& c, R& r) { h->get_dashboard_file(c, r); }},
      {{"GET", "/api/v1/workers"},
       [](HttpRoutes* h, C&, R& r) { reply(r, h->s_.workers->to_json()); }},
      {{"GET", "/api/v1/workers/{id}"},
       [](HttpRoutes* h, C& c, R& r) { reply(r, h->s_.workers->to_json(c.path["id"])); }},
      {{"GET", "/api/v1/programs"}, [](HttpRoutes* h, C& c, R& r) { h->get_programs(c, r); }},
      {{"GET", "/api/v1/programs/{hash}"}, [](HttpRoutes* h, C& c, R& r) { h->get_program(c, r); }},
      {{"DELETE", "/api/v1/programs/{hash}"},
       [](HttpRoutes* h, C& c, R& r) {
         const std::string& hash = c.path["hash"];
         if (auto p = h->s_.programs->find(hash))
           if (auto no = steer_refusal(c.caller, p->registered_by, "program " + hash.substr(0, 12),
                                       "delete"))
             return r(std::move(*no));
         h->s_.actions->delete_program(hash, std::move(r));
       }},
      {{"POST", "/api/v1/programs"},
       [](HttpRoutes* h, C& c, R& r) {
         h->s_.actions->register_program(std::move(c.req.body), c.caller, std::move(r));
       }},
      {{"POST", "/api/v1/programs/{hash}/runs"}, submit},
      {{"GET", "/api/v1/runs"}, [](HttpRoutes* h, C& c, R& r) { h->get_runs(c, r); }},
      {{"GET", "/api/v1/runs/{id}"}, [](HttpRoutes* h, C& c, R& r) { h->get_run(c, r); }},
      {{"DELETE", "/api/v1/runs/{id}"},
       [](HttpRoutes* h, C& c, R& r) {
         const std::string& id = c.path["id"];
         if (auto a = h->s_.runs->access_of(id); a.ok())
           if (auto no = steer_refusal(c.caller, a->owner, "run " + id, "cancel"))
             return r(std::move(*no));
         h->s_.actions->cancel_run(id, std::move(r));
       }},
      {{"GET", "/api/v1/runs/{id}/fields/{name}"},
       [](HttpRoutes* h, C& c, R& r) { h->get_field(c, r); }},
      {{"GET", "/api/v1/runs/{id}/logs"}, [](HttpRoutes* h, C& c, R& r) { h->get_logs(c, r); }},
      {{"POST", "/api/v1/datasets"}, [](HttpRoutes* h, C& c, R& r) { h->post_dataset(c, r); }},
      {{"GET", "/api/v1/datasets"}, [](HttpRoutes* h, C& c, R& r) { h->get_datasets(c, r); }},
      {{"POST", "/api/v1/datasets/stage"}, [](HttpRoutes* h, C& c, R& r) { h->post_stage(c, r); }},
      {{"POST", "/api/v1/datasets/drop"}, [](HttpRoutes* h, C& c, R& r) { h->post_drop(c, r); }},
      {{"POST", "/api/v1/datasets/probe"}, [](HttpRoutes* h, C& c, R& r) { h->post_probe(c, r); }},
      {{"GET", "/api/v1/datasets/{id}"},
       [](HttpRoutes* h, C& c, R& r) {
         const std::string& id = c.path["id"];
         if (auto meta = h->s_.datasets->get(id); meta.ok())
           if (auto no = upload_refusal(c.caller, *meta)) return r(std::move(*no));
         reply(r, h->s_.datasets->get(id));
       }},
      {{"DELETE", "/api/v1/datasets/{id}"},
       [](HttpRoutes* h, C& c, R& r) { h->delete_dataset(c, r); }},
  };
}

std::vector<HttpRoutes::Route> HttpRoutes::with_aliases(std::vector<Route> routes) {
  const size_t versioned = routes.size();
  for (size_t i = 0; i < versioned; ++i) {
    for (std::string alias : legacy_paths(routes[i].spec.path)) {
      Route copy = routes[i];
      copy.spec.path = std::move(alias);
      routes.push_back(std::move(copy));
    }
  }
  return routes;
}

std::vector<std::string> legacy_paths(const std::string& path) {
  // POST /runtimes/{id} shares its template with GET and DELETE /runtimes/{id}
  // (a run's id there, the program's checksum here): one name for both.
  if (path == "/api/v1/programs/{hash}/runs") return {"/runtime/{hash}", "/runtimes/{id}"};
  static const std::pair<const char*, const char*> kPrefixes[] = {
      {"/api/v1/workers", "/clients"},
      {"/api/v1/programs", "/programs"},
      {"/api/v1/runs", "/runtimes"},
      {"/api/v1/datasets", "/datasets"},
  };
  for (const auto& [versioned, legacy] : kPrefixes) {
    const std::string prefix = versioned;
    if (path.compare(0, prefix.size(), prefix) == 0 &&
        (path.size() == prefix.size() || path[prefix.size()] == '/'))
      return {legacy + path.substr(prefix.size())};
  }
  return {};
}

const std::vector<RouteSpec>& route_specs() {
  static const std::vector<RouteSpec> specs = [] {
    std::vector<RouteSpec> out;
    for (const auto& r : HttpRoutes::table()) out.push_back(r.spec);
    return out;
  }();
  return specs;
}

HttpRoutes::HttpRoutes(RoutesOptions opts, RouteServices services)
    : opts_(std::move(opts)), s_(std::move(services)) {}

void HttpRoutes::handle(HttpRequest req, Responder respond) {
  spdlog::debug("{} {}", req.method, req.target);
  Call call;
  std::string path = req.target;
  if (auto q = path.find('?'); q != std::string::npos) {
    call.query = parse_query(path.substr(q + 1));
    path.resize(q);
  }
  const auto parts = segments(path);
  const Route* route = nullptr;
  std::vector<std::string> allowed;
  // HEAD is answered as GET; the network layer leaves the body out.
  const std::string& method = req.method == "HEAD" ? std::string("GET") : req.method;
  for (const Route& r : table()) {
    Params params;
    if (!match(r.spec.path, parts, &params)) continue;
    if (r.spec.method != method) {
      allowed.push_back(r.spec.method);
      if (r.spec.method == "GET") allowed.push_back("HEAD");
      continue;
    }
    route = &r;
    call.path = std::move(params);
    break;
  }
  if (s_.metrics)
    respond = counted(s_.metrics, req.method, route ? route->spec.path : "", std::move(respond));
  call.caller.name = "anonymous";
  call.caller.role = Role::kAdmin;
  if (!open_to_all(route ? &route->spec : nullptr, req)) {
    auto who = caller_of(req);
    if (auto* refusal = std::get_if<HttpResponse>(&who)) return respond(std::move(*refusal));
    call.caller = std::get<User>(std::move(who));
  }
  if (route) {
    call.req = std::move(req);
    return answer_guarded(std::move(respond), [&](Responder r) { route->handler(this, call, r); });
  }
  if (!allowed.empty()) {
    std::string list;
    for (const auto& m : allowed) list += (list.empty() ? "" : ", ") + m;
    return respond(json_response(
        405, {{"error", req.method + " is not allowed on " + path + " (allowed: " + list + ")"}}));
  }
  if (!known_method(req.method))
    return respond(json_response(501, {{"error", req.method + " is not supported (lizard answers "
                                                              "GET, HEAD, POST and DELETE)"}}));
  respond(json_response(404, {{"error", "no such endpoint: " + req.method + " " + req.target}}));
}

bool HttpRoutes::open_to_all(const RouteSpec* route, const HttpRequest& req) {
  if (!route) return false;
  if (route->path == "/ruok" || route->path == "/ui/{file}") return true;
  return route->path == "/" && prefers_html(header(req, "accept"));
}

// Browsers get the dashboard; API clients the service's name, version, and
// what the token they sent allows ("write": every route, "read": GET only).
// The page embeds the overview's data when the request may read it.
void HttpRoutes::get_root(Call& c, Responder& r) {
  HttpRequest probe;
  probe.method = "GET";
  probe.headers = c.req.headers;
  auto who = caller_of(probe);
  const User* viewer = std::get_if<User>(&who);
  probe.method = "POST";
  const char* access = check_token(probe) ? "read" : "write";
  json root = {{"service", "lizard"}, {"version", LIZARD_VERSION}, {"access", access}};
  if (viewer) root["user"] = viewer->name, root["role"] = role_name(viewer->role);
  if (!prefers_html(header(c.req, "accept"))) return r(json_response(200, root));
  json snapshot;
  if (viewer) {
    Result<json> runs = s_.runs ? s_.runs->list_json() : Result<json>(json::array());
    json seen = json::array();
    for (json& run : runs.ok() ? *runs : json::array())
      seen.push_back(record_for(*viewer, std::move(run)));
    snapshot = {{"root", root},
                {"clients", s_.workers ? s_.workers->to_json() : json::array()},
                {"runtimes", std::move(seen)}};
  }
  r({200, dashboard_file_named("index.html")->content_type, dashboard_page(snapshot)});
}

void HttpRoutes::get_metrics(Call&, Responder& r) {
  if (!s_.metrics) return r(json_response(404, {{"error", "this server keeps no metrics"}}));
  r({200, kMetricsContentType, s_.metrics->render()});
}

void HttpRoutes::get_dashboard_file(Call& c, Responder& r) {
  auto f = dashboard_file_named(c.path["file"]);
  if (!f) return r(json_response(404, {{"error", "no such dashboard file: " + c.path["file"]}}));
  r({200, f->content_type, std::string(f->body)});
}

void HttpRoutes::get_programs(Call&, Responder& r) {
  json out = json::array();
  for (const auto& p : s_.programs->list()) {
    const Manifest& m = p->image.manifest;
    json j = {{"hash", p->image.hash},    {"name", m.name},
              {"version", m.version},     {"registered_at", p->registered_at},
              {"kernels", json::array()}, {"workers", s_.workers->builds_of(p->image.hash)}};
    for (const auto& k : m.iterate) j["kernels"].push_back(k.kernel);
    out.push_back(std::move(j));
  }
  r(json_response(200, out));
}

// GET /runtimes/{id}; with ?wait_ms=N the answer waits up to N ms for the
// run to finish, so a follower learns of its end at once.
// GET /runtimes: every run (or those of one status, or of one ?user=),
// each as the caller may see it.
void HttpRoutes::get_runs(Call& c, Responder& r) {
  const auto status = c.query.find("status");  // given empty, it names no status
  auto runs = s_.runs->list_json(
      status == c.query.end() ? std::nullopt : std::optional<std::string>(status->second));
  if (!runs.ok()) return reply(r, runs);
  const auto user = c.query.find("user");
  json out = json::array();
  for (json& run : *runs)
    if (user == c.query.end() || run.value("owner", "") == user->second)
      out.push_back(record_for(c.caller, std::move(run)));
  r(json_response(200, out));
}

void HttpRoutes::get_run(Call& c, Responder& r) {
  const std::string& id = c.path["id"];
  auto access = s_.runs->access_of(id);  // none: the answer below says so
  if (access.ok() && !c.caller.reads_data_of(*access)) {
    // Its answer, whenever it comes, without the result.
    r = [caller = c.caller, respond = std::move(r)](HttpResponse answer) {
      json record = json::parse(answer.body, nullptr, false);
      if (answer.status == 200 && record.is_object())
        answer.body = record_for(caller, std::move(record)).dump(2) + "\n";
      respond(std::move(answer));
    };
  }
  const auto wait = c.query.find("wait_ms");
  if (wait == c.query.end()) return reply(r, s_.runs->get_json(id));
  constexpr int kMaxWaitMs = 60000;
  const std::string& v = wait->second;
  int ms = -1;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), ms);
  if (ec != std::errc() || end != v.data() + v.size() || ms < 0 || ms > kMaxWaitMs)
    return r(json_response(400, {{"error", "wait_ms: expected milliseconds from 0 to " +
                                               std::to_string(kMaxWaitMs) + ", got '" + v + "'"}}));
  s_.actions->watch_run(c.path["id"], ms, std::move(r));
}

void HttpRoutes::get_program(Call& c, Responder& r) {
  auto p = s_.programs->find(c.path["hash"]);
  if (!p) return r(json_response(404, {{"error", "no such program: " + c.path["hash"]}}));
  const Manifest& m = p->image.manifest;
  json j = {{"hash", p->image.hash},      {"name", m.name},
            {"version", m.version},       {"registered_at", p->registered_at},
            {"kernels", json::array()},   {"workers", s_.workers->builds_of(p->image.hash)},
            {"config", p->bundle.config}, {"header", p->image.header}};
  for (const auto& k : m.iterate) j["kernels"].push_back(k.kernel);
  // Each field's dtype, for clients that convert arrays before sending them.
  auto dtypes = [](const std::vector<FieldSpec>& fields) {
    json out = json::object();
    for (const auto& f : fields) out[f.name] = dtype_name(f.type);
    return out;
  };
  j["fields"] = {{"dataset", dtypes(m.dataset)},
                 {"state", dtypes(m.state)},
                 {"aggregate", dtypes(m.aggregate)}};
  r(json_response(200, j));
}

// Fields can be large: the file is assembled (or read back from the run
// store) off the io thread.
void HttpRoutes::get_field(Call& c, Responder& r) {
  if (auto a = s_.runs->access_of(c.path["id"]); a.ok())
    if (auto no = read_refusal(c.caller, *a, "run " + c.path["id"])) return r(std::move(*no));
  std::string name = c.path["name"];
  if (name.size() > 4 && name.compare(name.size() - 4, 4, ".npy") == 0)
    name.resize(name.size() - 4);
  s_.offload([runs = s_.runs, id = c.path["id"], name, respond = std::move(r)] {
    answer_guarded(respond, [&](const Responder& respond) {
      auto npy = runs->field_download(id, name);
      if (!npy.ok()) return respond(error_response(npy.status()));
      respond({200, "application/octet-stream", std::move(npy->head), npy->tail,
               std::move(npy->owner)});
    });
  });
}

}  // namespace lizard
