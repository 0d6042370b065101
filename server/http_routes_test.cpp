#include "server/http_routes.h"

#include <gtest/gtest.h>

#include <fstream>

#include "dataset/npy.h"
#include "server/dataset_store.h"
#include "server/durable_write.h"
#include "server/program_registry.h"
#include "server/run_book.h"
#include "server/testing/fakes.h"
#include "server/worker_registry.h"

namespace lizard {
namespace {

using nlohmann::json;
using testing::FakeWorkerLink;

// Records what the routes ask the coordinator to do, and answers 202.
struct RecordingActions : RouteActions {
  std::vector<std::string> calls;
  void register_program(std::string body, const User& caller, Responder respond) override {
    calls.push_back("register " + body + (caller.name == "anonymous" ? "" : " by " + caller.name));
    respond(json_response(202, json::object()));
  }
  void submit_run(const std::string& hash, std::string body, bool wait, const User& caller,
                  Responder respond) override {
    calls.push_back("submit " + hash + " " + body + (wait ? " wait" : "") +
                    (caller.name == "anonymous" ? "" : " by " + caller.name));
    respond(json_response(202, json::object()));
  }
  void cancel_run(const std::string& id, Responder respond) override {
    calls.push_back("cancel " + id);
    respond(json_response(202, json::object()));
  }
  void watch_run(const std::string& id, int wait_ms, Responder respond) override {
    calls.push_back("watch " + id + " " + std::to_string(wait_ms));
    respond(json_response(200, json::object()));
  }
  void delete_program(const std::string& hash, Responder respond) override {
    calls.push_back("delete program " + hash);
    respond(json_response(200, json::object()));
  }
};

const char* kConfig = R"(
info: {name: doubler}
sources: {cuda: kernel.cu}
dataset:
  x: {type: float64, shape: [rows]}
  y: {type: float64, shape: [rows], input: false, output: true}
aggregate: {s: {type: float64, reduce: sum}}
iterate: [double_it]
)";

class HttpRoutesTest : public ::testing::Test {
 protected:
  HttpRoutesTest()
      : compiler_(dir_.path("hooks")),
        programs_(dir_.path(), &compiler_),
        runs_(dir_.path()),
        datasets_(dir_.path()) {}

  HttpRoutes routes(RoutesOptions opts = {}) {
    RouteServices services;
    services.programs = &programs_;
    services.workers = &workers_;
    services.runs = &runs_;
    services.datasets = &datasets_;
    services.actions = &actions_;
    services.offload = [](std::function<void()> f) { f(); };
    return HttpRoutes(opts, services);
  }

  // Handles one request and returns the answer (the routes answer inline
  // here: the fake actions do, and offloaded work runs at once).
  HttpResponse call(HttpRoutes& r, const std::string& method, const std::string& target,
                    std::string body = "", std::string token = "") {
    HttpRequest req;
    req.method = method;
    req.target = target;
    req.body = std::move(body);
    if (!token.empty()) req.headers["authorization"] = "Bearer " + token;
    HttpResponse out{0, "", ""};
    r.handle(std::move(req), [&](HttpResponse resp) {
      out = std::move(resp);
      out.body += std::string(out.body_tail);  // as the connection writes them
    });
    EXPECT_NE(out.status, 0) << method << " " << target << " was not answered";
    return out;
  }

  static json body(const HttpResponse& r) { return json::parse(r.body, nullptr, false); }

  std::shared_ptr<const ProgramEntry> add_program() {
    auto p = testing::make_test_program(kConfig);
    return programs_.add(p)->first;
  }

