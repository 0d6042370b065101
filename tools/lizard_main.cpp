// lizard: the cluster daemons, and the commands that run programs on them.
//   lizard server -v [--host 0.0.0.0] [--port 5000]      head node
//   lizard client -a HOST -p 5000 [-v]                   every GPU node
//   lizard run | runs | status | cancel | workers        (src/cli/user_commands.h)
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include "cli/user_commands.h"
#include "client/worker_daemon.h"
#include "common/auth.h"
#include "server/coordinator.h"
#include "server/hub_server.h"

namespace {

std::string default_dir(const char* xdg_var, const char* fallback) {
  if (const char* x = std::getenv(xdg_var); x && *x) return std::string(x) + "/lizard";
  if (const char* h = std::getenv("HOME"); h && *h)
    return std::string(h) + "/" + fallback + "/lizard";
  return "/tmp/lizard";
}

// Blocks SIGINT/SIGTERM in every thread and returns when one arrives.
void block_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
}

int wait_for_signal() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  int sig = 0;
  sigwait(&set, &sig);
  return sig;
}

struct ServerFlags {
  std::string host = "0.0.0.0";
  uint16_t port = 5000;
  std::string state_dir;
  int worker_wait = 60;
  int resume_wait = 15;
  int64_t keep_runs = 0;
  double keep_days = 0;
  int heartbeat = 10;
  int read_timeout = 30;
  uint64_t max_body = uint64_t{1} << 30;
  std::string token, read_token;
  bool no_worker_loop = false;
};

int run_server(const ServerFlags& f) {
  block_signals();
  lizard::CoordinatorOptions co;
  co.state_dir = f.state_dir;
  co.worker_wait_s = f.worker_wait;
  co.resume_wait_s = f.resume_wait;
  co.keep_runs = f.keep_runs;
  co.keep_days = f.keep_days;
  co.worker_loop = !f.no_worker_loop;
  co.token = lizard::token_from(f.token, "LIZARD_TOKEN");
  co.read_token = lizard::token_from(f.read_token, "LIZARD_READ_TOKEN");
  lizard::Coordinator coordinator(co);
  lizard::HubServerOptions ho;
  ho.host = f.host;
  ho.port = f.port;
  ho.heartbeat_timeout_s = f.heartbeat;
  ho.read_timeout_s = f.read_timeout;
  ho.max_body = f.max_body;
  lizard::HubServer hub(&coordinator, ho);
  if (auto st = hub.start(); !st.ok()) {
    spdlog::error("{}", st.message());
    return 1;
  }
  spdlog::info("lizard server listening on {}:{} (state in {})", f.host, hub.port(), f.state_dir);
  int sig = wait_for_signal();
  spdlog::info("signal {}: shutting down", sig);
  hub.stop();
  coordinator.shutdown();
  return 0;
}

