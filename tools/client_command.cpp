#include "client_command.h"

#include <map>

#include "exec/compile_cache.h"
#include "exec/kept_rows_budget.h"

CLI::Option* add_on_off(CLI::App* app, const std::string& name, bool& value,
                        const std::string& help) {
  return app->add_option(name, value, help)
      ->transform(
          CLI::CheckedTransformer(std::map<std::string, bool>{{"on", true}, {"off", false}}))
      ->type_name("on|off")
      ->default_str(value ? "on" : "off");
}

CLI::App* add_client_command(CLI::App& app, lizard::WorkerOptions* wo, std::string* token_file,
                             bool* verbose) {
  CLI::App* client = app.add_subcommand("client", "Run a worker on this node");
  wo->backend.cache_dir = lizard::default_cache_root();
  client->add_flag("-v,--verbose", *verbose, "Debug logging");
  client
      ->add_option("-a,--address", wo->host,
                   "Server host, host:port, or ws(s)://host:port (default: $LIZARD_ADDRESS)")
      ->envname("LIZARD_ADDRESS")
      ->required();
  client->add_option("-p,--port", wo->port, "Server port")->type_name("PORT");
  client->add_flag("--tls", wo->tls.enabled,
                   "The server serves TLS (as a wss:// or https:// address says); its "
                   "certificate is verified");
  client
      ->add_option("--tls-ca", wo->tls.ca_file,
                   "PEM file of the CA that signed the server's certificate, instead of the "
                   "system's roots; implies --tls (default: $LIZARD_TLS_CA)")
      ->envname("LIZARD_TLS_CA");
  client->add_option("--backend", wo->backend.backend, "auto, cuda or cpu")
      ->check(CLI::IsMember({"auto", "cuda", "cpu"}));
  client->add_option("--gpus", wo->backend.gpus,
                     "Which GPUs: all, none (CPU backend), indices such as 0 or 0,2, count=N "
                     "(the first N), or auto:N (the N with the most free memory)");
  client->add_option("-i,--cuda-path", wo->backend.cuda_path, "CUDA toolkit directory (for NVRTC)");
  client->add_option("--cpu-threads", wo->backend.cpu_threads,
                     "CPU backend threads per executor (0: all cores)");
  client
      ->add_option("--cpu-executors", wo->backend.cpu_executors,
                   "Split the CPU backend into this many executors (default 1)")
      ->check(CLI::Range(1, 64));
  client
      ->add_option("--cache-dir", wo->backend.cache_dir,
                   "Where this host's compiled kernels (its kernels/, shared by every worker of "
                   "the host) and hooks are cached (default: /var/cache/lizard for root, else "
                   "$XDG_CACHE_HOME/lizard or ~/.cache/lizard)")
      ->type_name("DIR");
  client
      ->add_option("--cpu-memory-mb", wo->backend.cpu_memory_mb,
                   "Memory (heap and private mappings) each CPU executor process may take; a "
                   "kernel that allocates past it gets none and its run fails (MiB; default: "
                   "the machine's memory)")
      ->type_name("MIB")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  client
      ->add_option("--compile-cache-mb", wo->backend.compile_cache_mb,
                   "Bound of the compiled kernels' cache; least recently used ones are removed "
                   "beyond it (MiB)")
      ->type_name("MIB")
      ->check(CLI::Range(1, 1 << 30));
  client
      ->add_option("--compile-timeout", wo->backend.compile_timeout_s,
                   "Seconds one compile (a CPU-backend build, a host.cpp) or the loading of a "
                   "built kernel library may take before it is killed and the program's build "
                   "fails")
      ->type_name("SECONDS")
      ->check(CLI::Range(1, 86400));
  client
      ->add_option("--ahead-builds", wo->ahead_builds,
                   "Kernel builds for queued runs' specialised values that run at once, ahead "
                   "of the runs, at a lower CPU priority than a starting run's compile (0: none; "
                   "each run compiles when it begins; default: half the cores, at least 2)")
      ->type_name("N")
      ->check(CLI::Range(0, 64));
  client
      ->add_option("--build-fetch-timeout-ms", wo->build_fetch_timeout_ms,
                   "Longest wait for the server's answer when asking it for a build another "
                   "worker made, before compiling it here")
      ->type_name("MS")
      ->check(CLI::Range(1, 600000));
  client
      ->add_option("--fold-port", wo->fold_port,
                   "Port on which the workers below this one in a run's fold tree send it their "
                   "iteration results, to fold before the server does (0: a free one; -1: none, "
                   "and this worker's runs fold at the server); on every interface when a token "
                   "is set, else on 127.0.0.1")
      ->type_name("PORT")
      ->check(CLI::Range(-1, 65535));
  client
      ->add_option("--fold-tls-cert", wo->fold_tls_cert,
                   "With TLS to the server: the certificate (PEM) this worker's fold port "
                   "serves, for the address the server sees it connect from; the other workers "
                   "check it against --tls-ca. Without it such a worker takes no fold links")
      ->type_name("FILE");
  client->add_option("--fold-tls-key", wo->fold_tls_key, "The private key of --fold-tls-cert (PEM)")
      ->type_name("FILE");
  client->add_flag_callback(
      "--no-shared-builds", [wo] { wo->share_builds = false; },
      "Neither ask the server for builds other workers made nor offer it this worker's");
  add_on_off(
      client, "--quick-builds", wo->backend.quick_builds,
      "on: a GPU run whose kernels are not built for its values yet begins on a "
      "quick build (under half the compile, kernels within a few per cent) and switches to the "
      "optimised build between iterations once it has compiled; off: it waits for "
      "the optimised build");
  client
      ->add_option("--idle-hook-processes", wo->idle_hook_processes,
                   "Hook processes kept idle for programs' next runs, all programs together "
                   "(at most 4 each); the one idle longest ends first")
      ->type_name("N")
      ->check(CLI::Range(0, 4096));
  client
      ->add_option("--hook-timeout,--hook-timeout-s", wo->hook_timeout_s,
                   "Seconds the longest host hook call in a run this worker drives may take "
                   "(--hook-timeout-s is its former name)")
      ->type_name("SECONDS")
      ->check(CLI::Range(1, 86400));
  client
      ->add_option("--upload-cache-mb", wo->upload_cache_mb,
                   "Uploaded rows kept in memory for later runs over them (MiB; 0: none)")
      ->type_name("MIB");
  wo->backend.kept_rows_mb = lizard::kKeptRowsAuto;
  client
      ->add_option("--kept-rows-mb", wo->backend.kept_rows_mb,
                   "Rows of uploads and dataset files each executor keeps (on its GPU, or in "
                   "the CPU backend's memory) for later runs over them, so that they are not "
                   "sent or read again (MiB; 0: none; default: half a GPU's free memory, or a "
                   "quarter of the host's memory up to 2048; GPU memory a run needs is freed "
                   "from them first)")
      ->type_name("MIB");
  client->add_option("--weight", wo->weight,
                     "Report this capability weight (testing, uneven nodes)");
  client
      ->add_option("--token-file", *token_file,
                   "File holding the server's token, readable by this user alone (instead of "
                   "--token, which other users see in the process list)")
      ->type_name("FILE");
  client->add_option("--token", wo->token, "The server's token (default: $LIZARD_TOKEN)")
      ->type_name("TOKEN");
  client
      ->add_option("--data-root", wo->data_roots,
                   "Directory dataset paths a run names must lie in (repeatable; "
                   "default: any file this user can read)")
      ->type_name("DIR");
  client->add_flag("--retry-refused", wo->retry_refused,
                   "Keep trying when the server refuses this worker's token (by default the "
                   "worker stops with exit status 1 and says so)");
  client
      ->add_option("--server-timeout", wo->server_timeout_s,
                   "Seconds of silence after which the server counts as gone (reconnect)")
      ->type_name("SECONDS")
      ->check(CLI::Range(2, 3600));

  add_on_off(client, "--executor-processes", wo->executor_processes,
             "on: each executor (GPU, or the CPU backend) runs in a process of its own, so "
             "that a kernel that crashes or never ends costs that process, not the worker; "
             "off: in the worker itself (debugging)");
  client
      ->add_option("--owner-processes", wo->owner_processes,
                   "Executor processes each executor (GPU, or the CPU backend) keeps, one per "
                   "program: a program's kernels share a process, and a GPU context, only with "
                   "its own builds and kept rows; one more ends the one used longest ago that "
                   "serves no run, with its kept rows")
      ->type_name("N")
      ->check(CLI::Range(1, 256));
  return client;
}
