#include "server/server_metrics.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>

#include "common/metrics_text.h"
#include "server/http_routes.h"
#include "server/run_book.h"
#include "server/worker_registry.h"

namespace lizard {
namespace {

// A worker link that drops what it is sent, counting the frames.
class NullLink : public WorkerLink {
 public:
  void send(OutgoingFrame) override { ++frames; }
  size_t queued_bytes() const override { return 0; }
  void close() override {}
  std::string peer() const override { return "127.0.0.1:1"; }
  std::atomic<int> frames{0};
};

HelloMsg two_gpu_hello() {
  HelloMsg h;
  h.hostname = "node7";
  h.backend = "cuda";
  for (int i = 0; i < 2; ++i) {
    ExecutorInfo e;
    e.kind = "cuda";
    e.name = "NVIDIA H100 80GB HBM3";
    e.ordinal = i;
    e.total_memory = uint64_t{80} << 30;
    e.free_memory = (uint64_t{70} + static_cast<uint64_t>(i)) << 30;
    h.executors.push_back(e);
  }
  return h;
}

class ServerMetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/lizard-metrics-XXXXXX";
    dir_ = mkdtemp(tmpl);
    runs_ = std::make_unique<RunBook>(dir_);
    metrics_ = std::make_unique<ServerMetrics>(&workers_, runs_.get());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  ParsedMetrics scrape() const {
    const std::string text = metrics_->render();
    auto m = parse_metrics_text(text);
    EXPECT_TRUE(m.ok()) << m.status().message() << "\n" << text;
    return m.ok() ? m.value() : ParsedMetrics{};
  }

