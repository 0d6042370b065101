// lizard: the cluster daemons, and the commands that run programs on them.
//   lizard server -v [--host 0.0.0.0] [--port 5000] [--tls-cert F --tls-key F]   head node
//   lizard client -a HOST -p 5000 [-v] [--tls [--tls-ca F]]                      every GPU node
//   lizard run | runs | status | cancel | workers        (src/cli/user_commands.h)
//   lizard hook-host LIB.so          internal: the server's hook process (hooks/hook_host.h)
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "cli/help_text.h"
#include "cli/user_commands.h"
#include "cli/users_command.h"
#include "client/worker_daemon.h"
#include "client_command.h"
#include "common/auth.h"
#include "exec/compiler_host.h"
#include "exec/host_compiler.h"
#include "exec/process/executor_host.h"
#include "hooks/hook_host.h"
#include "net/http_client.h"
#include "sandbox/sandbox.h"
#include "server/coordinator.h"
#include "server/hub_server.h"
#include "server/listen_address.h"

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
  std::string host;  // default: 127.0.0.1, or every address when a token is set
  uint16_t port = 5000;
  std::string state_dir;
  int worker_wait = 60;
  int resume_wait = 15;
  int64_t keep_runs = 0;
  double keep_days = 0;
  double run_timeout = 0;
  double load_timeout = 60;
  double iteration_timeout = 300;
  int fold_fan_in = 16;
  int heartbeat = 10;
  int read_timeout = 30;
  int hook_timeout = 60;
  int compile_timeout = 120;
  size_t idle_hook_processes = 16;
  uint64_t max_body = uint64_t{64} << 20;
  int large_bodies = 2;
  std::string token, read_token;
  std::string token_file, read_token_file;  // --token-file, --read-token-file
  std::string users_file;                   // --users
  std::vector<std::string> data_roots;
  uint64_t max_state_bytes = uint64_t{1} << 30;
  std::string tls_cert, tls_key;
  bool no_worker_loop = false;
  uint64_t build_store_mb = 1024;
};

// A daemon's token into `token` (lizard::daemon_token); false, having said
// why, when it cannot be had.
bool resolve_token(std::string* token, const std::string& file, const char* env, const char* flag) {
  auto t = lizard::daemon_token(*token, file, env, flag);
  if (!t.ok()) spdlog::error("{}", t.status().message());
  if (t.ok()) *token = std::move(t).value();
  return t.ok();
}

// Also says which pieces of user code's sandbox this machine gives.
void guard_daemon() {
  if (auto st = lizard::guard_daemon_process(); !st.ok()) spdlog::warn("{}", st.message());
  const lizard::SandboxReport sandbox = lizard::probe_sandbox();
  if (sandbox.disabled || !sandbox.missing.empty())
    spdlog::warn("user code's sandbox: {}", sandbox.summary());
  else
    spdlog::info("user code's sandbox: {}", sandbox.summary());
}

// The daemon's host compiler runs in compiler hosts (exec/compiler_host.h):
// a program's source compiles reading only the system's files and what
// lies beneath `root`.  They live as long as the daemon.
bool start_compiler_hosts(const std::string& root, int max_processes) {
  lizard::CompilerHostOptions ho;
  ho.root = root;
  ho.max_processes = max_processes;
  auto hosts = lizard::CompilerHosts::start(ho);
  if (!hosts.ok()) {
    spdlog::error("{}", hosts.status().message());
    return false;
  }
  static std::unique_ptr<lizard::CompilerHosts> kept;
  kept = std::move(hosts).value();
  lizard::HostCompiler::run_compiler_through(kept->runner());
  return true;
}

