#include "server/coordinator.h"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstring>
#include <future>
#include <thread>

#include "common/clock.h"
#include "program/bundle.h"
#include "server/testing/fakes.h"
#include "server/testing/run_driver_fixture.h"
#include "tests/allocations.h"

namespace lizard {
namespace {

using nlohmann::json;
using testing::FakeRun;
using testing::FakeWorker;

// Sums x: one iteration, the aggregate {sum, count}.
const char* kConfig = R"(
info: {name: sums}
sources: {cuda: kernel.cu}
dataset:
  x: {type: float64, shape: [rows]}
aggregate:
  sum:   {type: float64, reduce: sum}
  count: {type: int64, reduce: sum}
iterate: [k]
)";

// What a worker's kernels give: the sum of its x and its row count.
std::string sums(const Manifest& m, const FakeRun& run) {
  const std::string& x = run.rows.at("x");
  double sum = 0;
  for (size_t off = 0; off < x.size(); off += sizeof(double)) {
    double v;
    std::memcpy(&v, x.data() + off, sizeof v);
    sum += v;
  }
  const int64_t count = run.start.rows;
  SectionBuffer agg = make_section(m.aggregate, m, ParamValues{}).value();
  std::memcpy(agg.data(*agg.find("sum")), &sum, sizeof sum);
  std::memcpy(agg.data(*agg.find("count")), &count, sizeof count);
  return std::string(agg.bytes.begin(), agg.bytes.end());
}

class CoordinatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    program_ = testing::make_test_program(kConfig);
    ASSERT_NE(program_, nullptr);
    make({});
  }
  void TearDown() override {
    if (coord_) coord_->shutdown();
    fakes_.clear();
    coord_.reset();
  }

  void make(CoordinatorOptions opts) {
    opts.state_dir = dir_.path("state");
    if (opts.worker_wait_s == 60) opts.worker_wait_s = 5;
    if (opts.program_build_timeout_s == 300) opts.program_build_timeout_s = 10;
    coord_ = std::make_unique<Coordinator>(opts);
  }

  // A fake worker connects and says hello, as the hub would hand it over;
  // `wrap`, when given, stands between the server and the worker's link.
  using WrapLink = std::function<std::shared_ptr<WorkerLink>(std::shared_ptr<WorkerLink>)>;
  FakeWorker& join(size_t executors = 1, const WrapLink& wrap = nullptr) {
    const std::string id = "w" + std::to_string(++connected_);
    auto w = std::make_unique<FakeWorker>(id, [this](const std::string& from, Message m) {
      coord_->on_worker_frame(from, encode(m));
    });
    w->kernel = [m = &program_->image.manifest](const FakeRun& run, const IterateMsg&) {
      return sums(*m, run);
    };
    EXPECT_EQ(coord_->on_worker_connect(wrap ? wrap(w->link()) : w->link()), id);
    coord_->on_worker_frame(id, encode(w->hello(executors).to_message()));
    fakes_.push_back(std::move(w));
    return *fakes_.back();
  }

  HttpResponse call(const std::string& method, const std::string& target, std::string body = "",
                    std::map<std::string, std::string> headers = {}) {
    HttpRequest req;
    req.method = method;
    req.target = target;
    req.body = std::move(body);
    req.headers = std::move(headers);
    auto answered = std::make_shared<std::promise<HttpResponse>>();
    auto f = answered->get_future();
    coord_->on_http(std::move(req), [answered](HttpResponse r) {
      r.body += std::string(r.body_tail);  // as the connection writes them
      answered->set_value(r);
    });
    if (f.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
      ADD_FAILURE() << method << " " << target << " was not answered";
      return {0, "", ""};
    }
    return f.get();
  }

  static json body(const HttpResponse& r) { return json::parse(r.body, nullptr, false); }

  std::string register_program(const char* config = kConfig, const std::string& host = "") {
    ProgramBundle b;
    b.config = config;
    b.sources["kernel.cu"] = "";
    if (!host.empty()) b.sources["host.cpp"] = host;
    auto r = call("POST", "/programs", b.to_json().dump());
    EXPECT_EQ(r.status, 201) << r.body;
    return body(r).value("hash", "");
  }

  static json run_body(int rows, json extra = json::object()) {
    std::vector<double> x;
    for (int i = 1; i <= rows; ++i) x.push_back(i);
    extra["dataset"] = {{"x", {{"values", x}}}};
    return extra;
  }

  json wait_for_status(const std::string& id, const std::string& status) {
    const auto deadline = SteadyClock::now() + std::chrono::seconds(20);
    json r;
    while (SteadyClock::now() < deadline) {
      r = body(call("GET", "/runtimes/" + id));
      if (r.value("status", "") == status) return r;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ADD_FAILURE() << id << " never became " << status << ": " << r.dump(2);
    return r;
  }

  TempDir dir_;
  std::shared_ptr<ProgramEntry> program_;  // for the aggregate's layout
  std::unique_ptr<Coordinator> coord_;
  std::vector<std::unique_ptr<FakeWorker>> fakes_;
  int connected_ = 0;
};

