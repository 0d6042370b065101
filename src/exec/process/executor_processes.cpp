#include "exec/process/executor_processes.h"

#include <nlohmann/json.hpp>

#include "common/child_process.h"
#include "common/parallel.h"
#include "exec/process/executor_protocol.h"

namespace lizard {

namespace {

constexpr int kProbeTimeoutMs = 120000;

}  // namespace

std::vector<std::string> executor_host_args(const BackendOptions& o) {
  std::vector<std::string> args{"executor-host",
                                "--backend",
                                o.backend,
                                "--gpus",
                                o.gpus,
                                "--cuda-path",
                                o.cuda_path,
                                "--cpu-threads",
                                std::to_string(o.cpu_threads),
                                "--cpu-executors",
                                std::to_string(o.cpu_executors),
                                "--cpu-first-ordinal",
                                std::to_string(o.cpu_first_ordinal),
                                "--kept-rows-mb",
                                std::to_string(o.kept_rows_mb),
                                "--cpu-memory-mb",
                                std::to_string(o.cpu_memory_mb),
                                "--compile-cache-mb",
                                std::to_string(o.compile_cache_mb),
                                "--compile-timeout",
                                std::to_string(o.compile_timeout_s),
                                "--quick-builds",
                                o.quick_builds ? "on" : "off"};
  if (!o.cache_dir.empty()) args.insert(args.end(), {"--cache-dir", o.cache_dir});
  return args;
}

Result<std::vector<std::unique_ptr<ProcessExecutor>>> start_executor_processes(
    const BackendOptions& options, std::string* note, const std::string& program) {
  if (options.backend != "auto" && options.backend != "cuda" && options.backend != "cpu")
    return invalid_argument("--backend must be auto, cuda or cpu (got '" + options.backend + "')");
  std::vector<std::string> args = executor_host_args(options);
  args.push_back("--probe");
  LIZARD_ASSIGN_OR_RETURN(auto probe, ChildProcess::spawn(args, program));
  const char op = static_cast<char>(ExecutorOp::kProbe);
  Status sent = probe->channel().send(std::string_view(&op, 1));
  auto frame = sent.ok() ? probe->channel().receive(kProbeTimeoutMs) : Result<std::string>(sent);
  if (!frame.ok()) {
    probe->kill();
    return unavailable("the executor probe process " + probe->exit_description() +
                       " without saying which executors to use");
  }
  probe->wait_exit(2000);
  ByteReader r(frame.value());
  bool lost = false;
  LIZARD_RETURN_IF_ERROR(read_reply_head(&r, &lost));
  auto j = nlohmann::json::parse(r.str(), nullptr, false);
  if (!r.ok() || !j.is_object() || !j["executors"].is_array())
    return internal_error("the executor probe process sent an unreadable answer");
  if (note && j.value("note", "") != "") *note = j["note"].get<std::string>();
  std::vector<ExecutorProcessSpec> specs;
  for (const auto& e : j["executors"]) {
    ExecutorInfo info = ExecutorInfo::from_json(e);
    BackendOptions one = options;
    ExecutorProcessSpec spec;
    if (info.kind == "cuda") {
      one.backend = "cuda";
      one.gpus = std::to_string(info.ordinal);
      spec.label = "GPU " + std::to_string(info.ordinal);
    } else {
      one.backend = "cpu";
      one.cpu_executors = 1;  // this one, of the worker's CPU executors
      one.cpu_first_ordinal = info.ordinal;
      spec.label = options.cpu_executors > 1 ? "CPU executor " + std::to_string(info.ordinal)
                                             : "the CPU backend";
    }
    spec.args = executor_host_args(one);
    spec.program = program;
    specs.push_back(std::move(spec));
  }
  std::vector<std::unique_ptr<ProcessExecutor>> out(specs.size());
  LIZARD_RETURN_IF_ERROR(first_error(for_each_parallel(specs.size(), [&](size_t i) -> Status {
    LIZARD_ASSIGN_OR_RETURN(out[i], ProcessExecutor::start(specs[i]));
    return Status::Ok();
  })));
  return out;
}

}  // namespace lizard