int run_server(ServerFlags f) {
  block_signals();
  lizard::CoordinatorOptions co;
  co.state_dir = f.state_dir;
  co.worker_wait_s = f.worker_wait;
  co.resume_wait_s = f.resume_wait;
  co.keep_runs = f.keep_runs;
  co.keep_days = f.keep_days;
  co.build_store_bytes = f.build_store_mb << 20;
  co.run_timeout_s = f.run_timeout;
  co.load_timeout_s = f.load_timeout;
  co.iteration_timeout_s = f.iteration_timeout;
  co.fold_fan_in = f.fold_fan_in;
  co.worker_loop = !f.no_worker_loop;
  co.hook_timeout_s = f.hook_timeout;
  co.compile_timeout_s = f.compile_timeout;
  co.idle_hook_processes = f.idle_hook_processes;
  if (!resolve_token(&f.token, f.token_file, "LIZARD_TOKEN", "--token") ||
      !resolve_token(&f.read_token, f.read_token_file, "LIZARD_READ_TOKEN", "--read-token"))
    return 2;
  co.token = f.token;
  co.read_token = f.read_token;
  if (!f.users_file.empty()) {
    auto users = lizard::UsersFile::open(f.users_file);
    if (!users.ok()) {
      spdlog::error("--users: {}", users.status().message());
      return 2;
    }
    co.users = std::move(users).value();
    spdlog::info("{} user(s) from {}; --token admits workers only",
                 co.users->current()->users().size(), f.users_file);
    if (!f.read_token.empty())
      spdlog::warn("--read-token is not used with --users: give readers their own tokens");
  }
  guard_daemon();
  if (!start_compiler_hosts((std::filesystem::path(f.state_dir) / "hooks").string(), 4)) return 1;
  co.max_state_bytes = f.max_state_bytes;
  auto roots = lizard::DataRoots::make(f.data_roots, "server");
  if (!roots.ok()) {
    spdlog::error("{}", roots.status().message());
    return 2;
  }
  co.data_roots = std::move(roots).value();
  if (!co.data_roots.confined())
    spdlog::info("no --data-root: run requests may name any file this user can read");
  const std::string host = lizard::listen_address(f.host, co.token);
  if (lizard::exposed_without_token(host, co.token))
    spdlog::warn(
        "listening on {} without a token: anyone who can reach this port can run code on this "
        "server and its workers; set --token (or LIZARD_TOKEN)",
        host);
  // The coordinator is destroyed before the hub: work it still holds may hold
  // a connection's answer, and a connection's sockets and timers belong to
  // the hub's io context.
  auto coordinator = std::make_unique<lizard::Coordinator>(co);
  lizard::HubServerOptions ho;
  ho.host = host;
  ho.port = f.port;
  ho.heartbeat_timeout_s = f.heartbeat;
  ho.read_timeout_s = f.read_timeout;
  ho.max_body = f.max_body;
  ho.large_bodies = f.large_bodies;
  ho.tls_cert_file = f.tls_cert;
  ho.tls_key_file = f.tls_key;
  lizard::HubServer hub(coordinator.get(), ho);
  if (auto st = hub.start(); !st.ok()) {
    spdlog::error("{}", st.message());
    return 1;
  }
  spdlog::info("lizard server listening on {}://{}:{} (state in {}){}",
               f.tls_cert.empty() ? "http" : "https", host, hub.port(), f.state_dir,
               f.host.empty() && host == "0.0.0.0"
                   ? ": every interface, as a token is set (--host 127.0.0.1 keeps it local)"
                   : "");
  int sig = wait_for_signal();
  spdlog::info("signal {}: shutting down", sig);
  // Requests still waiting (?wait=1) get their answer before the connections end.
  hub.stop_accepting();
  coordinator->shutdown();
  hub.stop();
  coordinator.reset();
  return 0;
}