TEST_F(CoordinatorTest, AProgramIsBuiltOnTheWorkersAndARunGoesThrough) {
  FakeWorker& w1 = join();
  const std::string hash = register_program();
  ASSERT_FALSE(hash.empty());
  EXPECT_EQ(w1.link()->sent_of(MessageType::kProgram).size(), 1u);
  auto r = call("POST", "/runtime/" + hash + "?wait=1", run_body(10).dump());
  ASSERT_EQ(r.status, 200) << r.body;
  json record = body(r);
  EXPECT_EQ(record["status"], "done") << record.dump(2);
  EXPECT_EQ(record["result"]["aggregate"]["sum"], 55.0);
  EXPECT_EQ(record["result"]["aggregate"]["count"], 10);
  EXPECT_EQ(record["executors_requested"]["min"], 1);
  EXPECT_EQ(body(call("GET", "/clients"))[0]["hardware"]["executors"][0]["run"], nullptr);
}

TEST_F(CoordinatorTest, ARegistrationThatDoesNotBuildIsNotKept) {
  FakeWorker& w1 = join();
  w1.builds = false;
  ProgramBundle b;
  b.config = kConfig;
  b.sources["kernel.cu"] = "";
  auto r = call("POST", "/programs", b.to_json().dump());
  EXPECT_EQ(r.status, 422);
  EXPECT_NE(body(r)["error"].get<std::string>().find("worker w1: nvrtc: error in kernel.cu"),
            std::string::npos)
      << r.body;
  EXPECT_TRUE(body(call("GET", "/programs")).empty());
  EXPECT_EQ(call("POST", "/programs", "not json").status, 400);
}

TEST_F(CoordinatorTest, AQueuedRunStartsWhenAWorkerWithItsProgramJoins) {
  const std::string hash = register_program();  // no worker yet
  auto queued = call("POST", "/runtime/" + hash, run_body(4).dump());
  ASSERT_EQ(queued.status, 202) << queued.body;
  const std::string id = body(queued)["runtime_id"];
  EXPECT_EQ(body(call("GET", "/runtimes/" + id))["status"], "queued");
  FakeWorker& w1 = join();
  json done = wait_for_status(id, "done");
  EXPECT_EQ(done["result"]["aggregate"]["sum"], 10.0);
  EXPECT_EQ(w1.link()->sent_of(MessageType::kProgram).size(), 1u);  // pushed on hello
  EXPECT_EQ(w1.link()->sent_of(MessageType::kRunStart).size(), 1u);
}

