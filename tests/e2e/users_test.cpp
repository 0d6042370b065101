// Several users on one server (--users, users/user_directory.h), with real
// daemons: users made with `lizard users add`; every route asked by an
// admin, the owner of what it names, another user, a reader, the workers'
// token and no token, each answered as docs/operations.md's table says; a
// user's run cannot read another's upload, a user's token admits no
// worker, and a setup of one token still works as its admin.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/subprocess.h"
#include "dataset/npy.h"
#include "local_cluster.h"
#include "net/http_client.h"

namespace lizard {
namespace {

using nlohmann::json;

// The token `lizard users add` prints for a new user.
std::string add_user(const std::string& file, const std::string& name, const std::string& role) {
  auto r = run_command({lizard_binary(), "users", "add", name, "--users", file, "--role", role});
  if (!r.ok() || r->exit_code != 0) return "";
  return r->output.substr(0, r->output.find('\n'));
}

struct Caller {
  std::string who;  // the table's column
  std::string token;
};

class Users : public ::testing::Test {
 protected:
  void SetUp() override {
    file_ = c_.dir() + "/users.yaml";
    root_ = {"admin", add_user(file_, "root", "admin")};
    alice_ = {"owner", add_user(file_, "alice", "user")};
    bob_ = {"other", add_user(file_, "bob", "user")};
    rita_ = {"reader", add_user(file_, "rita", "reader")};
    ASSERT_FALSE(root_.token.empty() || alice_.token.empty() || bob_.token.empty() ||
                 rita_.token.empty());
    c_.set_token(rita_.token);  // the fixture's own reads: a reader's
    ASSERT_TRUE(c_.start(0, {}, {"--token", kWorkers, "--users", file_}).ok());
    ASSERT_TRUE(c_.add_worker({"--token", kWorkers}).ok());
    ASSERT_TRUE(c_.wait_for_workers(1).ok());
  }

  HttpReply ask(const Caller& as, const std::string& method, const std::string& path,
                const std::string& body = "", const std::string& type = "application/json") {
    auto r = http_request(method, c_.uri() + path, body, type, 120, as.token);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? *r : HttpReply{};
  }
  std::string register_as(const Caller& as, const std::string& dir) {
    auto r = run_command({load_program_binary(), dir, c_.uri(), "--token", as.token});
    return r.ok() && r->exit_code == 0 ? printed_checksum({r->exit_code, r->output}) : "";
  }
  json run_as(const Caller& as, const std::string& hash, const json& body) {
    HttpReply r = ask(as, "POST", "/runtime/" + hash + "?wait=1", body.dump());
    return json::parse(r.body, nullptr, false);
  }