  TempDir dir_;
  HostCompiler compiler_;
  ProgramRegistry programs_;
  WorkerRegistry workers_;
  RunBook runs_;
  DatasetStore datasets_;
  RecordingActions actions_;
};

TEST_F(HttpRoutesTest, UnknownPathsAre404AndWrongMethods405) {
  auto r = routes();
  auto nope = call(r, "GET", "/nope");
  EXPECT_EQ(nope.status, 404);
  EXPECT_EQ(body(nope)["error"], "no such endpoint: GET /nope");
  EXPECT_EQ(call(r, "GET", "/runtimes/r1/fields").status, 404);

  auto put = call(r, "PUT", "/programs");
  EXPECT_EQ(put.status, 405);
  EXPECT_EQ(body(put)["error"], "PUT is not allowed on /programs (allowed: GET, HEAD, POST)");
  auto del = call(r, "DELETE", "/runtimes?status=done");
  EXPECT_EQ(del.status, 405);
  EXPECT_EQ(body(del)["error"], "DELETE is not allowed on /runtimes (allowed: GET, HEAD)");
  EXPECT_EQ(call(r, "POST", "/clients/w1").status, 405);
  auto trace = call(r, "TRACE", "/");
  EXPECT_EQ(trace.status, 405);
  EXPECT_EQ(body(trace)["error"], "TRACE is not allowed on / (allowed: GET, HEAD)");
  auto brew = call(r, "BREW", "/pot");
  EXPECT_EQ(brew.status, 501);
  EXPECT_EQ(body(brew)["error"],
            "BREW is not supported (lizard answers GET, HEAD, POST and DELETE)");
  EXPECT_TRUE(actions_.calls.empty());
}

// HEAD is routed as GET (the network layer drops the body), so every GET
// route answers it, and no other.
TEST_F(HttpRoutesTest, HeadIsAnsweredOnEveryGetRoute) {
  auto r = routes();
  for (const RouteSpec& spec : route_specs()) {
    if (spec.method != "GET") continue;
    std::string path = spec.path;
    for (size_t open; (open = path.find('{')) != std::string::npos;)
      path.replace(open, path.find('}', open) - open + 1, "x");
    const auto get = call(r, "GET", path);
    const auto head = call(r, "HEAD", path);
    EXPECT_EQ(head.status, get.status) << path;
    EXPECT_EQ(head.body, get.body) << path;
    EXPECT_NE(head.status, 405) << path;
  }
  EXPECT_EQ(call(r, "HEAD", "/runtime/abc").status, 405);  // POST only
}

TEST_F(HttpRoutesTest, HealthAndServiceDescription) {
  auto r = routes({"write", "read"});
  auto ok = call(r, "GET", "/ruok");  // no token needed
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(ok.content_type, "text/plain");
  EXPECT_EQ(ok.body, "imok");
  auto root = call(r, "GET", "/", "", "read");
  EXPECT_EQ(root.status, 200);
  EXPECT_EQ(body(root)["service"], "lizard");
  EXPECT_EQ(body(root)["version"], LIZARD_VERSION);
}

TEST_F(HttpRoutesTest, TokensGuardWritesAndWhenSetReads) {
  auto r = routes({"write", "read"});
  auto missing = call(r, "POST", "/programs", "{}");
  EXPECT_EQ(missing.status, 401);
  EXPECT_EQ(body(missing)["error"], "missing token: send Authorization: Bearer <token>");
  EXPECT_EQ(body(call(r, "POST", "/programs", "{}", "bad"))["error"],
            "wrong token: send Authorization: Bearer <token>");
  EXPECT_EQ(call(r, "POST", "/programs", "{}", "read").status, 401);  // reading only
  EXPECT_EQ(call(r, "DELETE", "/runtimes/r1", "", "read").status, 401);
  EXPECT_TRUE(actions_.calls.empty());
  EXPECT_EQ(call(r, "POST", "/programs", "{}", "write").status, 202);
  EXPECT_EQ(call(r, "GET", "/programs").status, 401);
  EXPECT_EQ(call(r, "GET", "/programs", "", "read").status, 200);
  EXPECT_EQ(call(r, "GET", "/programs", "", "write").status, 200);  // the token reads too
  // An unknown path still needs the token: its name says nothing to strangers.
  EXPECT_EQ(call(r, "GET", "/nope").status, 401);
}

TEST_F(HttpRoutesTest, WithOnlyAWriteTokenReadsAreOpen) {
  auto r = routes({"write", ""});
  EXPECT_EQ(call(r, "GET", "/runtimes").status, 200);
  // ... but a token the server does not know is refused, not ignored.
  auto wrong = call(r, "GET", "/runtimes", "", "bad");
  EXPECT_EQ(wrong.status, 401);
  EXPECT_EQ(body(wrong)["error"], "wrong token: send Authorization: Bearer <token>");
  EXPECT_EQ(call(r, "GET", "/runtimes", "", "write").status, 200);
  // A server with no token takes any: there is nothing to check it against.
  auto open = routes();
  EXPECT_EQ(call(open, "GET", "/runtimes", "", "bad").status, 200);
  EXPECT_EQ(call(r, "POST", "/runtime/abc").status, 401);
  HttpRequest head;
  head.method = "POST";
  head.target = "/datasets";
  EXPECT_TRUE(r.check_token(head).has_value());
  head.headers["authorization"] = "Bearer write";
  EXPECT_FALSE(r.check_token(head).has_value());
}

TEST_F(HttpRoutesTest, ActionsGetThePathTheBodyAndWait) {
  auto r = routes();
  call(r, "POST", "/programs", R"({"config": "x"})");
  call(r, "POST", "/runtime/abc?wait=1", "{}");
  call(r, "POST", "/runtimes/abc", "{\"max_iterations\": 2}");
  call(r, "POST", "/runtime/abc?wait=0");
  call(r, "POST", "/runtime/abc?x=1&wait");
  call(r, "DELETE", "/runtimes/r7");
  call(r, "DELETE", "/programs/abc");
  call(r, "GET", "/runtimes/r7?wait_ms=250");
  EXPECT_EQ(
      actions_.calls,
      (std::vector<std::string>{
          R"(register {"config": "x"})", "submit abc {} wait", "submit abc {\"max_iterations\": 2}",
          "submit abc ", "submit abc  wait", "cancel r7", "delete program abc", "watch r7 250"}));
  // A wait that is no number of milliseconds, or over a minute, is refused.
  for (const char* bad : {"-1", "x", "60001", "25ms", ""}) {
    auto answer = call(r, "GET", std::string("/runtimes/r7?wait_ms=") + bad);
    EXPECT_EQ(answer.status, 400) << bad;
    EXPECT_NE(body(answer)["error"].get<std::string>().find("wait_ms"), std::string::npos);
  }
  EXPECT_EQ(actions_.calls.size(), 8u);
}

// The routes under /api/v1 reach the same actions as the paths they had
// before, which stay.
TEST_F(HttpRoutesTest, VersionedRoutesReachTheSameActions) {
  auto r = routes();
  call(r, "POST", "/api/v1/programs", R"({"config": "x"})");
  call(r, "POST", "/api/v1/programs/abc/runs?wait=1", "{}");
  call(r, "DELETE", "/api/v1/runs/r7");
  call(r, "DELETE", "/api/v1/programs/abc");
  EXPECT_EQ(actions_.calls,
            (std::vector<std::string>{R"(register {"config": "x"})", "submit abc {} wait",
                                      "cancel r7", "delete program abc"}));
}

TEST_F(HttpRoutesTest, EveryOldPathAnswersAsItsVersionedRoute) {
  auto r = routes();
  auto p = add_program();
  auto req = parse_run_request(p->image, {{"dataset", {{"x", {{"values", {1.0, 2.0}}}}}}});
  ASSERT_TRUE(req.ok());
  auto run = runs_.submit(p, p->image.hash, std::move(req).value());
  const std::string w = workers_.connect(std::make_shared<FakeWorkerLink>("10.1.1.1:5"));
  workers_.hello(w, HelloMsg{}, {});
  const std::vector<std::pair<std::string, std::string>> pairs = {
      {"/api/v1/runs", "/runtimes"},
      {"/api/v1/runs/" + run->id, "/runtimes/" + run->id},
      {"/api/v1/runs/r99", "/runtimes/r99"},
      {"/api/v1/workers", "/clients"},
      {"/api/v1/workers/" + w, "/clients/" + w},
      {"/api/v1/programs", "/programs"},
      {"/api/v1/programs/" + p->image.hash, "/programs/" + p->image.hash},
      {"/api/v1/datasets", "/datasets"},
  };
  for (const auto& [versioned, old] : pairs) {
    auto a = call(r, "GET", versioned), b = call(r, "GET", old);
    EXPECT_EQ(a.status, b.status) << versioned;
    EXPECT_EQ(a.body, b.body) << versioned;
  }
  EXPECT_EQ(body(call(r, "GET", "/api/v1/runs/" + run->id))["status"], "queued");
  EXPECT_EQ(call(r, "GET", "/api/v1/runs/r99").status, 404);
}

TEST(RouteSpecs, EveryVersionedRouteKeepsItsOldPath) {
  std::set<std::string> seen;
  for (const RouteSpec& s : route_specs()) seen.insert(s.method + " " + s.path);
  for (const RouteSpec& s : route_specs())
    for (const std::string& old : legacy_paths(s.path))
      EXPECT_TRUE(seen.count(s.method + " " + old)) << s.method << " " << old;
  EXPECT_EQ(legacy_paths("/api/v1/programs/{hash}/runs"),
            (std::vector<std::string>{"/runtime/{hash}", "/runtimes/{id}"}));
  EXPECT_EQ(legacy_paths("/api/v1/runs/{id}/fields/{name}"),
            std::vector<std::string>{"/runtimes/{id}/fields/{name}"});
  EXPECT_TRUE(legacy_paths("/api/v1/runsx").empty());
  EXPECT_TRUE(legacy_paths("/metrics").empty());
}

TEST_F(HttpRoutesTest, ProgramsAreListedWithTheirWorkersBuilds) {
  auto r = routes();
  auto p = add_program();
  const std::string hash = p->image.hash;
  auto link = std::make_shared<FakeWorkerLink>();
  const std::string w = workers_.connect(link);
  HelloMsg hello;
  hello.executors.resize(1);
  workers_.hello(w, hello, {});
  workers_.push_program(hash, ProgramMsg{hash, p->bundle.to_json()}.to_message());
  workers_.program_status(w, {hash, true, ""});

  json list = body(call(r, "GET", "/programs"));
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0]["hash"], hash);
  EXPECT_EQ(list[0]["name"], "doubler");
  EXPECT_EQ(list[0]["kernels"], json::array({"double_it"}));
  EXPECT_EQ(list[0]["workers"][w], "ready");
  EXPECT_FALSE(list[0].contains("config"));

  json one = body(call(r, "GET", "/programs/" + hash));
  EXPECT_EQ(one["config"], std::string(kConfig));
  EXPECT_EQ(one["fields"], json::parse(R"({"dataset": {"x": "float64", "y": "float64"},
                                           "state": {}, "aggregate": {"s": "float64"}})"));
  EXPECT_NE(one["header"].get<std::string>().find("double"), std::string::npos);
  auto missing = call(r, "GET", "/programs/0000");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(body(missing)["error"], "no such program: 0000");
}

