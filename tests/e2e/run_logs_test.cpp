// What a run prints, with real processes: a CPU kernel's printf on each
// iteration and a host hook's, on the server and on a worker that drives the
// loop, reach GET /runtimes/<id>/logs, `lizard logs` and `lizard run` tagged
// with the worker, the executor and the iteration; a run that prints past the bound
// keeps 1 MiB and says how much was cut; the worker stays up.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "cli_process.h"
#include "local_cluster.h"

namespace lizard {
namespace {

using nlohmann::json;

constexpr const char* kChatty = LIZARD_SOURCE_DIR "/tests/e2e/programs/chatty";

json body(int lines, int width, int iterations) {
  return {{"params", {{"lines", lines}, {"width", width}, {"iterations", iterations}}},
          {"dataset", {{"x", {{"values", std::vector<float>(1024, 0.5f)}}}}}};
}

// GET /runtimes/<id>/logs<query>: its status and body.
std::pair<int, std::string> logs_of(const LocalCluster& c, const std::string& id,
                                    const std::string& query = "") {
  auto r = c.get("/runtimes/" + id + "/logs" + query);
  if (!r.ok()) return {0, r.status().message()};
  return {r->status, r->body};
}

// The log once it holds `text` (lines sent at a run's end may come just
// after its record says it ended), or as it is after 10 s.
std::string logs_holding(const LocalCluster& c, const std::string& id, const std::string& text) {
  std::string got;
  for (int i = 0; i < 200; ++i) {
    got = logs_of(c, id).second;
    if (got.find(text) != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return got;
}

class RunLogs : public ::testing::Test {
 protected:
  // One worker; `server_args` such as --no-worker-loop (the hooks then run on the server).
  void start(const std::vector<std::string>& server_args) {
    ASSERT_TRUE(c_.start(1, {}, server_args).ok());
    chatty_ = register_program(c_, kChatty);
    ASSERT_FALSE(chatty_.empty());
    worker_ = get_json(c_, "/clients")[0]["id"];
  }
  std::string run(const json& b) {
    const std::string id = submit_run(c_, chatty_, b);
    EXPECT_FALSE(id.empty());
    EXPECT_EQ(wait_until_finished(c_, id, 60)["status"], "done");
    return id;
  }
  LocalCluster c_;
  std::string chatty_, worker_;
};

TEST_F(RunLogs, KernelAndServerHookLinesAreTaggedWithWorkerExecutorAndIteration) {
  start({"--no-worker-loop"});
  const std::string id = run(body(1, 0, 3));
  const std::string log = logs_holding(c_, id, "[server it 2] update after iteration 2");
  const std::string w = "[" + worker_ + " e0 it ";
  for (int it = 0; it < 3; ++it) {
    const std::string n = std::to_string(it);
    EXPECT_NE(log.find(w + n + "] hello from block 0 in iteration " + n + ", line 0\n"),
              std::string::npos)
        << log;
    EXPECT_NE(log.find("[server it " + n + "] update after iteration " + n + "\n"),
              std::string::npos)
        << log;
  }
  // Each iteration's kernel line comes before its update hook's.
  EXPECT_LT(log.find(w + "1]"), log.find("[server it 1]")) << log;

  auto [status, mine] = logs_of(c_, id, "?worker=" + worker_);
  EXPECT_EQ(status, 200);
  EXPECT_EQ(mine.find("[server"), std::string::npos) << mine;
  EXPECT_NE(mine.find(w + "2] hello"), std::string::npos) << mine;
  auto [server_status, server_lines] = logs_of(c_, id, "?worker=server");
  EXPECT_EQ(server_status, 200);
  EXPECT_EQ(server_lines.find("hello"), std::string::npos) << server_lines;
  EXPECT_NE(server_lines.find("[server it 0]"), std::string::npos) << server_lines;

  // The same lines from the command line, whole and for one worker.
  CliResult all = run_cli(c_, {"logs", id}, {}, 60);
  EXPECT_EQ(all.exit_code, 0) << all.err;
  EXPECT_EQ(all.out, log);
  CliResult one = run_cli(c_, {"logs", id, "--worker", worker_, "-f"}, {}, 60);
  EXPECT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(one.out, mine);
}

TEST_F(RunLogs, LizardRunShowsTheLinesAsTheRunPrintsThem) {
  start({"--no-worker-loop"});
  const std::string x = c_.dir() + "/x.txt";
  {
    std::ofstream f(x);
    for (int i = 0; i < 256; ++i) f << "0.5\n";
  }
  CliResult r = run_cli(c_, {"run", kChatty, "--param", "iterations=2", "--dataset", "x=" + x});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("[" + worker_ + " e0 it 1] hello from block 0 in iteration 1, line 0\n"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("[server it 1] update after iteration 1\n"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("hello"), std::string::npos) << r.out;  // the result stays apart
}

TEST_F(RunLogs, AWorkerThatDrivesTheLoopTagsItsHookLines) {
  start({});
  const std::string id = run(body(1, 0, 2));
  const std::string log = logs_holding(c_, id, "update after iteration 1");
  EXPECT_NE(log.find("[" + worker_ + " hook it 0] update after iteration 0\n"), std::string::npos)
      << log;
  EXPECT_NE(log.find("[" + worker_ + " e0 it 1] hello from block 0 in iteration 1"),
            std::string::npos)
      << log;
}

TEST_F(RunLogs, OutputPastTheBoundIsCutWithALineSayingHowMuch) {
  start({"--no-worker-loop"});
  // 2 iterations of 400 lines of about 2 KiB: 1.6 MiB from the one worker.
  const std::string id = run(body(400, 2000, 2));
  const std::string log = logs_holding(c_, id, "output cut: ");
  const std::string notice = "[" + worker_ + "] output cut: ";
  const size_t at = log.find(notice);
  ASSERT_NE(at, std::string::npos) << log.substr(0, 300);
  const std::string line = log.substr(at, log.find('\n', at) - at);
  EXPECT_NE(line.find("past the 1 MiB kept per run per worker"), std::string::npos) << line;
  size_t kept = 0;
  for (size_t p = log.find("[" + worker_ + " e0"); p != std::string::npos;
       p = log.find("[" + worker_ + " e0", p + 1))
    ++kept;
  EXPECT_GT(kept, 400u);
  EXPECT_LT(kept, 800u);
  EXPECT_LT(log.size(), size_t{1} << 21);
  // The worker is still there for the next run, which prints as before.
  const std::string next = run(body(1, 0, 1));
  EXPECT_NE(logs_holding(c_, next, "hello").find("hello from block 0"), std::string::npos);
}

TEST_F(RunLogs, UnknownRunsAndBadWorkersAreRefused) {
  start({});
  EXPECT_EQ(logs_of(c_, "r999").first, 404);
  const std::string id = run(body(1, 0, 1));
  auto [status, text] = logs_of(c_, id, "?worker=a%20b");
  EXPECT_EQ(status, 400) << text;
  CliResult r = run_cli(c_, {"logs", "r999"}, {}, 30);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("r999"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace lizard