TEST_F(CoordinatorTest, RunsOnOneExecutorEachUseDisjointWorkers) {
  FakeWorker& w1 = join();
  FakeWorker& w2 = join();
  const std::string hash = register_program();
  // Both hold their first iteration until both have started.
  std::promise<void> both;
  auto gate = both.get_future().share();
  std::atomic<int> waiting{0}, met{0};
  auto hold = [&](const Message& m) {
    if (m.type != MessageType::kIterate) return false;
    if (++waiting == 2) both.set_value();
    if (gate.wait_for(std::chrono::seconds(5)) == std::future_status::ready) ++met;
    return false;
  };
  w1.intercept = hold;
  w2.intercept = hold;
  auto a = body(call("POST", "/runtime/" + hash, run_body(3, {{"executors", 1}}).dump()));
  auto b = body(call("POST", "/runtime/" + hash, run_body(5, {{"executors", 1}}).dump()));
  json ra = wait_for_status(a["runtime_id"], "done");
  json rb = wait_for_status(b["runtime_id"], "done");
  EXPECT_EQ(ra["result"]["aggregate"]["sum"], 6.0);
  EXPECT_EQ(rb["result"]["aggregate"]["sum"], 15.0);
  EXPECT_NE(ra["plan"]["executors"][0]["worker"], rb["plan"]["executors"][0]["worker"]);
  EXPECT_EQ(met, 2);  // each run was in its iteration while the other was
}

TEST_F(CoordinatorTest, ALostWorkersRunMovesToTheOthers) {
  FakeWorker& w1 = join();
  join();
  const std::string hash = register_program();
  w1.intercept = [&](const Message& m) {
    if (m.type != MessageType::kIterate) return false;
    w1.go_silent();
    coord_->on_worker_close("w1", "its connection closed: End of file");
    return true;
  };
  auto r = call("POST", "/runtime/" + hash + "?wait=1", run_body(8).dump());
  json record = body(r);
  EXPECT_EQ(record["status"], "done") << record.dump(2);
  EXPECT_EQ(record["result"]["aggregate"]["sum"], 36.0);
  ASSERT_EQ(record["recoveries"].size(), 1u);
  EXPECT_EQ(body(call("GET", "/clients")).size(), 1u);
}

TEST_F(CoordinatorTest, CancellingARunningRunStopsIt) {
  FakeWorker& w1 = join();
  const std::string hash = register_program();
  w1.intercept = [](const Message& m) { return m.type == MessageType::kIterate; };
  const std::string id = body(call("POST", "/runtime/" + hash, run_body(2).dump()))["runtime_id"];
  ASSERT_TRUE(w1.link()->wait_for(MessageType::kIterate, 1));
  auto c = call("DELETE", "/runtimes/" + id);
  EXPECT_EQ(c.status, 202);
  EXPECT_EQ(body(c)["status"], "cancelling");
  wait_for_status(id, "cancelled");
  auto again = call("DELETE", "/runtimes/" + id);
  EXPECT_EQ(again.status, 409);
  EXPECT_EQ(body(again)["status"], "cancelled");
  EXPECT_EQ(call("DELETE", "/runtimes/r99").status, 404);
}

// GET /runtimes/<id>?wait_ms=N answers with the record as it stands after N
// ms while the run goes on, and at once when the run ends, however long N.
TEST_F(CoordinatorTest, AWaitForARunsRecordEndsAtTheRunsEnd) {
  FakeWorker& w1 = join();
  const std::string hash = register_program();
  w1.intercept = [](const Message& m) { return m.type == MessageType::kIterate; };
  const std::string id = body(call("POST", "/runtime/" + hash, run_body(2).dump()))["runtime_id"];
  ASSERT_TRUE(w1.link()->wait_for(MessageType::kIterate, 1));
  auto t0 = std::chrono::steady_clock::now();
  auto short_wait = call("GET", "/runtimes/" + id + "?wait_ms=100");
  EXPECT_EQ(short_wait.status, 200);
  EXPECT_EQ(body(short_wait)["status"], "running");
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(100));
  std::thread cancel([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    (void)call("DELETE", "/runtimes/" + id);
  });
  t0 = std::chrono::steady_clock::now();
  auto long_wait = call("GET", "/runtimes/" + id + "?wait_ms=60000");
  cancel.join();
  EXPECT_EQ(body(long_wait)["status"], "cancelled") << long_wait.body;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30));
  // Over a finished run, or none, the answer comes at once.
  EXPECT_EQ(body(call("GET", "/runtimes/" + id + "?wait_ms=60000"))["status"], "cancelled");
  EXPECT_EQ(call("GET", "/runtimes/r99?wait_ms=60000").status, 404);
}