TEST_F(HttpRoutesTest, ClientsAreTheJoinedWorkers) {
  auto r = routes();
  const std::string w1 = workers_.connect(std::make_shared<FakeWorkerLink>("10.1.1.1:5"));
  workers_.connect(std::make_shared<FakeWorkerLink>());  // no hello yet
  HelloMsg hello;
  hello.hostname = "gpu-node";
  workers_.hello(w1, hello, {});
  json clients = body(call(r, "GET", "/clients"));
  ASSERT_EQ(clients.size(), 1u);
  EXPECT_EQ(clients[0]["id"], w1);
  EXPECT_EQ(clients[0]["address"], "10.1.1.1:5");
  EXPECT_EQ(body(call(r, "GET", "/clients/" + w1))["hardware"]["hostname"], "gpu-node");
  auto missing = call(r, "GET", "/clients/w2");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(body(missing)["error"], "no such worker: w2");
}

TEST_F(HttpRoutesTest, RunsAndTheirFields) {
  auto r = routes();
  auto p = add_program();
  auto req = parse_run_request(p->image, {{"dataset", {{"x", {{"values", {1.0, 2.0}}}}}}});
  ASSERT_TRUE(req.ok());
  auto run = runs_.submit(p, p->image.hash, std::move(req).value());
  EXPECT_EQ(body(call(r, "GET", "/runtimes/" + run->id))["status"], "queued");
  EXPECT_EQ(call(r, "GET", "/runtimes/" + run->id + "/fields/y.npy").status, 404);

  const double y[2] = {2, 4};
  runs_.update(run, [&](RunRecord& x) {
    x.outputs["y"] = {DType::kFloat64, {2}, std::string(reinterpret_cast<const char*>(y), 16)};
  });
  runs_.finish(run, Status::Ok());
  json listed = body(call(r, "GET", "/runtimes?status=done"));
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0]["runtime_id"], run->id);
  EXPECT_TRUE(body(call(r, "GET", "/runtimes?status=queued")).empty());
  auto bad = call(r, "GET", "/runtimes?status=finished");
  EXPECT_EQ(bad.status, 400);

  for (const char* name : {"y.npy", "y"}) {
    auto f = call(r, "GET", "/runtimes/" + run->id + "/fields/" + name);
    EXPECT_EQ(f.status, 200);
    EXPECT_EQ(f.content_type, "application/octet-stream");
    EXPECT_EQ(f.body, npy_bytes(DType::kFloat64, {2}, y));
  }
  auto nofield = call(r, "GET", "/runtimes/" + run->id + "/fields/z.npy");
  EXPECT_EQ(nofield.status, 404);
  EXPECT_EQ(body(nofield)["error"], "run " + run->id + " has no field 'z'");
  EXPECT_EQ(body(call(r, "GET", "/runtimes/r99"))["error"], "no such run: r99");
}