  std::string dir_;
  WorkerRegistry workers_;
  std::unique_ptr<RunBook> runs_;
  std::unique_ptr<ServerMetrics> metrics_;
};

TEST_F(ServerMetricsTest, WorkersAndTheirExecutorsAreReadAtEachScrape) {
  EXPECT_EQ(scrape().value("lizard_workers_connected"), 0.0);
  const std::string id = workers_.connect(std::make_shared<NullLink>());
  ASSERT_TRUE(workers_.hello(id, two_gpu_hello(), {}));
  ASSERT_TRUE(workers_.claim({{id, 1}}, "r9"));

  ParsedMetrics m = scrape();
  EXPECT_EQ(m.value("lizard_workers_connected"), 1.0);
  EXPECT_EQ(m.value("lizard_executor_info", {{"worker", "node7/gpu1"},
                                             {"executor", "1"},
                                             {"host", "node7"},
                                             {"kind", "cuda"},
                                             {"name", "NVIDIA H100 80GB HBM3"}}),
            1.0);
  EXPECT_EQ(
      m.value("lizard_executor_memory_total_bytes", {{"worker", "node7/gpu0"}, {"executor", "0"}}),
      static_cast<double>(uint64_t{80} << 30));
  EXPECT_EQ(
      m.value("lizard_executor_memory_free_bytes", {{"worker", "node7/gpu1"}, {"executor", "1"}}),
      static_cast<double>(uint64_t{71} << 30));
  EXPECT_EQ(m.value("lizard_executor_busy", {{"worker", "node7/gpu0"}, {"executor", "0"}}), 0.0);
  EXPECT_EQ(m.value("lizard_executor_busy", {{"worker", "node7/gpu1"}, {"executor", "1"}}), 1.0);
  EXPECT_EQ(
      m.value("lizard_executor_runs_served_total", {{"worker", "node7/gpu1"}, {"executor", "1"}}),
      1.0);

  workers_.resources(id, ResourcesMsg{{uint64_t{10} << 30, uint64_t{20} << 30}});
  workers_.release_run("r9");
  m = scrape();
  EXPECT_EQ(
      m.value("lizard_executor_memory_free_bytes", {{"worker", "node7/gpu0"}, {"executor", "0"}}),
      static_cast<double>(uint64_t{10} << 30));
  EXPECT_EQ(m.value("lizard_executor_busy", {{"worker", "node7/gpu1"}, {"executor", "1"}}), 0.0);
  EXPECT_EQ(
      m.value("lizard_executor_runs_served_total", {{"worker", "node7/gpu1"}, {"executor", "1"}}),
      1.0);

  workers_.remove(id);
  m = scrape();
  EXPECT_EQ(m.value("lizard_workers_connected"), 0.0);
  EXPECT_EQ(m.count("lizard_executor_info"), 0u);
}

// The worker label names the host and the device, so that a worker that
// joins again (a new join id) continues the same series; daemons sharing a
// host are told apart in join order.
TEST_F(ServerMetricsTest, ExecutorSeriesKeepTheirNameWhenAWorkerJoinsAgain) {
  const std::string first = workers_.connect(std::make_shared<NullLink>());
  ASSERT_TRUE(workers_.hello(first, two_gpu_hello(), {}));
  EXPECT_EQ(scrape().value("lizard_executor_busy", {{"worker", "node7/gpu1"}, {"executor", "1"}}),
            0.0);
  workers_.remove(first);
  const std::string again = workers_.connect(std::make_shared<NullLink>());
  ASSERT_NE(again, first);
  ASSERT_TRUE(workers_.hello(again, two_gpu_hello(), {}));
  ParsedMetrics m = scrape();
  EXPECT_EQ(m.value("lizard_executor_busy", {{"worker", "node7/gpu1"}, {"executor", "1"}}), 0.0);
  EXPECT_EQ(m.count("lizard_executor_busy"), 2u);

  HelloMsg cpu;
  cpu.hostname = "node7";
  cpu.backend = "cpu";
  cpu.executors.push_back(ExecutorInfo{});
  cpu.executors.back().kind = "cpu";
  for (int i = 0; i < 6; ++i) workers_.remove(workers_.connect(std::make_shared<NullLink>()));
  const std::string w9 = workers_.connect(std::make_shared<NullLink>());
  const std::string w10 = workers_.connect(std::make_shared<NullLink>());
  ASSERT_EQ(w10, "w10");
  ASSERT_TRUE(workers_.hello(w10, cpu, {}));
  ASSERT_TRUE(workers_.hello(w9, cpu, {}));
  ASSERT_TRUE(workers_.claim({{w10, 0}}, "r3"));
  m = scrape();
  EXPECT_EQ(m.value("lizard_executor_busy", {{"worker", "node7/cpu0"}, {"executor", "0"}}), 0.0);
  EXPECT_EQ(m.value("lizard_executor_busy", {{"worker", "node7/cpu0#2"}, {"executor", "0"}}), 1.0);
}

TEST_F(ServerMetricsTest, RunsByStatusAndTheQueue) {
  auto program = std::make_shared<ProgramEntry>();
  auto r1 = runs_->submit(program, "abc", RunRequest{});
  runs_->submit(program, "abc", RunRequest{});
  ParsedMetrics m = scrape();
  EXPECT_EQ(m.value("lizard_runs", {{"status", "queued"}}), 2.0);
  EXPECT_EQ(m.value("lizard_runs", {{"status", "running"}}), 0.0);
  // Runs that ended are lizard_runs_finished_total's, not the gauge's.
  EXPECT_EQ(m.value("lizard_runs", {{"status", "done"}}), std::nullopt);
  EXPECT_EQ(m.value("lizard_run_queue_length"), 2.0);

  ASSERT_TRUE(runs_->cancel(r1->id).ok());
  m = scrape();
  EXPECT_EQ(m.value("lizard_runs", {{"status", "queued"}}), 1.0);
  EXPECT_EQ(m.value("lizard_runs", {{"status", "cancelled"}}), std::nullopt);
  EXPECT_EQ(m.value("lizard_run_queue_length"), 1.0);
}

// A run that fails or is cancelled in the queue waited there too.
TEST_F(ServerMetricsTest, TheQueueWaitCountsRunsThatEndedInTheQueue) {
  ServerMetrics* metrics = metrics_.get();
  runs_->set_events(
      {[metrics](double s) { metrics->observe_queue_wait(s); },
       [metrics](RunStatus st, double s) { metrics->observe_run_finished(run_status_name(st), s); },
       [metrics](double s) { metrics->observe_queue_wait(s); }});
  auto program = std::make_shared<ProgramEntry>();
  auto failed = runs_->submit(program, "abc", RunRequest{});
  auto cancelled = runs_->submit(program, "abc", RunRequest{});
  runs_->finish(failed, unavailable("no worker has built program abc"));
  ASSERT_TRUE(runs_->cancel(cancelled->id).ok());
  ParsedMetrics m = scrape();
  EXPECT_EQ(m.value("lizard_run_queue_wait_seconds_count"), 2.0);
  EXPECT_EQ(m.value("lizard_runs_finished_total", {{"status", "failed"}}), 1.0);
  EXPECT_EQ(m.value("lizard_runs_finished_total", {{"status", "cancelled"}}), 1.0);
  EXPECT_EQ(m.families.count("lizard_program_compile_duration_seconds"), 0u);
  // Its record says how long it waited, as the dashboard shows it.
  EXPECT_TRUE(runs_->get_json(failed->id).value()["phases"].contains("queued_ms"));
}

TEST_F(ServerMetricsTest, IterationTimesSplitIntoKernelTransferAndFold) {
  metrics_->observe_iteration(10, 6, 1);
  metrics_->observe_iteration(2, 0.5, 0.25);
  ParsedMetrics m = scrape();
  const std::string h = "lizard_iteration_duration_seconds";
  EXPECT_EQ(m.value(h + "_count", {{"part", "total"}}), 2.0);
  EXPECT_NEAR(m.value(h + "_sum", {{"part", "total"}}).value_or(0), 0.012, 1e-12);
  EXPECT_NEAR(m.value(h + "_sum", {{"part", "kernel"}}).value_or(0), 0.0065, 1e-12);
  EXPECT_NEAR(m.value(h + "_sum", {{"part", "fold"}}).value_or(0), 0.00125, 1e-12);
  EXPECT_NEAR(m.value(h + "_sum", {{"part", "transfer"}}).value_or(0), 0.00425, 1e-12);
  // 2 ms lands in the 2.5 ms bucket, 10 ms in the 10 ms one.
  EXPECT_EQ(m.value(h + "_bucket", {{"part", "total"}, {"le", "0.001"}}), 0.0);
  EXPECT_EQ(m.value(h + "_bucket", {{"part", "total"}, {"le", "0.0025"}}), 1.0);
  EXPECT_EQ(m.value(h + "_bucket", {{"part", "total"}, {"le", "0.01"}}), 2.0);
}

TEST_F(ServerMetricsTest, CompilesCacheHitsBuildsAndBytes) {
  metrics_->count_run_ready(true, 0);
  metrics_->count_run_ready(false, 1500);
  metrics_->count_run_ready(false, 200, true);
  metrics_->count_program_build(true);
  metrics_->count_program_build(false);
  metrics_->count_program_build(true);
  auto inner = std::make_shared<NullLink>();
  auto link = metrics_->metered(inner);
  link->send(OutgoingFrame(std::string(100, 'x')));
  link->send(OutgoingFrame(std::string(10, 'h'), std::string_view("tail!"), nullptr));
  metrics_->count_bytes_from_workers(42);

  ParsedMetrics m = scrape();
  EXPECT_EQ(inner->frames, 2);
  EXPECT_EQ(link->peer(), "127.0.0.1:1");
  EXPECT_EQ(m.value("lizard_program_compile_cache_hits_total"), 1.0);
  EXPECT_EQ(m.value("lizard_program_compiles_total"), 2.0);
  EXPECT_EQ(m.value("lizard_runs_on_quick_builds_total"), 1.0);
  EXPECT_EQ(m.value("lizard_compile_duration_seconds_count", {{"cache", "hit"}}), 1.0);
  EXPECT_EQ(m.value("lizard_compile_duration_seconds_count", {{"cache", "miss"}}), 2.0);
  EXPECT_DOUBLE_EQ(m.value("lizard_compile_duration_seconds_sum", {{"cache", "miss"}}).value_or(0),
                   1.7);
  EXPECT_EQ(m.families["lizard_compile_duration_seconds"].type, "histogram");
  EXPECT_EQ(m.value("lizard_program_builds_total", {{"result", "ok"}}), 2.0);
  EXPECT_EQ(m.value("lizard_program_builds_total", {{"result", "failed"}}), 1.0);
  EXPECT_EQ(m.value("lizard_worker_sent_bytes_total"), 115.0);
  EXPECT_EQ(m.value("lizard_worker_received_bytes_total"), 42.0);
  EXPECT_EQ(m.families["lizard_worker_sent_bytes_total"].type, "counter");
}

// ---- GET /metrics and the request counts, through the routes ----------------

HttpResponse get(HttpRoutes& routes, const std::string& target, const std::string& token = "") {
  HttpRequest req;
  req.method = "GET";
  req.target = target;
  if (!token.empty()) req.headers["authorization"] = "Bearer " + token;
  HttpResponse got{0, "", ""};
  routes.handle(std::move(req), [&](HttpResponse r) { got = std::move(r); });
  return got;
}

TEST_F(ServerMetricsTest, TheRouteNeedsTheReadTokenWhenOneIsSet) {
  HttpRoutes routes({"write", "read"},
                    {nullptr, &workers_, runs_.get(), nullptr, nullptr, metrics_.get(), nullptr});
  EXPECT_EQ(get(routes, "/metrics").status, 401);
  EXPECT_EQ(get(routes, "/metrics", "wrong").status, 401);
  HttpResponse ok = get(routes, "/metrics", "read");
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(ok.content_type, "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_TRUE(parse_metrics_text(ok.body).ok());
  EXPECT_EQ(get(routes, "/metrics", "write").status, 200);
}

TEST_F(ServerMetricsTest, RequestsAreCountedByRouteTemplateAndStatus) {
  HttpRoutes routes({},
                    {nullptr, &workers_, runs_.get(), nullptr, nullptr, metrics_.get(), nullptr});
  get(routes, "/clients");
  get(routes, "/clients/w1");
  get(routes, "/clients/w2");
  get(routes, "/no/such/thing");
  auto m = parse_metrics_text(get(routes, "/metrics").body);
  ASSERT_TRUE(m.ok()) << m.status().message();
  const std::string c = "lizard_http_requests_total";
  EXPECT_EQ(m->value(c, {{"method", "GET"}, {"route", "/clients"}, {"code", "200"}}), 1.0);
  EXPECT_EQ(m->value(c, {{"method", "GET"}, {"route", "/clients/{id}"}, {"code", "404"}}), 2.0);
  EXPECT_EQ(m->value(c, {{"method", "GET"}, {"route", "other"}, {"code", "404"}}), 1.0);
  // The scrape itself is counted once it has been answered.
  EXPECT_FALSE(m->value(c, {{"route", "/metrics"}}).has_value());
  m = parse_metrics_text(get(routes, "/metrics").body);
  EXPECT_EQ(m->value(c, {{"route", "/metrics"}, {"code", "200"}}), 1.0);
}

}  // namespace
}  // namespace lizard
