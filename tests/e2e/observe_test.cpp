// What operators watch: GET /metrics read by the exposition parser as a run
// goes through a real server and CPU workers, and the dashboard opened in
// headless Chromium.  The browser test is skipped, saying so, only where no
// Chromium is installed (scripts/bootstrap installs Debian's `chromium`).
//
// LIZARD_DASHBOARD_SCREENSHOTS=DIR keeps the browser test's screenshots in
// DIR (docs/images/ holds the ones docs/operations.md shows).
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "common/metrics_text.h"
#include "common/subprocess.h"
#include "local_cluster.h"

namespace lizard {
namespace {

using nlohmann::json;

ParsedMetrics scrape(const LocalCluster& c) {
  auto r = c.get("/metrics");
  EXPECT_TRUE(r.ok() && r->status == 200) << (r.ok() ? r->body : r.status().message());
  if (!r.ok()) return {};
  auto m = parse_metrics_text(r->body);
  EXPECT_TRUE(m.ok()) << m.status().message() << "\n" << r->body;
  return m.ok() ? m.value() : ParsedMetrics{};
}

std::string this_host() {
  char buf[256] = {};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

// The metrics label of the first worker's first executor: "<host>/gpu<ordinal>"
// on the CUDA backend, "<host>/cpu0" on the CPU backend.
std::string first_executor_label(const LocalCluster& c) {
  const json e = get_json(c, "/clients")[0]["hardware"]["executors"][0];
  const bool gpu = e.value("kind", "") == "cuda";
  return this_host() + (gpu ? "/gpu" + std::to_string(e.value("ordinal", 0)) : "/cpu0");
}

// k-means on generated blobs; with seed 2 it converges after 22 iterations.
json kmeans_body(int max_iterations, double threshold = 1e-4, int executors = 0) {
  const int k = 16;
  json init = json::array();
  for (int i = 0; i < k; ++i) init.push_back({0.3 * i, 0.2 * i});
  json body = {
      {"params",
       {{"k", k}, {"dims", 2}, {"max_iterations", max_iterations}, {"threshold", threshold}}},
      {"dataset", {{"points", {{"generate", "blobs"}, {"seed", 2}, {"rows", 50000}}}}},
      {"state", {{"centroids", init}}}};
  if (executors > 0) body["executors"] = executors;
  return body;
}

TEST(MetricsE2e, ValuesMoveWhenARunHappens) {
  LocalCluster c;
  ASSERT_TRUE(c.start(2).ok());
  const std::string hash = register_program(c, LIZARD_SOURCE_DIR "/examples/kmeans");
  ASSERT_FALSE(hash.empty());
  // Each worker has as many executors as its node has GPUs (or the CPU
  // backend's --cpu-executors), and the run uses them all.
  const size_t executors = executor_count(c);
  ParsedMetrics before = scrape(c);
  EXPECT_EQ(before.value("lizard_workers_connected"), 2.0);
  EXPECT_EQ(before.count("lizard_executor_info"), executors);
  EXPECT_EQ(before.value("lizard_runs_finished_total", {{"status", "done"}}).value_or(0), 0.0);
  EXPECT_EQ(before.value("lizard_runs", {{"status", "running"}}), 0.0);
  EXPECT_EQ(before.value("lizard_program_builds_total", {{"result", "ok"}}), 2.0);
  EXPECT_EQ(before.sum("lizard_iteration_duration_seconds_count"), 0.0);
  EXPECT_GT(
      before.value("lizard_executor_memory_total_bytes", {{"worker", first_executor_label(c)}})
          .value_or(0),
      0);

  auto r = c.post("/runtime/" + hash + "?wait=1", kmeans_body(6, -1).dump());
  ASSERT_TRUE(r.ok() && r->status == 200) << (r.ok() ? r->body : r.status().message());
  json rec = json::parse(r->body);
  ASSERT_EQ(rec["status"], "done") << rec.dump(2);
  ASSERT_EQ(rec["iterations"], 6);

  ParsedMetrics after = scrape(c);
  EXPECT_EQ(after.value("lizard_runs_finished_total", {{"status", "done"}}), 1.0);
  EXPECT_EQ(after.value("lizard_runs", {{"status", "running"}}), 0.0);
  EXPECT_EQ(after.value("lizard_run_queue_length"), 0.0);
  const std::string h = "lizard_iteration_duration_seconds";
  for (const char* part : {"total", "kernel", "transfer", "fold"})
    EXPECT_EQ(after.value(h + "_count", {{"part", part}}), 6.0) << part;
  double total_ms = 0;
  for (const auto& t : rec["timings"]) total_ms += t["ms"].get<double>();
  EXPECT_NEAR(after.value(h + "_sum", {{"part", "total"}}).value_or(0), total_ms / 1e3, 1e-9);
  // Every executor served the run, and each worker said how it got its binaries.
  EXPECT_EQ(after.sum("lizard_executor_runs_served_total"), static_cast<double>(executors));
  EXPECT_EQ(after.value("lizard_program_compiles_total").value_or(0) +
                after.value("lizard_program_compile_cache_hits_total").value_or(0),
            2.0);
  // Six iterations of state out and aggregates back, at least.
  EXPECT_GT(after.value("lizard_worker_sent_bytes_total").value_or(0),
            before.value("lizard_worker_sent_bytes_total").value_or(0) + 6 * 2 * 16 * 2 * 4);
  EXPECT_GT(after.value("lizard_worker_received_bytes_total").value_or(0),
            before.value("lizard_worker_received_bytes_total").value_or(0));
  EXPECT_EQ(after.value("lizard_http_requests_total",
                        {{"method", "POST"}, {"route", "/runtime/{hash}"}, {"code", "200"}}),
            1.0);
  EXPECT_EQ(after.value("lizard_http_requests_total",
                        {{"method", "GET"}, {"route", "/metrics"}, {"code", "200"}}),
            1.0);  // the first scrape
}

// A run on one worker folds and calls its update hook there: its record's
// fold_ms and the fold series are that time, not 0.  Finished runs are
// counted by status, with their running and queued times.
TEST(MetricsE2e, WorkerLoopFoldTimeAndFinishedRuns) {
  LocalCluster c;
  ASSERT_TRUE(c.start(1).ok());
  const std::string hash = register_program(c, LIZARD_SOURCE_DIR "/examples/kmeans");
  ASSERT_FALSE(hash.empty());
  auto r = c.post("/runtime/" + hash + "?wait=1", kmeans_body(8, -1).dump());
  ASSERT_TRUE(r.ok() && r->status == 200) << (r.ok() ? r->body : r.status().message());
  const json rec = json::parse(r->body);
  ASSERT_EQ(rec["status"], "done") << rec.dump(2);
  ASSERT_EQ(rec["phases"].value("worker_loop", false), true) << rec.dump(2);
  double fold_ms = 0;
  for (const auto& t : rec["timings"]) {
    EXPECT_GT(t["fold_ms"].get<double>(), 0.0) << t.dump();
    EXPECT_LE(t["fold_ms"].get<double>(), t["ms"].get<double>()) << t.dump();
    fold_ms += t["fold_ms"].get<double>();
  }
  const std::string h = "lizard_iteration_duration_seconds";
  const ParsedMetrics after_done = scrape(c);
  EXPECT_NEAR(after_done.value(h + "_sum", {{"part", "fold"}}).value_or(0), fold_ms / 1e3, 1e-6);
  EXPECT_GT(after_done.value(h + "_sum", {{"part", "fold"}}).value_or(0), 0.0);

  const std::string cancelled = submit_run(c, hash, kmeans_body(10000000, -1));
  ASSERT_FALSE(cancelled.empty());
  for (int i = 0; i < 500 && get_json(c, "/runtimes/" + cancelled)["iterations"] < 1; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(http_request("DELETE", c.uri() + "/runtimes/" + cancelled).ok());
  EXPECT_EQ(wait_until_finished(c, cancelled, 30)["status"], "cancelled");

  ParsedMetrics m = scrape(c);
  EXPECT_EQ(m.value("lizard_runs_finished_total", {{"status", "done"}}), 1.0);
  EXPECT_EQ(m.value("lizard_runs_finished_total", {{"status", "cancelled"}}), 1.0);
  EXPECT_EQ(m.value("lizard_run_duration_seconds_count", {{"status", "done"}}), 1.0);
  EXPECT_EQ(m.value("lizard_run_duration_seconds_count", {{"status", "cancelled"}}), 1.0);
  EXPECT_NEAR(m.value("lizard_run_duration_seconds_sum", {{"status", "done"}}).value_or(-1),
              rec["elapsed_ms"].get<double>() / 1e3, 1.0);
  EXPECT_EQ(m.value("lizard_run_queue_wait_seconds_count"), 2.0);
}

// A worker that restarts (a new join id) continues its executors' series:
// the worker label is the host and the device.
TEST(MetricsE2e, AWorkerThatRestartsKeepsItsSeries) {
  LocalCluster c;
  ASSERT_TRUE(c.start(1).ok());
  const std::string hash = register_program(c, LIZARD_SOURCE_DIR "/examples/kmeans");
  ASSERT_FALSE(hash.empty());
  auto r = c.post("/runtime/" + hash + "?wait=1", kmeans_body(2, -1).dump());
  ASSERT_TRUE(r.ok() && r->status == 200) << (r.ok() ? r->body : r.status().message());
  const std::string worker = first_executor_label(c);
  const std::string first_id = get_json(c, "/clients")[0]["id"];
  EXPECT_EQ(scrape(c).value("lizard_executor_runs_served_total", {{"worker", worker}}), 1.0);

  c.kill_worker(0, SIGKILL);
  for (int i = 0; i < 500 && !get_json(c, "/clients").empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(get_json(c, "/clients").empty());
  ASSERT_TRUE(c.add_worker().ok());
  ASSERT_TRUE(c.wait_for_workers(1).ok());
  ASSERT_NE(get_json(c, "/clients")[0]["id"], first_id);
  const ParsedMetrics m = scrape(c);
  EXPECT_EQ(m.value("lizard_executor_info", {{"worker", worker}, {"host", this_host()}}), 1.0);
  EXPECT_EQ(m.value("lizard_executor_runs_served_total", {{"worker", worker}}), 0.0);
  EXPECT_EQ(m.count("lizard_executor_info", {{"worker", first_id}}), 0u);
}

TEST(MetricsE2e, TheReadTokenGuardsThem) {
  LocalCluster c;
  c.set_token("reader");
  ASSERT_TRUE(
      c.start(1, {"--token", "writer"}, {"--token", "writer", "--read-token", "reader"}).ok());
  auto open = http_request("GET", c.uri() + "/metrics", "", "", 10);
  ASSERT_TRUE(open.ok());
  EXPECT_EQ(open->status, 401);
  EXPECT_EQ(json::parse(open->body)["error"], "missing token: send Authorization: Bearer <token>");
  EXPECT_EQ(scrape(c).value("lizard_workers_connected"), 1.0);
}

// ---- the dashboard in a browser ----------------------------------------------

// What Chromium sends when it opens a page.
constexpr const char* kBrowserAccept =
    "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8";

std::string find_chromium() {
  if (const char* e = std::getenv("LIZARD_CHROMIUM"); e && *e) return e;
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':'))
    for (const char* name :
         {"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"})
      if (access((dir + "/" + name).c_str(), X_OK) == 0) return dir + "/" + name;
  return "";
}

class DashboardInBrowser : public ::testing::Test {
 protected:
  void SetUp() override {
    chromium_ = find_chromium();
    if (chromium_.empty())
      GTEST_SKIP() << "no Chromium found (chromium, chromium-browser, google-chrome or "
                      "$LIZARD_CHROMIUM): the dashboard is not tested in a browser. "
                      "scripts/bootstrap installs Debian's chromium.";
    const char* keep = std::getenv("LIZARD_DASHBOARD_SCREENSHOTS");
    shots_ = keep && *keep ? keep : c_.dir();
    std::filesystem::create_directories(shots_);
  }

  // Chromium, headless, with no network beyond 127.0.0.1 (the page must not
  // need a CDN), run for a few seconds of page time; stderr is dropped.
  CommandOutput chromium(const std::vector<std::string>& args, const std::string& url) const {
    std::vector<std::string> argv = {"timeout",
                                     "90",
                                     "sh",
                                     "-c",
                                     "exec \"$0\" \"$@\" 2>/dev/null",
                                     chromium_,
                                     "--headless",
                                     "--no-sandbox",
                                     "--disable-gpu",
                                     "--disable-dev-shm-usage",
                                     "--no-first-run",
                                     "--hide-scrollbars",
                                     "--user-data-dir=" + c_.dir() + "/chromium",
                                     "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
                                     "--virtual-time-budget=6000"};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.push_back(url);
    auto r = run_command(argv);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? r.value() : CommandOutput{-1, ""};
  }

  std::string dom(const std::string& fragment) const {
    CommandOutput out = chromium({"--dump-dom"}, c_.uri() + "/" + fragment);
    EXPECT_EQ(out.exit_code, 0) << out.output;
    return out.output;
  }

  void screenshot(const std::string& fragment, const std::string& name, int height) const {
    const std::string path = shots_ + "/" + name;
    std::filesystem::remove(path);
    CommandOutput out =
        chromium({"--screenshot=" + path, "--window-size=1280," + std::to_string(height)},
                 c_.uri() + "/" + fragment);
    EXPECT_EQ(out.exit_code, 0) << out.output;
    std::ifstream f(path, std::ios::binary);
    std::string head(8, '\0');
    f.read(head.data(), 8);
    EXPECT_EQ(head, "\x89PNG\r\n\x1a\n") << "no screenshot at " << path;
  }

  std::string chromium_, shots_;
  LocalCluster c_;
};

// The values an SVG series carries, from data-<attr>="a,b,c".
std::vector<double> series(const std::string& page, const std::string& name,
                           const std::string& attr) {
  std::smatch m;
  const std::regex re("data-series=\"" + name + "\"[^>]*data-" + attr + "=\"([^\"]*)\"");
  if (!std::regex_search(page, m, re)) return {};
  std::vector<double> out;
  std::stringstream ss(m[1].str());
  std::string v;
  while (std::getline(ss, v, ',')) out.push_back(std::stod(v));
  return out;
}

TEST_F(DashboardInBrowser, ShowsTheWorkersTheFinishedRunAndItsPlot) {
  ASSERT_TRUE(c_.start(2).ok());
  const std::string hash = register_program(c_, LIZARD_SOURCE_DIR "/examples/kmeans");
  ASSERT_FALSE(hash.empty());
  auto r = c_.post("/runtime/" + hash + "?wait=1", kmeans_body(40).dump());
  ASSERT_TRUE(r.ok() && r->status == 200) << (r.ok() ? r->body : r.status().message());
  const json rec = json::parse(r->body);
  ASSERT_EQ(rec["status"], "done") << rec.dump(2);
  const std::string id = rec["runtime_id"];
  // A long run on one executor, and one that waits for all of them: running
  // and queued.
  const std::string running = submit_run(c_, hash, kmeans_body(10000000, -1, 1));
  ASSERT_FALSE(running.empty());
  for (int i = 0; i < 500 && get_json(c_, "/runtimes/" + running)["iterations"] < 3; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const auto all = static_cast<int>(executor_count(c_));
  const std::string queued = submit_run(c_, hash, kmeans_body(10, -1, all));
  ASSERT_FALSE(queued.empty());
  const json clients = get_json(c_, "/clients");

  const std::string overview = dom("");
  for (const auto& w : clients) {
    EXPECT_NE(overview.find("data-worker=\"" + w["id"].get<std::string>() + "\""),
              std::string::npos)
        << w["id"] << " is not shown:\n"
        << overview;
    EXPECT_NE(overview.find(w["hardware"]["executors"][0]["name"].get<std::string>()),
              std::string::npos);
  }
  EXPECT_NE(overview.find("data-run=\"" + id + "\" data-status=\"done\""), std::string::npos)
      << overview;
  EXPECT_NE(overview.find("data-run=\"" + running + "\" data-status=\"running\""),
            std::string::npos);
  EXPECT_NE(overview.find("data-cancel=\"" + running + "\""), std::string::npos)
      << "no cancel button for a running run on a server without tokens";
  const size_t queue = overview.find("id=\"queue\"");
  ASSERT_NE(queue, std::string::npos);
  EXPECT_NE(overview.find("data-run=\"" + queued + "\" data-status=\"queued\"", queue),
            std::string::npos)
      << "the queued run is not in the queue section";
  screenshot("", "dashboard-overview.png", 900);

  const std::string page = dom("#/runs/" + id);
  EXPECT_NE(page.find("class=\"run\" data-run=\"" + id + "\" data-status=\"done\""),
            std::string::npos)
      << page;
  std::vector<double> shift, iterations, ms;
  for (const auto& t : rec["timings"]) {
    iterations.push_back(t["iteration"].get<double>());
    shift.push_back(t["state"]["shift"].get<double>());
    ms.push_back(t["ms"].get<double>());
  }
  ASSERT_EQ(shift.size(), 22u) << "seed 2 no longer converges after 22 iterations";
  EXPECT_EQ(series(page, "shift", "values"), shift) << page;
  EXPECT_EQ(series(page, "shift", "iterations"), iterations);
  EXPECT_EQ(series(page, "ms", "values"), ms);
  for (const auto& [name, path] : rec["fields"].items())
    EXPECT_NE(page.find("href=\"" + path.get<std::string>().substr(1) + "\""), std::string::npos)
        << "no download link for " << name;
  EXPECT_EQ(page.find("data-cancel="), std::string::npos) << "a cancel button on a finished run";
  screenshot("#/runs/" + id, "dashboard-run.png", 1100);

  for (const std::string& run : {running, queued}) {
    auto cancelled = http_request("DELETE", c_.uri() + "/runtimes/" + run);
    EXPECT_TRUE(cancelled.ok() && cancelled->status == 202);
  }
}

// A running run's elapsed time is live, not "–"; a failed run says why in
// the list; counts are grouped by thousands.
TEST_F(DashboardInBrowser, RunningTimesFailureReasonsAndReadableCounts) {
  ASSERT_TRUE(c_.start(1).ok());
  const std::string hash = register_program(c_, LIZARD_SOURCE_DIR "/examples/kmeans");
  ASSERT_FALSE(hash.empty());
  const std::string failed = submit_run(c_, hash, kmeans_body(10, -1, 9));
  ASSERT_FALSE(failed.empty());
  const json failed_rec = wait_until_finished(c_, failed, 30);
  ASSERT_EQ(failed_rec["status"], "failed") << failed_rec.dump(2);
  const std::string running = submit_run(c_, hash, kmeans_body(10000000, -1, 1));
  ASSERT_FALSE(running.empty());
  for (int i = 0; i < 500 && get_json(c_, "/runtimes/" + running)["iterations"] < 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));

  const std::string overview = dom("");
  std::smatch m;
  ASSERT_TRUE(
      std::regex_search(overview, m, std::regex("data-elapsed=\"" + running + "\"[^>]*>([^<]*)<")))
      << overview;
  EXPECT_TRUE(std::regex_match(m[1].str(), std::regex("[0-9.]+ (ms|s|min)"))) << m[1];
  ASSERT_TRUE(
      std::regex_search(overview, m, std::regex("data-error=\"" + failed + "\"[^>]*>([^<]*)<")))
      << overview;
  EXPECT_EQ(m[1].str(), failed_rec["error"].get<std::string>());
  EXPECT_NE(m[1].str().find("needs 9 executor(s)"), std::string::npos) << m[1];
  EXPECT_NE(overview.find("updated "), std::string::npos);
  EXPECT_TRUE(std::regex_search(overview, std::regex("updated [0-9]{2}:[0-9]{2}:[0-9]{2} UTC")))
      << "the header's time is not UTC";

  // The page as a browser first receives it, before its script runs, shows
  // the cluster rather than "Loading".
  auto first =
      run_command({"curl", "-sS", "-H", "Accept: " + std::string(kBrowserAccept), c_.uri() + "/"});
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_EQ(first->output.find("Loading"), std::string::npos) << first->output;
  EXPECT_TRUE(std::regex_search(
      first->output, std::regex("id=\"first-view\">1 worker \\([0-9]+ executors?\\) · runs: 1 "
                                "running, 0 queued, 1 finished · as of [-0-9]+ [:0-9]+ UTC<")))
      << first->output;

  // A run that failed in the queue never ran: its page says how long it
  // waited there (its record's phases.queued_ms), and that it has no fields
  // (not that they come once it is done).
  ASSERT_TRUE(failed_rec["phases"].contains("queued_ms")) << failed_rec.dump(2);
  const std::string failed_page = dom("#/runs/" + failed);
  EXPECT_NE(failed_page.find(" in the queue)"), std::string::npos) << failed_page;
  EXPECT_NE(failed_page.find("A failed run has no fields."), std::string::npos) << failed_page;
  EXPECT_EQ(failed_page.find("once the run is done"), std::string::npos) << failed_page;

  const std::string page = dom("#/runs/" + running);
  EXPECT_NE(page.find("50,000"), std::string::npos) << "rows are not grouped:\n" << page;
  EXPECT_NE(page.find("running for"), std::string::npos) << page;
  auto cancelled = http_request("DELETE", c_.uri() + "/runtimes/" + running);
  EXPECT_TRUE(cancelled.ok() && cancelled->status == 202);
}

// A run that lost a worker lists the recovery on its page, in the words
// `lizard run` prints (tests/e2e/programs/tally: integers, an exact total).
TEST_F(DashboardInBrowser, ARunsPageListsItsRecoveries) {
  ASSERT_TRUE(c_.start(2, {"--cpu-threads", "1"}).ok());
  const std::string hash = register_program(c_, LIZARD_SOURCE_DIR "/tests/e2e/programs/tally");
  ASSERT_FALSE(hash.empty());
  std::vector<int64_t> x(200000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<int64_t>(i % 1000);
  const std::string id =
      submit_run(c_, hash,
                 {{"params", {{"max_iterations", 30}, {"spin", 400}, {"pause_ms", 60}}},
                  {"dataset", {{"x", {{"values", x}}}}}});
  ASSERT_FALSE(id.empty());
  for (int i = 0; i < 1200 && get_json(c_, "/runtimes/" + id)["iterations"] < 3; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  c_.kill_worker(1, SIGKILL);
  const json rec = wait_until_finished(c_, id, 240);
  ASSERT_EQ(rec["status"], "done") << rec.dump(2);
  ASSERT_TRUE(rec.contains("recoveries")) << "the kill came too late to test recovery";
  const json& r = rec["recoveries"][0];
  const std::string at = std::to_string(r["lost_at_iteration"].get<int64_t>());
  const std::string line = "worker " + r["workers_lost"][0].get<std::string>() +
                           " lost at iteration " + at + ": re-planned over 1 worker, resuming at " +
                           at;
  const std::string page = dom("#/runs/" + id);
  EXPECT_NE(page.find("data-recovery=\"0\""), std::string::npos) << page;
  EXPECT_NE(page.find(line), std::string::npos) << "no `" << line << "` in:\n" << page;
}

// With a write token on the server and none in the browser, the page reads
// (reads are open) but offers no cancel button.
TEST_F(DashboardInBrowser, NoCancelButtonWithoutTheWriteToken) {
  LocalCluster guarded;
  guarded.set_token("writer");
  ASSERT_TRUE(guarded.start(1, {"--token", "writer"}, {"--token", "writer"}).ok());
  const std::string hash = register_program(guarded, LIZARD_SOURCE_DIR "/examples/kmeans");
  ASSERT_FALSE(hash.empty());
  const std::string running = submit_run(guarded, hash, kmeans_body(10000000, -1, 1));
  ASSERT_FALSE(running.empty());
  for (int i = 0; i < 500 && get_json(guarded, "/runtimes/" + running)["status"] != "running"; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CommandOutput out = chromium({"--dump-dom"}, guarded.uri() + "/");
  EXPECT_NE(out.output.find("data-run=\"" + running + "\" data-status=\"running\""),
            std::string::npos)
      << out.output;
  EXPECT_EQ(out.output.find("data-cancel="), std::string::npos);
  auto cancelled =
      http_request("DELETE", guarded.uri() + "/runtimes/" + running, "", "", 10, "writer");
  EXPECT_TRUE(cancelled.ok() && cancelled->status == 202);
}

}  // namespace
}  // namespace lizard