TEST_F(HttpRoutesTest, DatasetsAreStoredListedAndDeleted) {
  auto r = routes();
  EXPECT_EQ(call(r, "POST", "/datasets", "inline body").status, 400);

  std::string id;
  const std::string part = datasets_.reserve(&id);
  const float v[3] = {1, 2, 3};
  { std::ofstream(part, std::ios::binary) << npy_bytes(DType::kFloat32, {3}, v); }
  HttpRequest req;
  req.method = "POST";
  req.target = "/datasets";
  req.body_file = part;
  const std::string digest(64, 'a');  // as the network layer computed it
  req.body_digest = digest;
  HttpResponse created{0, "", ""};
  r.handle(std::move(req), [&](HttpResponse resp) { created = std::move(resp); });
  ASSERT_EQ(created.status, 201) << created.body;
  EXPECT_EQ(body(created)["id"], id);
  EXPECT_EQ(body(created)["shape"], json::array({3}));
  EXPECT_EQ(body(created)["digest"], digest);

  EXPECT_EQ(body(call(r, "GET", "/datasets"))["uploads"].size(), 1u);
  EXPECT_EQ(body(call(r, "GET", "/datasets?digest=" + digest))["uploads"][0]["id"], id);
  EXPECT_EQ(body(call(r, "GET", "/datasets?digest=" + std::string(64, 'b'))),
            (json{{"uploads", json::array()}, {"kept", json::array()}}));
  EXPECT_EQ(body(call(r, "GET", "/datasets"))["kept"], json::array());
  EXPECT_EQ(body(call(r, "GET", "/datasets/" + id))["dtype"], "float32");
  EXPECT_EQ(body(call(r, "DELETE", "/datasets/" + id))["deleted"], id);
  EXPECT_EQ(call(r, "GET", "/datasets/" + id).status, 404);
  EXPECT_EQ(call(r, "DELETE", "/datasets/" + id).status, 404);
}