TEST_F(CoordinatorTest, ARunNoWorkerCanServeFailsWithTheReason) {
  join(1);
  const std::string hash = register_program();
  auto r = call("POST", "/runtime/" + hash + "?wait=1", run_body(2, {{"executors", 3}}).dump());
  json record = body(r);
  EXPECT_EQ(record["status"], "failed");
  EXPECT_NE(record["error"].get<std::string>().find("the run needs 3 executor(s)"),
            std::string::npos)
      << record.dump(2);
  EXPECT_EQ(call("POST", "/runtime/0123", "{}").status, 404);
  EXPECT_EQ(call("POST", "/runtime/" + hash, "{").status, 400);
}

TEST_F(CoordinatorTest, BadWorkerFramesAreIgnoredAndABadHelloClosesTheLink) {
  FakeWorker& w1 = join();
  coord_->on_worker_frame("w1", "garbage");
  coord_->on_worker_frame("w1", encode(Message{MessageType::kProgress, {{"run_id", 7}}, ""}));
  coord_->on_worker_frame("w9", encode(ProgramStatusMsg{"x", true, ""}.to_message()));
  EXPECT_FALSE(w1.link()->closed());
  auto link = std::make_shared<testing::FakeWorkerLink>();
  const std::string id = coord_->on_worker_connect(link);
  coord_->on_worker_frame(id, encode(Message{MessageType::kHello, {{"executors", 5}}, ""}));
  EXPECT_TRUE(link->closed());
  EXPECT_EQ(body(call("GET", "/clients")).size(), 1u);
}

// A worker of another wire version, stated in its hello or in its frame,
// is answered with a welcome that refuses it naming both versions.
TEST_F(CoordinatorTest, AWorkerOfAnotherWireVersionIsRefused) {
  FakeWorker& same = join();  // one of this version joins
  HelloMsg hello;
  hello.hostname = "newer";
  hello.protocol = kWireVersion + 1;
  std::string in_frame = encode(HelloMsg{}.to_message());
  in_frame[2] = static_cast<char>(kWireVersion + 1);
  for (const std::string& frame : {encode(hello.to_message()), in_frame}) {
    auto link = std::make_shared<testing::FakeWorkerLink>();
    coord_->on_worker_frame(coord_->on_worker_connect(link), frame);
    auto sent = link->sent_of(MessageType::kWelcome);
    ASSERT_EQ(sent.size(), 1u);
    auto welcome = WelcomeMsg::parse(sent[0].header);
    ASSERT_TRUE(welcome.ok()) << welcome.status().message();
    EXPECT_EQ(welcome->refused, "the worker speaks wire protocol version " +
                                    std::to_string(kWireVersion + 1) + ", the server version " +
                                    std::to_string(kWireVersion));
    EXPECT_TRUE(link->closed());
  }
  EXPECT_FALSE(same.link()->closed());
  EXPECT_EQ(body(call("GET", "/clients")).size(), 1u);
}

TEST_F(CoordinatorTest, WorkersAndUploadsNeedTheTokenWhenOneIsSet) {
  coord_->shutdown();
  CoordinatorOptions opts;
  opts.token = "sesame";
  make(opts);
  EXPECT_FALSE(coord_->authorize_worker({}));
  EXPECT_FALSE(coord_->authorize_worker({{"authorization", "Bearer nope"}}));
  EXPECT_TRUE(coord_->authorize_worker({{"authorization", "Bearer sesame"}}));
  HttpRequest head;
  head.method = "POST";
  head.target = "/datasets";
  auto refused = coord_->upload_destination(head);
  ASSERT_TRUE(std::holds_alternative<HttpResponse>(refused));
  EXPECT_EQ(std::get<HttpResponse>(refused).status, 401);
  head.headers["authorization"] = "Bearer sesame";
  auto dest = coord_->upload_destination(head);
  ASSERT_TRUE(std::holds_alternative<std::unique_ptr<UploadSink>>(dest));
  EXPECT_NE(std::get<std::unique_ptr<UploadSink>>(dest)->path().find("datasets"),
            std::string::npos);
}