// `lizard client -a` (or $LIZARD_ADDRESS): a host, host:port, or a URI
// (wss://head:5000) whose scheme and port win over --tls and -p.
lizard::Status resolve_server_address(lizard::WorkerOptions* opts) {
  const bool host_and_port = std::count(opts->host.begin(), opts->host.end(), ':') == 1;
  if (opts->host.find("://") == std::string::npos &&
      !host_and_port) {  // a host name or address, IPv6 too
    opts->tls.enabled = opts->tls.enabled || !opts->tls.ca_file.empty();
    return lizard::Status::Ok();
  }
  auto uri = lizard::parse_server_address(opts->host, opts->port, opts->tls);
  if (!uri.ok()) return uri.status();
  if (!uri->base_path.empty() && uri->base_path != "/hub" && uri->base_path != "/workers")
    return lizard::invalid_argument("-a " + opts->host + ": workers dial /hub, not " +
                                    uri->base_path);
  int port = 0;
  try {
    port = std::stoi(uri->port);
  } catch (const std::exception&) {
  }
  if (port <= 0 || port > 65535)
    return lizard::invalid_argument("-a " + opts->host + ": bad port '" + uri->port + "'");
  opts->host = uri->host;
  opts->port = static_cast<uint16_t>(port);
  opts->tls.enabled = uri->tls();
  return lizard::Status::Ok();
}

int run_client(lizard::WorkerOptions opts, const std::string& token_file, char** argv) {
  if (auto st = resolve_server_address(&opts); !st.ok()) {
    spdlog::error("{}", st.message());
    return 2;
  }
  if (!resolve_token(&opts.token, token_file, "LIZARD_TOKEN", "--token")) return 2;
  guard_daemon();
  block_signals();
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  if (!start_compiler_hosts(opts.backend.cache_dir, std::max(4, cores))) return 1;
  lizard::WorkerDaemon daemon(opts);
  if (auto st = daemon.init(); !st.ok()) {
    spdlog::error("{}", st.message());
    return 1;
  }
  // Ends before the daemon does: a signal that comes while the process exits
  // (a refused worker) finds no thread that logs or stops what is gone.
  std::atomic<bool> leaving{false};
  std::thread signals([&] {
    wait_for_signal();
    if (leaving) return;
    spdlog::info("shutting down");
    daemon.stop();
  });
  int status = 0;
  if (daemon.run()) {
    // A GPU context that keeps a fault is only cleared by a new process,
    // which takes its token as this one did.
    if (!opts.token.empty() && token_file.empty()) setenv("LIZARD_TOKEN", opts.token.c_str(), 1);
    execv("/proc/self/exe", argv);
    spdlog::error("cannot restart: {}", std::strerror(errno));
    status = 1;
  } else {
    status = daemon.refused().empty() ? 0 : 1;
  }
  leaving = true;
  ::kill(::getpid(), SIGTERM);  // wakes the signal thread (the signal is blocked everywhere)
  signals.join();
  return status;
}

}  // namespace

[[noreturn]] static void end_helper(int status) {
  std::fflush(nullptr);
  std::_Exit(status);
}