int run_client(lizard::WorkerOptions opts, char** argv) {
  block_signals();
  lizard::WorkerDaemon daemon(opts);
  if (auto st = daemon.init(); !st.ok()) {
    spdlog::error("{}", st.message());
    return 1;
  }
  std::thread signals([&] {
    wait_for_signal();
    spdlog::info("shutting down");
    daemon.stop();
  });
  signals.detach();
  if (daemon.run()) {
    // A GPU context that keeps a fault is only cleared by a new process.
    execv("/proc/self/exe", argv);
    spdlog::error("cannot restart: {}", std::strerror(errno));
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"lizard: run CUDA programs across a cluster of GPU machines"};
  app.set_help_all_flag("--help-all", "Help for every subcommand");
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("lizard ") + LIZARD_VERSION);
  bool verbose = false;
  app.add_flag("-v,--verbose", verbose, "Debug logging");

  auto* server = app.add_subcommand("server", "Run the head node (REST API and worker hub)");
  ServerFlags sf;
  sf.state_dir = default_dir("XDG_STATE_HOME", ".local/state");
  server->add_flag("-v,--verbose", verbose, "Debug logging");
  server->add_option("--host", sf.host, "Address to listen on");
  server->add_option("--port", sf.port, "Port for users and workers");
  server->add_option("--state-dir", sf.state_dir,
                     "Where programs, run records and compiled hooks are kept");
  server->add_option("--worker-wait,--run-timeout", sf.worker_wait,
                     "Seconds a run waits for a worker with its program");
  server
      ->add_option("--resume-wait", sf.resume_wait,
                   "Seconds a run resumed after a restart waits for as many executors as it had")
      ->check(CLI::Range(0, 3600));
  server
      ->add_option("--keep-runs", sf.keep_runs,
                   "Keep the records of the newest N finished runs (0: all); older ones, their "
                   "fields and the uploads only they named are deleted")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  server
      ->add_option("--keep-days", sf.keep_days,
                   "Delete finished runs' records (and fields, and uploads only they named) "
                   "after D days (0: never)")
      ->check(CLI::Range(0.0, 1e6));
  server
      ->add_option("--heartbeat-timeout", sf.heartbeat,
                   "Seconds of silence after which a worker is dropped")
      ->check(CLI::Range(2, 3600));
  server
      ->add_option("--read-timeout", sf.read_timeout,
                   "Seconds within which a request must arrive whole (408)")
      ->check(CLI::Range(1, 86400));
  server->add_option("--max-body", sf.max_body, "Largest request body in bytes (413)");
  server->add_flag("--no-worker-loop", sf.no_worker_loop,
                   "Drive every iteration from the server, also for runs on one worker");
  server->add_option(
      "--token", sf.token,
      "Token required of workers and of POST/DELETE requests (default: $LIZARD_TOKEN)");
  server->add_option("--read-token", sf.read_token,
                     "Token required of GET requests too (default: $LIZARD_READ_TOKEN)");

  auto* client = app.add_subcommand("client", "Run a worker on this node");
  lizard::WorkerOptions wo;
  wo.backend.cache_dir = default_dir("XDG_CACHE_HOME", ".cache");
  client->add_flag("-v,--verbose", verbose, "Debug logging");
  client->add_option("-a,--address", wo.host, "Server host")->required();
  client->add_option("-p,--port", wo.port, "Server port");
  client->add_option("--backend", wo.backend.backend, "auto, cuda or cpu")
      ->check(CLI::IsMember({"auto", "cuda", "cpu"}));
  client->add_option("--gpus", wo.backend.gpus,
                     "Which GPUs: all, none (CPU backend), indices such as 0 or 0,2, count=N "
                     "(the first N), or auto:N (the N with the most free memory)");
  client->add_option("-i,--cuda-path", wo.backend.cuda_path, "CUDA toolkit directory (for NVRTC)");
  client->add_option("--cpu-threads", wo.backend.cpu_threads,
                     "CPU backend threads per executor (0: all cores)");
  client
      ->add_option("--cpu-executors", wo.backend.cpu_executors,
                   "Split the CPU backend into this many executors (default 1)")
      ->check(CLI::Range(1, 64));
  client->add_option("--cache-dir", wo.backend.cache_dir, "Where compiled kernels are cached");
  client->add_option("--weight", wo.weight,
                     "Report this capability weight (testing, uneven nodes)");
  client->add_option("--token", wo.token, "The server's token (default: $LIZARD_TOKEN)");
  client
      ->add_option("--server-timeout", wo.server_timeout_s,
                   "Seconds of silence after which the server counts as gone (reconnect)")
      ->check(CLI::Range(2, 3600));

  lizard::UserCommands user(&app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // help is not an error; a bad command line is 2
  }
  if (auto status = user.run()) return *status;
  spdlog::set_level(verbose ? spdlog::level::debug : spdlog::level::info);
  spdlog::set_pattern("%Y-%m-%d %H:%M:%S.%e %^%l%$ %v");
  wo.token = lizard::token_from(wo.token, "LIZARD_TOKEN");
  if (server->parsed()) return run_server(sf);
  return run_client(wo, argv);
}