TEST_F(HttpRoutesTest, AnUploadThatIsNotItsFormatIsRefused) {
  auto r = routes();
  std::string id;
  const std::string part = datasets_.reserve(&id);
  { std::ofstream(part, std::ios::binary) << "not an npy file"; }
  HttpRequest req;
  req.method = "POST";
  req.target = "/datasets?format=npy";
  req.body_file = part;
  HttpResponse out{0, "", ""};
  r.handle(std::move(req), [&](HttpResponse resp) { out = std::move(resp); });
  EXPECT_EQ(out.status, 400) << out.body;
  EXPECT_TRUE(body(call(r, "GET", "/datasets"))["uploads"].empty());
}

// The network layer hands over an upload whose body met a full disk: the
// answer is the refusal, and nothing is listed.
TEST_F(HttpRoutesTest, AnUploadThatMetAFullDiskIsAnswered507) {
  auto r = routes();
  std::string id;
  HttpRequest req;
  req.method = "POST";
  req.target = "/datasets";
  req.body_file = datasets_.reserve(&id);  // already removed by the sink that refused it
  req.body_status = disk_full_error("upload " + id);
  HttpResponse out{0, "", ""};
  r.handle(std::move(req), [&](HttpResponse resp) { out = std::move(resp); });
  EXPECT_EQ(out.status, 507) << out.body;
  EXPECT_EQ(body(out)["error"],
            "the server's disk is full: upload " + id +
                " was not stored (free space in its --state-dir and try again)");
  EXPECT_TRUE(body(call(r, "GET", "/datasets"))["uploads"].empty());
}