int main(int argc, char** argv) {
  // `lizard hook-host LIB.so`: the hook process a daemon starts for a
  // program's host.cpp (internal, not in the help).
  // Helper processes end without exit handlers or static destructors: those of
  // the user's code they loaded could crash or hang there.
  if (auto status = lizard::hook_host_command(argc, argv)) end_helper(*status);
  if (auto status = lizard::compiler_host_command(argc, argv)) end_helper(*status);
  CLI::App app{"lizard: run CUDA programs across a cluster of GPU machines"};
  app.option_defaults()->always_capture_default();  // help shows every default
  app.set_help_all_flag("--help-all", "Help for every subcommand");
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("lizard ") + LIZARD_VERSION);
  bool verbose = false;
  app.add_flag("-v,--verbose", verbose, "Debug logging");

  auto* server = app.add_subcommand("server", "Run the head node (REST API and worker hub)");
  ServerFlags sf;
  sf.state_dir = default_dir("XDG_STATE_HOME", ".local/state");
  server->add_flag("-v,--verbose", verbose, "Debug logging");
  server->add_option("--host", sf.host,
                     "Address to listen on (default: 127.0.0.1 without a token, else 0.0.0.0)");
  server->add_option("-p,--port", sf.port, "Port for users and workers")->type_name("PORT");
  server
      ->add_option("--state-dir", sf.state_dir,
                   "Where programs, run records and compiled hooks are kept")
      ->type_name("DIR");
  server
      ->add_option("--worker-wait", sf.worker_wait,
                   "Seconds a run waits for a worker with its program")
      ->type_name("SECONDS");
  server
      ->add_option("--resume-wait", sf.resume_wait,
                   "Seconds a run resumed after a restart waits for as many executors as it had")
      ->type_name("SECONDS")
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
      ->type_name("DAYS")
      ->check(CLI::Range(0.0, 1e6));
  server
      ->add_option("--build-store-mb", sf.build_store_mb,
                   "MiB of builds that workers offered kept under STATE_DIR/builds/ for the other "
                   "workers; the least recently used go first (0: keep none)")
      ->type_name("MIB")
      ->check(CLI::Range(uint64_t{0}, uint64_t{1} << 24));
  server
      ->add_option("--run-timeout,--run-timeout-s", sf.run_timeout,
                   "Seconds a run may run when its request sets no timeout_s (0: no limit; "
                   "--run-timeout-s is its former name)")
      ->type_name("SECONDS")
      ->check(CLI::NonNegativeNumber);
  server
      ->add_option("--load-timeout,--load-timeout-s", sf.load_timeout,
                   "Seconds a worker may take to load its rows of a run (plus 1 s per 50 MB of "
                   "them) before it is dropped from the run (0: no limit; --load-timeout-s is "
                   "another name for it)")
      ->type_name("SECONDS")
      ->check(CLI::NonNegativeNumber);
  server
      ->add_option("--iteration-timeout,--iteration-timeout-s", sf.iteration_timeout,
                   "Seconds a worker may take for one iteration (plus 10 times the run's slowest "
                   "iteration so far) before it is dropped from the run (0: no limit; "
                   "--iteration-timeout-s is another name for it)")
      ->type_name("SECONDS")
      ->check(CLI::NonNegativeNumber);
  server
      ->add_option("--fold-fan-in", sf.fold_fan_in,
                   "A run on more workers than this has them fold their results along a tree "
                   "in which no worker takes more than this many others' (those of one host "
                   "first), so that the server takes at most this many per iteration (0: the "
                   "server folds every worker's)")
      ->type_name("N")
      ->check(CLI::Range(0, 4096));
  server
      ->add_option("--heartbeat-timeout", sf.heartbeat,
                   "Seconds of silence after which a worker is dropped")
      ->type_name("SECONDS")
      ->check(CLI::Range(2, 3600));
  server
      ->add_option("--read-timeout", sf.read_timeout,
                   "Seconds within which a request must arrive whole (408)")
      ->type_name("SECONDS")
      ->check(CLI::Range(1, 86400));
  server
      ->add_option("--hook-timeout,--hook-timeout-s", sf.hook_timeout,
                   "Seconds one host hook call (or loading a host.cpp) may take before its "
                   "hook process is killed and the run fails (--hook-timeout-s is its former "
                   "name)")
      ->type_name("SECONDS")
      ->check(CLI::Range(1, 86400));
  server
      ->add_option("--compile-timeout", sf.compile_timeout,
                   "Seconds one compile of a program's host.cpp may take before the compiler is "
                   "killed and the registration fails (\"compile timed out\"); a registration "
                   "that waits longer than this for a build slot is answered 503")
      ->type_name("SECONDS")
      ->check(CLI::Range(1, 86400));
  server
      ->add_option("--idle-hook-processes", sf.idle_hook_processes,
                   "Hook processes kept idle for programs' next runs, all programs together "
                   "(at most 4 each); the one idle longest ends first, and a deleted program's "
                   "end with it")
      ->type_name("N")
      ->check(CLI::Range(0, 4096));
  server
      ->add_option("--max-body", sf.max_body,
                   "Largest JSON request body in bytes (413; uploads to /datasets are not capped)")
      ->type_name("BYTES");
  server
      ->add_option("--large-bodies", sf.large_bodies,
                   "JSON request bodies over 8 MiB held at once (each parses into many times its "
                   "size); one more is answered 503 before its body is read (0: no bound)")
      ->type_name("N")
      ->check(CLI::Range(0, 1024));
  server->add_flag("--no-worker-loop", sf.no_worker_loop,
                   "Drive every iteration from the server, also for runs on one worker");
  server
      ->add_option("--token", sf.token,
                   "Token required of workers and of POST/DELETE requests (default: $LIZARD_TOKEN)")
      ->type_name("TOKEN");
  server
      ->add_option("--read-token", sf.read_token,
                   "Token required of GET requests too (default: $LIZARD_READ_TOKEN)")
      ->type_name("TOKEN");
  server
      ->add_option("--token-file", sf.token_file,
                   "File holding the token, readable by this user alone (instead of --token, "
                   "which other users see in the process list)")
      ->type_name("FILE");
  server
      ->add_option("--read-token-file", sf.read_token_file,
                   "File holding the read token (instead of --read-token)")
      ->type_name("FILE");
  server
      ->add_option("--users", sf.users_file,
                   "Users file (`lizard users add NAME --users FILE`): each request's token names "
                   "its user, role and quota there, and --token admits workers only")
      ->type_name("FILE");
  server
      ->add_option("--data-root", sf.data_roots,
                   "Directory dataset paths in run requests must lie in (repeatable; "
                   "default: any file this user can read)")
      ->type_name("DIR");
  server
      ->add_option("--max-state-bytes", sf.max_state_bytes,
                   "Largest state + aggregate of one run, in bytes (413 beyond)")
      ->type_name("BYTES");
  auto* cert =
      server
          ->add_option(
              "--tls-cert", sf.tls_cert,
              "Serve the REST API and the worker hub over TLS (https://, wss://) with this PEM "
              "certificate chain")
          ->type_name("FILE");
  auto* key = server->add_option("--tls-key", sf.tls_key, "The PEM private key of --tls-cert")
                  ->type_name("FILE");
  cert->needs(key);
  key->needs(cert);

  lizard::WorkerOptions wo;
  std::string client_token_file;
  add_client_command(app, &wo, &client_token_file, &verbose);

  // The process a worker starts for each executor (exec/process/executor_host.h); not for users.
  auto* host = app.add_subcommand("executor-host", "");
  host->group("");
  lizard::BackendOptions ho;
  bool probe = false;
  host->add_option("--backend", ho.backend);
  host->add_option("--gpus", ho.gpus);
  host->add_option("--cuda-path", ho.cuda_path);
  host->add_option("--cpu-threads", ho.cpu_threads);
  host->add_option("--cpu-executors", ho.cpu_executors);
  host->add_option("--cpu-first-ordinal", ho.cpu_first_ordinal);
  host->add_option("--cache-dir", ho.cache_dir);
  host->add_option("--kept-rows-mb", ho.kept_rows_mb);
  host->add_option("--cpu-memory-mb", ho.cpu_memory_mb);
  host->add_option("--compile-cache-mb", ho.compile_cache_mb);
  host->add_option("--compile-timeout", ho.compile_timeout_s);
  add_on_off(host, "--quick-builds", ho.quick_builds, "");
  host->add_flag("--probe", probe);

  lizard::UserCommands user(&app);
  lizard::UsersCommand users(&app);
  lizard::tidy_help(&app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (auto hint = lizard::unknown_command_hint(app, argc, argv)) {
      std::fputs(hint->c_str(), stderr);
      return 2;
    }
    return app.exit(e) == 0 ? 0 : 2;  // help is not an error; a bad command line is 2
  }
  if (auto status = user.run()) return *status;
  if (auto status = users.run()) return *status;
  spdlog::set_level(verbose ? spdlog::level::debug : spdlog::level::info);
  // Log times are UTC, marked Z, like the run records; debug logs time the
  // steps of a request or a run: microseconds.
  spdlog::set_pattern(
      verbose ? "%Y-%m-%dT%H:%M:%S.%fZ %^%l%$ %v" : "%Y-%m-%dT%H:%M:%S.%eZ %^%l%$ %v",
      spdlog::pattern_time_type::utc);
  if (host->parsed()) end_helper(lizard::run_executor_host(ho, probe));
  if (server->parsed()) return run_server(sf);
  return run_client(wo, client_token_file, argv);
}