// A queued run stays queued through a shutdown, to whoever asks until the
// server is gone, and is queued again at the next start; a wait for it is
// answered 503 with the reason.
TEST_F(CoordinatorTest, ShutdownLeavesRunsThatNeverStartedToTheNextStart) {
  const std::string hash = register_program();
  const std::string id = body(call("POST", "/runtime/" + hash, run_body(2).dump()))["runtime_id"];
  auto answered = std::make_shared<std::promise<HttpResponse>>();
  HttpRequest wait;
  wait.method = "GET";
  wait.target = "/runtimes/" + id + "?wait_ms=60000";
  coord_->on_http(std::move(wait), [answered](HttpResponse r) { answered->set_value(r); });
  coord_->shutdown();
  auto f = answered->get_future();
  ASSERT_EQ(f.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  const HttpResponse waited = f.get();
  EXPECT_EQ(waited.status, 503);
  EXPECT_EQ(body(waited)["error"],
            "the server is shutting down: " + id + " resumes when it starts again");
  json r = body(call("GET", "/runtimes/" + id));
  EXPECT_EQ(r["status"], "queued");
  EXPECT_FALSE(r.contains("error")) << r.dump();
  fakes_.clear();
  connected_ = 0;
  make({});
  EXPECT_EQ(body(call("GET", "/runtimes/" + id))["status"], "queued");
}

TEST_F(CoordinatorTest, ProgramsAndRunsSurviveARestart) {
  join();
  const std::string hash = register_program();
  auto r = call("POST", "/runtime/" + hash + "?wait=1", run_body(3).dump());
  const std::string id = body(r)["runtime_id"];
  coord_->shutdown();
  fakes_.clear();
  connected_ = 0;
  make({});
  EXPECT_EQ(body(call("GET", "/programs/" + hash))["name"], "sums");
  EXPECT_EQ(body(call("GET", "/runtimes/" + id))["status"], "done");
  FakeWorker& w1 = join();  // the stored program goes to a new worker
  EXPECT_TRUE(w1.link()->wait_for(MessageType::kProgram, 1));
}

// Stands between the server and a fake worker's link.  It holds back the
// iterates of iterations [first, last), noting the process's allocations as
// each one goes out, for the test to answer them itself.
class IterationLink : public WorkerLink {
 public:
  IterationLink(std::shared_ptr<WorkerLink> inner, int first, int last)
      : inner_(std::move(inner)), first_(first), last_(last) {}

  void send(OutgoingFrame f) override {
    const uint64_t now = testing::allocations();
    auto type = frame_type(f.head.empty() ? f.tail : std::string_view(f.head));
    if (type.ok() && *type == MessageType::kIterate) {
      const int it = iterates_.load();
      if (it >= first_ && it < last_) {
        at_[static_cast<size_t>(it)] = now;
        iterates_.store(it + 1);
        return;
      }
      iterates_.store(it + 1);
    }
    inner_->send(std::move(f));
  }
  size_t queued_bytes() const override { return inner_->queued_bytes(); }
  void close() override { inner_->close(); }
  std::string peer() const override { return inner_->peer(); }

  // The iterates sent so far, and the allocations when iterate `it` went out.
  int iterates() const { return iterates_.load(); }
  uint64_t allocations_at(int it) const { return at_[static_cast<size_t>(it)]; }

 private:
  std::shared_ptr<WorkerLink> inner_;
  const int first_, last_;
  std::array<uint64_t, 64> at_{};
  std::atomic<int> iterates_{0};
};

// Waits until no thread of the process has allocated for 100 ms: the
// driver has recorded the previous iteration and waits for results.  (On a
// loaded machine under a sanitizer the record's writer can go quiet for
// 20 ms and still have allocations to make.)
void wait_until_quiet() {
  const auto deadline = SteadyClock::now() + std::chrono::seconds(5);
  uint64_t seen = testing::allocations();
  while (SteadyClock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const uint64_t now = testing::allocations();
    if (now == seen) return;
    seen = now;
  }
}

TEST_F(CoordinatorTest, AServerDrivenIterationAllocatesNothingFromResultsToTheNextIterate) {
  // kSums adds each iteration's sum to its state and never stops on its own.
  // The fake workers answer the first and last iterations, the test those
  // between, each worker's with a sum of 1.
  constexpr int kIterations = 20, kFirstHeld = 4, kHeld = 12;
  std::vector<std::shared_ptr<IterationLink>> links;
  auto wrap = [&](std::shared_ptr<WorkerLink> inner) {
    links.push_back(
        std::make_shared<IterationLink>(std::move(inner), kFirstHeld, kFirstHeld + kHeld));
    return links.back();
  };
  FakeWorker& w1 = join(1, wrap);
  join(1, wrap);
  const std::string hash = register_program(testing::kSums, testing::kHost);
  ASSERT_FALSE(hash.empty());
  const json run = body(
      call("POST", "/runtime/" + hash, run_body(10, {{"max_iterations", kIterations}}).dump()));
  const std::string id = run.value("runtime_id", "");
  ASSERT_FALSE(id.empty()) << run.dump();
  auto wait_for_iterates = [&](int n) {
    const auto deadline = SteadyClock::now() + std::chrono::seconds(20);
    for (auto& l : links)
      while (l->iterates() < n && SteadyClock::now() < deadline) std::this_thread::yield();
    for (auto& l : links) ASSERT_GE(l->iterates(), n) << "iterate " << n - 1 << " never went out";
  };
  ASSERT_NO_FATAL_FAILURE(wait_for_iterates(kFirstHeld + 1));  // both workers take part
  const std::string wire_id =
      IterateMsg::parse(w1.link()->sent_of(MessageType::kIterate)[0].packed)->run_id;
  const Manifest& m = program_->image.manifest;  // kConfig's aggregate: the same
  std::vector<uint64_t> allocated;
  for (int it = kFirstHeld; it < kFirstHeld + kHeld; ++it) {
    std::vector<std::string> results;
    for (int w = 0; w < 2; ++w) {
      SectionBuffer agg = make_section(m.aggregate, m, ParamValues{}).value();
      const double sum = 1;
      const int64_t count = 5;
      std::memcpy(agg.data(*agg.find("sum")), &sum, sizeof sum);
      std::memcpy(agg.data(*agg.find("count")), &count, sizeof count);
      IterationResultMsg r{wire_id, it, true, "", 0.5};
      results.push_back(encode(r.to_message(std::string(agg.bytes.begin(), agg.bytes.end()))));
    }
    wait_until_quiet();
    const uint64_t before = testing::allocations();
    coord_->on_worker_frame("w1", std::move(results[0]));
    coord_->on_worker_frame("w2", std::move(results[1]));
    ASSERT_NO_FATAL_FAILURE(wait_for_iterates(it + 2));
    if (it + 1 == kFirstHeld + kHeld) break;  // iterate it + 1 went to the fake workers
    uint64_t sent = 0;
    for (auto& l : links) sent = std::max(sent, l->allocations_at(it + 1));
    allocated.push_back(sent - before);
  }
  // The first of them may still grow a buffer.
  for (size_t k = 2; k < allocated.size(); ++k)
    EXPECT_EQ(allocated[k], 0u) << "allocations between the results of iteration " << kFirstHeld + k
                                << " and the next iterate";
  json done = wait_for_status(id, "done");
  EXPECT_EQ(done["iterations"], kIterations);
  EXPECT_EQ(done["result"]["state"]["total"], (kIterations - kHeld) * 55.0 + kHeld * 2.0)
      << done.dump(2);
}
}  // namespace
}  // namespace lizard