TEST(HttpStatus, ErrorCodesMapToWhatClientsExpect) {
  EXPECT_EQ(http_status(Status::Ok()), 200);
  EXPECT_EQ(http_status(invalid_argument("x")), 400);
  EXPECT_EQ(http_status(not_found("x")), 404);
  EXPECT_EQ(http_status(Status(Code::kConflict, "x")), 409);
  EXPECT_EQ(http_status(too_large("x")), 413);
  EXPECT_EQ(http_status(compile_error("x")), 422);
  EXPECT_EQ(http_status(unavailable("x")), 503);
  EXPECT_EQ(http_status(worker_lost("x")), 503);
  EXPECT_EQ(http_status(internal_error("x")), 500);
  HttpResponse r = error_response(not_found("no such thing"));
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.content_type, "application/json");
  EXPECT_EQ(json::parse(r.body)["error"], "no such thing");
}

TEST(RouteSpecs, EveryRouteIsListedOnce) {
  std::set<std::string> seen;
  for (const RouteSpec& s : route_specs()) EXPECT_TRUE(seen.insert(s.method + " " + s.path).second);
  for (const char* want :
       {"GET /clients/{id}", "POST /runtime/{hash}", "DELETE /runtimes/{id}",
        "GET /runtimes/{id}/fields/{name}", "POST /datasets", "GET /api/v1/workers/{id}",
        "POST /api/v1/programs/{hash}/runs", "GET /api/v1/runs/{id}/fields/{name}"})
    EXPECT_TRUE(seen.count(want)) << want;
}

TEST(HttpStatus, AFullDiskIs507) {
  EXPECT_EQ(http_status(storage_full("disk full")), 507);
  EXPECT_EQ(error_response(storage_full("no room")).status, 507);
}

}  // namespace
}  // namespace lizard