  static constexpr const char* kWorkers = "workers-only";
  LocalCluster c_;
  std::string file_;
  Caller root_, alice_, bob_, rita_;
  const Caller worker_{"worker", kWorkers}, nobody_{"none", ""};
};

// Every route × every role.  Each row names a route on things alice owns,
// and the status each caller gets: admin (root), owner (alice), other (bob),
// reader (rita), worker (the workers' token), none (no token).
TEST_F(Users, EveryRouteAnswersEachRoleAsItMay) {
  const std::string sum = register_as(alice_, LIZARD_SOURCE_DIR "/examples/sum");
  const std::string kmeans = register_as(alice_, LIZARD_SOURCE_DIR "/examples/kmeans");
  ASSERT_FALSE(sum.empty() || kmeans.empty()) << read_file(c_.dir() + "/server.log");

  std::vector<double> values{1, 2, 3, 4};
  const std::string npy = npy_bytes(DType::kFloat64, {4, 1}, values.data());
  HttpReply up = ask(alice_, "POST", "/datasets", npy, "application/octet-stream");
  ASSERT_EQ(up.status, 201) << up.body;
  const std::string upload = json::parse(up.body).value("id", "");

  json done = run_as(alice_, sum,
                     {{"params", {{"dims", 1}}}, {"dataset", {{"values", {{"upload", upload}}}}}});
  ASSERT_EQ(done.value("status", ""), "done") << done.dump(2);
  EXPECT_EQ(done["owner"], "alice");
  const std::string run = done["runtime_id"];
  const json km_body = {
      {"params", {{"k", 2}, {"dims", 2}, {"max_iterations", 2}, {"threshold", -1}}},
      {"dataset", {{"points", {{"generate", "blobs"}, {"seed", 7}, {"rows", 64}}}}},
      {"state", {{"centroids", {{0, 0}, {3, 3}}}}}};
  json km = run_as(alice_, kmeans, km_body);
  ASSERT_EQ(km.value("status", ""), "done") << km.dump(2);
  const std::string km_run = km["runtime_id"];
  const json inline_sum = {{"params", {{"dims", 1}}},
                           {"dataset", {{"values", {{"values", {{1.0}, {2.0}}}}}}}};
  const std::string probed = c_.dir() + "/probed.npy";
  std::ofstream(probed, std::ios::binary) << npy;
  const std::string probe = json{{"path", probed}}.dump();

  struct Row {
    std::string method, path, body;
    std::map<std::string, int> want;  // by column
    std::string type = "application/json";
    // For a call that uses up what it names: a fresh one of alice's for
    // each caller, and the path naming it.
    std::function<std::string()> fresh = nullptr;
  };
  int copies = 0;
  auto fresh_program = [&] {  // a copy of sum of its own checksum
    const std::string dir = c_.dir() + "/sum-" + std::to_string(++copies);
    std::filesystem::copy(LIZARD_SOURCE_DIR "/examples/sum", dir,
                          std::filesystem::copy_options::recursive);
    std::ofstream(dir + "/config.yaml", std::ios::app) << "\n# copy " << copies << "\n";
    return "/programs/" + register_as(alice_, dir);
  };
  auto fresh_upload = [&] {
    HttpReply r = ask(alice_, "POST", "/datasets", npy, "application/octet-stream");
    return "/datasets/" + json::parse(r.body, nullptr, false).value("id", "");
  };
  auto all = [](int code) {
    return std::map<std::string, int>{{"admin", code},  {"owner", code}, {"other", code},
                                      {"reader", code}, {"worker", 401}, {"none", 401}};
  };
  auto owners = [](int yes) {  // the owner and admins; 403 for the rest
    return std::map<std::string, int>{{"admin", yes},  {"owner", yes},  {"other", 403},
                                      {"reader", 403}, {"worker", 401}, {"none", 401}};
  };
  auto readable = [](int yes) {  // the owner, admins and readers
    return std::map<std::string, int>{{"admin", yes},  {"owner", yes},  {"other", 403},
                                      {"reader", yes}, {"worker", 401}, {"none", 401}};
  };
  auto writers = [](int yes) {  // any user or admin
    return std::map<std::string, int>{{"admin", yes},  {"owner", yes},  {"other", yes},
                                      {"reader", 403}, {"worker", 401}, {"none", 401}};
  };
  const std::string worker_id = json::parse(ask(root_, "GET", "/clients").body)[0].value("id", "");
  std::map<std::string, int> open = all(200);
  open["worker"] = open["none"] = 200;
  const std::string stage = json{{"path", probed}, {"program", sum}}.dump();
  const std::vector<Row> rows = {
      {"GET", "/ruok", "", open},
      {"GET", "/ui/app.js", "", open},
      {"GET", "/", "", all(200)},
      {"GET", "/metrics", "", all(200)},
      {"GET", "/clients", "", all(200)},
      {"GET", "/clients/" + worker_id, "", all(200)},
      {"GET", "/programs", "", all(200)},
      {"GET", "/programs/" + sum, "", all(200)},
      {"GET", "/runtimes", "", all(200)},
      {"GET", "/runtimes/" + run, "", all(200)},
      {"GET", "/runtimes/" + km_run + "/fields/labels", "", readable(200)},
      {"GET", "/runtimes/" + run + "/logs", "", readable(200)},
      {"GET", "/datasets", "", all(200)},
      {"GET", "/datasets/" + upload, "", readable(200)},
      {"POST", "/datasets/stage", stage, writers(200)},  // while the executor is free
      {"POST", "/runtime/" + sum, inline_sum.dump(), writers(202)},
      {"POST", "/datasets/drop", R"({"source": "/nowhere.npy"})", writers(200)},
      {"POST", "/datasets/probe", probe, writers(200)},
      {"POST", "/programs", "{}", writers(400)},  // reaches the registration, which refuses it
      {"POST", "/datasets", npy, writers(201), "application/octet-stream"},
      {"DELETE", "/runtimes/" + run, "", owners(409)},  // finished: nothing to cancel
      {"DELETE", "", "", owners(200), "application/json", fresh_upload},
      {"DELETE", "", "", owners(200), "application/json", fresh_program},
  };
  const std::vector<const Caller*> callers = {&root_, &alice_, &bob_, &rita_, &worker_, &nobody_};
  for (const Row& row : rows)
    for (const Caller* as : callers) {
      const std::string path = row.fresh ? row.fresh() : row.path;
      HttpReply r = ask(*as, row.method, path, row.body, row.type);
      EXPECT_EQ(r.status, row.want.at(as->who))
          << row.method << " " << path << " as " << as->who << ": " << r.body;
    }
  // Another user's run summary hides its result; its owner, an admin and a
  // reader see it.
  for (const Caller* as : {&root_, &alice_, &rita_}) {
    const json seen = json::parse(ask(*as, "GET", "/runtimes/" + run).body);
    EXPECT_TRUE(seen.contains("result")) << as->who;
  }
  const json bobs_view = json::parse(ask(bob_, "GET", "/runtimes/" + run).body);
  EXPECT_FALSE(bobs_view.contains("result")) << bobs_view.dump();
  EXPECT_EQ(bobs_view["result_hidden"], true);
  const json kms_view = json::parse(ask(bob_, "GET", "/runtimes/" + km_run).body);
  ASSERT_FALSE(kms_view["timings"].empty());
  for (const json& t : kms_view["timings"]) EXPECT_FALSE(t.contains("state")) << t.dump();
  EXPECT_TRUE(
      json::parse(ask(alice_, "GET", "/runtimes/" + km_run).body)["timings"][0].contains("state"));
  EXPECT_EQ(bobs_view["owner"], "alice");
  json listed = json::parse(ask(bob_, "GET", "/runtimes?user=alice").body);
  ASSERT_FALSE(listed.empty());
  for (const json& r : listed) {
    EXPECT_EQ(r["owner"], "alice");
    EXPECT_FALSE(r.contains("result"));
  }
  // Bob sees none of alice's uploads (his own only), and his run cannot
  // read one; a reader sees hers.
  const auto owners_listed = [&](const Caller& as) {
    std::set<std::string> seen;
    const json listing = json::parse(ask(as, "GET", "/datasets").body);
    for (const json& u : listing["uploads"]) seen.insert(u.value("owner", ""));
    return seen;
  };
  EXPECT_EQ(owners_listed(bob_), std::set<std::string>{"bob"});
  EXPECT_TRUE(owners_listed(rita_).count("alice"));
  HttpReply theirs =
      ask(bob_, "POST", "/runtime/" + sum,
          json{{"params", {{"dims", 1}}}, {"dataset", {{"values", {{"upload", upload}}}}}}.dump());
  EXPECT_EQ(theirs.status, 403) << theirs.body;
  EXPECT_NE(theirs.body.find("alice's"), std::string::npos) << theirs.body;

  // Shared: a run and an upload alice shares with bob are his to read.
  HttpReply shared_up = ask(alice_, "POST", "/datasets?share=bob", npy, "application/octet-stream");
  ASSERT_EQ(shared_up.status, 201) << shared_up.body;
  const std::string shared_upload = json::parse(shared_up.body).value("id", "");
  EXPECT_EQ(ask(bob_, "GET", "/datasets/" + shared_upload).status, 200);
  json bobs_over_hers =
      run_as(bob_, sum,
             {{"params", {{"dims", 1}}}, {"dataset", {{"values", {{"upload", shared_upload}}}}}});
  EXPECT_EQ(bobs_over_hers.value("status", ""), "done") << bobs_over_hers.dump(2);
  json shared_run = run_as(alice_, sum,
                           {{"params", {{"dims", 1}}},
                            {"dataset", {{"values", {{"upload", upload}}}}},
                            {"share", {"bob"}}});
  ASSERT_EQ(shared_run.value("status", ""), "done") << shared_run.dump(2);
  const std::string shared_id = shared_run["runtime_id"];
  EXPECT_TRUE(json::parse(ask(bob_, "GET", "/runtimes/" + shared_id).body).contains("result"));
  EXPECT_EQ(ask(bob_, "GET", "/runtimes/" + shared_id + "/logs").status, 200);
  EXPECT_EQ(ask(bob_, "DELETE", "/runtimes/" + shared_id).status, 403) << "read, not steer";
  EXPECT_EQ(ask(alice_, "POST", "/datasets?share=no%20one", npy, "application/octet-stream").status,
            400);

  // Cancelling: while a long run of alice's holds the one executor, her
  // queued run is bob's and rita's to leave and hers to cancel, and an admin
  // cancels bob's queued run and alice's running one.
  auto submitted = [&](const Caller& as, const json& body, const std::string& hash) {
    return json::parse(ask(as, "POST", "/runtime/" + hash, body.dump()).body)
        .value("runtime_id", "");
  };
  json forever = km_body;
  forever["params"]["max_iterations"] = 100000000;
  const std::string running = submitted(alice_, forever, kmeans);
  ASSERT_TRUE(wait_for_iterations(c_, running, 1, 60));
  const std::string queued = submitted(alice_, inline_sum, sum);
  EXPECT_EQ(ask(bob_, "DELETE", "/runtimes/" + queued).status, 403);
  EXPECT_EQ(ask(rita_, "DELETE", "/runtimes/" + queued).status, 403);
  EXPECT_EQ(ask(alice_, "DELETE", "/runtimes/" + queued).status, 202)
      << ask(root_, "GET", "/runtimes/" + queued).body;
  const std::string bobs = submitted(bob_, inline_sum, sum);
  EXPECT_EQ(ask(root_, "DELETE", "/runtimes/" + bobs).status, 202);
  EXPECT_EQ(ask(bob_, "DELETE", "/runtimes/" + running).status, 403);
  EXPECT_EQ(ask(root_, "DELETE", "/runtimes/" + running).status, 202);
  for (const std::string& id : {queued, bobs, running})
    EXPECT_EQ(wait_until_finished(c_, id, 60).value("status", ""), "cancelled") << id;
  const std::string log = read_file(c_.dir() + "/server.log");
  EXPECT_NE(log.find("audit: bob may not cancel run " + queued + ", which is alice's"),
            std::string::npos);
  EXPECT_NE(log.find("audit: alice cancels run " + queued), std::string::npos);
  EXPECT_NE(log.find("audit: root cancels run " + bobs), std::string::npos);

  // Deleting: alice's upload and program are hers and an admin's to delete.
  EXPECT_EQ(ask(bob_, "DELETE", "/datasets/" + upload).status, 403);
  EXPECT_EQ(ask(rita_, "DELETE", "/datasets/" + upload).status, 403);
  EXPECT_EQ(ask(alice_, "DELETE", "/datasets/" + upload).status, 200);
  EXPECT_EQ(ask(bob_, "DELETE", "/programs/" + kmeans).status, 403);
  EXPECT_EQ(ask(rita_, "DELETE", "/programs/" + kmeans).status, 403);
  EXPECT_EQ(ask(worker_, "DELETE", "/programs/" + kmeans).status, 401);
  EXPECT_EQ(ask(root_, "DELETE", "/programs/" + kmeans).status, 200);
  EXPECT_EQ(ask(rita_, "POST", "/programs", "{}").status, 403);
  EXPECT_EQ(register_as(bob_, LIZARD_SOURCE_DIR "/examples/sum"), sum) << "shared by checksum";
  EXPECT_EQ(json::parse(ask(bob_, "GET", "/").body).value("user", ""), "bob");
}

TEST_F(Users, AUsersTokenAdmitsNoWorker) {
  ASSERT_TRUE(c_.add_worker({"--token", alice_.token}).ok());
  ASSERT_TRUE(c_.add_worker({"--token", root_.token}).ok());
  for (int i = 0; i < 600; ++i) {  // each says so once the server refused it, and stops
    if (read_file(c_.dir() + "/worker1.log").find("refused") != std::string::npos &&
        read_file(c_.dir() + "/worker2.log").find("refused") != std::string::npos)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  for (const char* log : {"/worker1.log", "/worker2.log"})
    EXPECT_NE(read_file(c_.dir() + log).find("the server refused this worker"), std::string::npos)
        << log;
  EXPECT_EQ(get_json(c_, "/clients").size(), 1u) << "only the worker with the workers' token";
}

// A server of one token, as before users: that token is the admin, whose
// name its runs carry.
TEST(UsersBefore, OneTokenIsTheAdmin) {
  LocalCluster c;
  c.set_token("s3cret");
  ASSERT_TRUE(c.start(0, {}, {"--token", "s3cret"}).ok());
  ASSERT_TRUE(c.add_worker({"--token", "s3cret"}).ok());
  ASSERT_TRUE(c.wait_for_workers(1).ok());
  const std::string sum = register_program(c, LIZARD_SOURCE_DIR "/examples/sum");
  ASSERT_FALSE(sum.empty());
  json r = wait_until_finished(
      c,
      submit_run(c, sum,
                 {{"params", {{"dims", 1}}}, {"dataset", {{"values", {{"values", {{5.0}}}}}}}}),
      60);
  ASSERT_EQ(r.value("status", ""), "done") << r.dump(2);
  EXPECT_EQ(r["owner"], "admin");
  EXPECT_EQ(r["result"]["aggregate"]["sums"][0], 5.0);
  EXPECT_EQ(get_json(c, "/").value("user", ""), "admin");
}

}  // namespace
}  // namespace lizard

namespace lizard {
namespace {

// A long kmeans run (cancelled, never finished) for the fair-share tests.
json endless_kmeans() {
  return {{"params", {{"k", 2}, {"dims", 2}, {"max_iterations", 100000000}, {"threshold", -1}}},
          {"dataset", {{"points", {{"generate", "blobs"}, {"seed", 7}, {"rows", 64}}}}},
          {"state", {{"centroids", {{0, 0}, {3, 3}}}}}};
}

class UsersSharing : public ::testing::Test {
 protected:
  void start(int executors) {
    const std::string file = c_.dir() + "/users.yaml";
    alice_ = add_user(file, "alice", "user");
    bob_ = add_user(file, "bob", "user");
    auto carol = run_command({lizard_binary(), "users", "add", "carol", "--users", file,
                              "--max-executors", "1", "--max-waiting", "1"});
    ASSERT_TRUE(carol.ok() && carol->exit_code == 0);
    carol_ = carol->output.substr(0, carol->output.find('\n'));
    c_.set_token(alice_);
    ASSERT_TRUE(c_.start(0, {}, {"--token", "w", "--users", file}).ok());
    ASSERT_TRUE(c_.add_worker({"--token", "w", "--cpu-executors", std::to_string(executors)}).ok());
    ASSERT_TRUE(c_.wait_for_workers(1).ok());
    auto r = run_command(
        {load_program_binary(), LIZARD_SOURCE_DIR "/examples/kmeans", c_.uri(), "--token", alice_});
    ASSERT_TRUE(r.ok() && r->exit_code == 0);
    kmeans_ = printed_checksum({r->exit_code, r->output});
  }
  HttpReply post_as(const std::string& token, const json& body) {
    auto r = http_request("POST", c_.uri() + "/runtime/" + kmeans_, body.dump(), "application/json",
                          60, token);
    EXPECT_TRUE(r.ok());
    return r.ok() ? *r : HttpReply{};
  }
  std::string submit_as(const std::string& token, const json& body) {
    HttpReply r = post_as(token, body);
    EXPECT_EQ(r.status, 202) << r.body;
    return json::parse(r.body, nullptr, false).value("runtime_id", "");
  }
  std::string status_of(const std::string& id) {
    return get_json(c_, "/runtimes/" + id).value("status", "");
  }
  bool wait_for_status(const std::string& id, const std::string& want) {
    for (int i = 0; i < 600 && status_of(id) != want; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return status_of(id) == want;
  }
  void cancel_all() {
    auto runs = get_json(c_, "/runtimes");
    for (const json& r : runs) {
      if (r["status"] != "queued" && r["status"] != "running") continue;
      (void)http_request("DELETE", c_.uri() + "/runtimes/" + r["runtime_id"].get<std::string>(), "",
                         "", 30,
                         r["owner"] == "carol" ? carol_
                         : r["owner"] == "bob" ? bob_
                                               : alice_);
    }
  }

  LocalCluster c_;
  std::string alice_, bob_, carol_, kmeans_;
};

// Alice's long run holds the one executor with three more of hers queued;
// bob's run, submitted last, is the next to start, and hers say why they wait.
TEST_F(UsersSharing, ASecondUsersRunStartsBeforeTheFirstUsersQueueDrains) {
  start(1);
  const std::string first = submit_as(alice_, endless_kmeans());
  ASSERT_TRUE(wait_for_iterations(c_, first, 1, 60));
  std::this_thread::sleep_for(std::chrono::seconds(1));  // alice's usage: a second's worth
  std::vector<std::string> hers;
  for (int i = 0; i < 3; ++i) hers.push_back(submit_as(alice_, endless_kmeans()));
  const std::string his = submit_as(bob_, endless_kmeans());
  std::string why;
  for (int i = 0; i < 100 && why.empty(); ++i) {
    why = get_json(c_, "/runtimes/" + hers[0]).value("waiting_for", "");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_NE(why.find("alice has used more than their share"), std::string::npos) << why;
  ASSERT_EQ(http_request("DELETE", c_.uri() + "/runtimes/" + first, "", "", 30, alice_)->status,
            202);
  EXPECT_TRUE(wait_for_status(his, "running")) << status_of(his);
  for (const std::string& id : hers) EXPECT_EQ(status_of(id), "queued") << id;
  auto metrics = c_.get("/metrics");
  ASSERT_TRUE(metrics.ok());
  EXPECT_NE(metrics->body.find("lizard_user_executor_seconds_total{user=\"alice\"}"),
            std::string::npos);
  cancel_all();
}

// Carol may hold one executor and queue one run: her second run waits on two
// free executors, saying why, while bob's takes the other; a third is refused.
TEST_F(UsersSharing, AUsersQuotaHoldsAndSaysSo) {
  start(2);
  json one = endless_kmeans();
  const std::string first = submit_as(carol_, one);
  ASSERT_TRUE(wait_for_iterations(c_, first, 1, 60));
  EXPECT_EQ(get_json(c_, "/runtimes/" + first)["executors"].size(), 1u) << "capped at the quota";
  const std::string second = submit_as(carol_, one);
  std::string why;
  for (int i = 0; i < 100 && why.empty(); ++i) {
    why = get_json(c_, "/runtimes/" + second).value("waiting_for", "");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(why, "user quota of 1 executors reached (carol's runs hold 1)");
  HttpReply third = post_as(carol_, one);
  EXPECT_EQ(third.status, 429) << third.body;
  EXPECT_NE(third.body.find("user quota of 1 waiting runs reached"), std::string::npos);
  const std::string bobs = submit_as(bob_, one);
  EXPECT_TRUE(wait_for_status(bobs, "running")) << status_of(bobs);
  EXPECT_EQ(status_of(second), "queued");
  cancel_all();
}

}  // namespace
}  // namespace lizard
