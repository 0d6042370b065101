#include "cli/user_commands.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <optional>

#include "cli/cluster_views.h"
#include "cli/dataset_views.h"
#include "cli/program_loader.h"
#include "cli/run_command.h"
#include "cli/run_logs_command.h"
#include "common/auth.h"

namespace lizard {

using nlohmann::json;

namespace {

struct ServerFlags {
  std::string address = "127.0.0.1";
  uint16_t port = 5000;
  std::string token;
  TlsClientOptions tls;
};

void add_server_flags(CLI::App* sub, ServerFlags* f) {
  sub->add_option("-a,--address", f->address,
                  "Server host, host:port, http://host:port or https://host:port (default: "
                  "$LIZARD_ADDRESS, else 127.0.0.1)")
      ->envname("LIZARD_ADDRESS");
  sub->add_option("-p,--port", f->port, "Server port (default 5000)")->type_name("PORT");
  sub->add_option("--token", f->token, "The server's token (default: $LIZARD_TOKEN)")
      ->type_name("TOKEN");
  sub->add_flag("--tls", f->tls.enabled,
                "The server serves TLS (as an https:// address says); its certificate is "
                "verified");
  sub->add_option("--tls-ca", f->tls.ca_file,
                  "PEM file of the CA that signed the server's certificate, instead of the "
                  "system's roots; implies --tls (default: $LIZARD_TLS_CA)")
      ->envname("LIZARD_TLS_CA");
}

// One value per occurrence: `--param a=1 --param b=2 PROGRAM`.
CLI::Option* add_repeated(CLI::App* sub, const std::string& name, std::vector<std::string>* v,
                          const std::string& help) {
  return sub->add_option(name, *v, help)->allow_extra_args(false);
}

int usage_error(const std::string& command, const Status& s) {
  std::cerr << "lizard " << command << ": " << s.message() << "\n";
  return 2;
}

int server_error(const Status& s) {
  std::cerr << "lizard: " << s.message() << "\n";
  return 1;
}

Console console() {
  return Console{&std::cout, &std::cerr, isatty(STDERR_FILENO) != 0};
}

}  // namespace

struct UserCommands::Impl {
  ServerFlags server;
  CLI::App* run = nullptr;
  CLI::App* runs = nullptr;
  CLI::App* status = nullptr;
  CLI::App* cancel = nullptr;
  CLI::App* logs = nullptr;
  CLI::App* workers = nullptr;
  CLI::App* datasets_cmd = nullptr;
  CLI::App* datasets_rm = nullptr;
  CLI::App* stage = nullptr;
  CLI::App* upload = nullptr;

  // lizard run
  RunOptions run_options;
  std::vector<std::string> params, datasets, states;
  std::string executors;
  int64_t max_iterations = 0;
  std::optional<uint64_t> seed;
  bool by_path = false, upload_files = false;
  // lizard runs / status / cancel / workers
  std::string status_filter;
  std::string owner_filter;  // lizard runs --user
  bool all_users = false;    // lizard runs --all
  std::vector<std::string> ids;
  bool wait = false;
  bool json_out = false;
  FollowOptions follow;
  LogsOptions logs_options;
  // lizard datasets [rm] / stage
  std::string target;                // stage's file
  std::vector<std::string> targets;  // datasets rm's upload ids or paths
  int64_t stage_executors = 0, stage_width = 0;
  std::string stage_format, stage_dtype, stage_program;
  // lizard upload
  std::string upload_file, upload_format;

  void add_run(CLI::App* app);
  void add_others(CLI::App* app);
  Result<ServerApi> api() const {
    return ServerApi::connect(server.address, server.port, token_from(server.token, "LIZARD_TOKEN"),
                              server.tls);
  }
  Status build_spec();
  int do_run();
  int do_runs() const;
  int do_status();
  int do_cancel() const;
  int do_logs() const;
  int do_workers() const;
  void add_datasets(CLI::App* app);
  int do_datasets() const;
  int do_datasets_rm() const;
  int remove_dataset(const ServerApi& a, const std::string& target) const;
  int do_stage() const;
  int do_upload() const;
};

void UserCommands::Impl::add_run(CLI::App* app) {
  run = app->add_subcommand("run", "Run a program on the cluster and wait for its result");
  run->add_option("program", run_options.program,
                  "A program directory (registered now) or a registered program's checksum")
      ->required();
  add_repeated(run, "--param", &params, "NAME=VALUE, e.g. --param k=4 (repeat for each)");
  add_repeated(run, "--dataset", &datasets,
               "NAME=FILE: a .npy, .raw, .csv or text file for an input field (FORMAT:FILE "
               "names the format: npy, raw, csv, text, lizard; FILE alone when there is one "
               "input field); NAME=upload:ID an upload already on the server (lizard upload); "
               "NAME=generate:KERNEL[,rows=N][,seed=S] rows made on the workers by the "
               "program's generator kernel (NAME1,NAME2=generate:... for one that fills several "
               "fields)");
  add_repeated(run, "--state", &states,
               "NAME=VALUES: a file (.npy or numbers), JSON such as [[0,0],[1,1]], or 1,2,3");
  auto* by_path_flag = run->add_flag(
      "--shared-path", by_path,
      "Pass dataset files by path without asking (every node must read them there); by "
      "default a file goes by path when the server and every worker read the same file "
      "there, and is uploaded otherwise");
  run->add_flag("--upload", upload_files, "Upload dataset files even where every node reads them")
      ->excludes(by_path_flag);
  run->add_option("--max-iterations", max_iterations,
                  "Stop after this many iterations (default: the program's own cap)")
      ->check(CLI::PositiveNumber);
  run->add_option("--seed", seed,
                  "The run's seed, which kernels see as data.run_seed (default: drawn at random)");
  run->add_option("--executors", executors,
                  "Executors for the run: N, MIN:MAX or MIN: (default: every free one)");
  run->add_option("--out", run_options.follow.out_dir,
                  "Write the result's state, aggregate and output fields here as .npy");
  run->add_flag("--detach", run_options.detach, "Print the run id once queued and exit");
  run->add_flag("--json", run_options.follow.json, "Print the final run record as JSON");
  run->add_flag("-q,--quiet", run_options.follow.quiet, "No progress or notes on stderr");
  run->add_flag("--keep-uploads", run_options.keep_uploads,
                "Leave uploaded datasets on the server after the run");
  run->add_option("--build-timeout", run_options.build_timeout_s,
                  "Seconds to wait for the workers to build a program directory")
      ->type_name("SECONDS");
  run->add_option("--server-wait", run_options.server_wait_s,
                  "Seconds to wait for a server that is still starting (refusing connections)")
      ->type_name("SECONDS")
      ->check(CLI::NonNegativeNumber);
  add_server_flags(run, &server);
}

void UserCommands::Impl::add_others(CLI::App* app) {
  runs = app->add_subcommand("runs", "List the server's runs");
  runs->add_option("--status", status_filter, "Only runs in this state")
      ->check(CLI::IsMember({"queued", "running", "done", "failed", "cancelled"}));
  runs->add_option("--user", owner_filter,
                   "Only this user's runs (a user sees their own by default)")
      ->type_name("NAME");
  runs->add_flag("--all", all_users, "Every user's runs");
  runs->add_flag("--json", json_out, "Print the server's JSON");
  add_server_flags(runs, &server);

  status = app->add_subcommand("status", "Show one run");
  status->add_option("id", ids, "The run's id, e.g. r3")->required()->expected(1);
  status->add_flag("--wait", wait, "Follow the run until it ends (exit status 0 when done)");
  status->add_option("--out", follow.out_dir, "Write the fields of the finished run here as .npy");
  status->add_flag("--json", follow.json, "Print the run record as JSON");
  status->add_flag("-q,--quiet", follow.quiet, "With --wait: no progress on stderr");
  add_server_flags(status, &server);

  logs = app->add_subcommand("logs", "Show what a run's kernels and host hooks printed");
  logs->add_option("id", logs_options.run_id, "The run's id, e.g. r3")->required();
  logs->add_option("--worker", logs_options.worker,
                   "Only this worker's lines (its id, as `lizard workers` shows it), or `server` "
                   "for the server's host hooks")
      ->type_name("ID");
  logs->add_flag("-f,--follow", logs_options.follow,
                 "Print new lines as they come, until the run ends");
  add_server_flags(logs, &server);

  cancel = app->add_subcommand("cancel", "Cancel queued or running runs");
  cancel->add_option("ids", ids, "Run ids")->required();
  add_server_flags(cancel, &server);

  workers = app->add_subcommand("workers", "List the connected workers, GPUs and programs built");
  workers->add_flag("--json", json_out, "Print the server's JSON (GET /clients)");
  add_server_flags(workers, &server);
}

Status UserCommands::Impl::build_spec() {
  RunArgs& spec = run_options.spec;
  for (const auto& p : params) LIZARD_RETURN_IF_ERROR(add_param(&spec, p));
  for (const auto& d : datasets) LIZARD_RETURN_IF_ERROR(add_dataset(&spec, d));
  for (const auto& s : states) LIZARD_RETURN_IF_ERROR(add_state(&spec, s));
  if (!executors.empty()) {
    LIZARD_ASSIGN_OR_RETURN(spec.executors, parse_executors_arg(executors));
  }
  if (max_iterations > 0) spec.max_iterations = max_iterations;
  spec.seed = seed;
  run_options.files = by_path        ? FileDelivery::kPath
                      : upload_files ? FileDelivery::kUpload
                                     : FileDelivery::kChoose;
  return Status::Ok();
}

int UserCommands::Impl::do_run() {
  if (Status s = build_spec(); !s.ok()) return usage_error("run", s);
  auto a = api();
  if (!a.ok()) return usage_error("run", a.status());
  return run_program(*a, run_options, console());
}

int UserCommands::Impl::do_runs() const {
  auto a = api();
  if (!a.ok()) return usage_error("runs", a.status());
  // A user sees their own runs unless they ask for everyone's (--all) or
  // one user's (--user); an admin or a reader, everyone's.
  std::string user = owner_filter;
  if (user.empty() && !all_users) {
    auto me = a->get("/");
    if (me.ok() && me->value("role", "") == "user") user = me->value("user", "");
  }
  std::string query = status_filter.empty() ? "" : "status=" + status_filter;
  if (!user.empty()) query += (query.empty() ? "" : "&") + std::string("user=") + user;
  auto list = a->get(query.empty() ? "/runtimes" : "/runtimes?" + query);
  if (!list.ok()) return server_error(list.status());
  std::cout << (json_out ? list->dump(2) + "\n" : runs_table(*list));
  return 0;
}

int UserCommands::Impl::do_status() {
  auto a = api();
  if (!a.ok()) return usage_error("status", a.status());
  const std::string id = ids.front();
  if (wait) return follow_run(*a, id, follow, console());
  auto record = a->get("/runtimes/" + id);
  if (!record.ok()) return server_error(record.status());
  if (!follow.out_dir.empty()) {
    if (record->value("status", "") != "done")
      return server_error(invalid_argument(id + " is " + record->value("status", "") +
                                           ": only a done run has fields (--wait waits for it)"));
    if (Status s = write_fields(*a, *record, follow.out_dir, &std::cerr); !s.ok())
      return server_error(s);
  }
  std::cout << (follow.json ? record->dump(2) + "\n" : run_summary(*record));
  return 0;
}

int UserCommands::Impl::do_cancel() const {
  auto a = api();
  if (!a.ok()) return usage_error("cancel", a.status());
  int exit_status = 0;
  for (const auto& id : ids) {
    auto answer = a->del("/runtimes/" + id);
    if (!answer.ok()) {
      exit_status = server_error(answer.status());
      continue;
    }
    std::cout << id << " " << answer->value("status", "") << "\n";
  }
  return exit_status;
}

int UserCommands::Impl::do_logs() const {
  auto a = api();
  if (!a.ok()) return usage_error("logs", a.status());
  return show_run_logs(*a, logs_options, &std::cout, &std::cerr);
}

int UserCommands::Impl::do_workers() const {
  auto a = api();
  if (!a.ok()) return usage_error("workers", a.status());
  auto clients = a->get("/clients");
  if (!clients.ok()) return server_error(clients.status());
  if (json_out) {
    std::cout << clients->dump(2) << "\n";
    return 0;
  }
  auto programs = a->get("/programs");
  if (!programs.ok()) return server_error(programs.status());
  std::cout << workers_view(*clients, *programs);
  return 0;
}

void UserCommands::Impl::add_datasets(CLI::App* app) {
  datasets_cmd =
      app->add_subcommand("datasets", "List the uploads and the rows workers keep for later runs");
  datasets_cmd->add_flag("--json", json_out, "Print the server's JSON (GET /datasets)");
  add_server_flags(datasets_cmd, &server);
  datasets_rm = datasets_cmd->add_subcommand(
      "rm", "Delete uploads and drop their kept rows, or drop the kept rows of paths");
  datasets_rm->add_option("targets", targets, "Upload ids, or paths as runs named them")
      ->required();
  add_server_flags(datasets_rm, &server);

  stage = app->add_subcommand("stage", "Load a file's rows onto executors before any run");
  stage->add_option("file", target, "An .npy or raw file, as the server sees it")->required();
  stage
      ->add_option("--program", stage_program,
                   "The program whose runs will read the rows: a directory (registered now) or "
                   "a registered program's checksum; its executor processes keep them")
      ->required();
  stage->add_option("--executors", stage_executors, "How many executors (default: every free one)")
      ->check(CLI::PositiveNumber);
  stage->add_option("--format", stage_format, "npy or raw (default: from the extension)")
      ->check(CLI::IsMember({"npy", "raw"}));
  stage->add_option("--dtype", stage_dtype, "A raw file's element type, e.g. float32");
  stage->add_option("--width", stage_width, "A raw file's values per row")
      ->check(CLI::PositiveNumber);
  stage->add_flag("--json", json_out, "Print the server's JSON");
  add_server_flags(stage, &server);

  upload = app->add_subcommand(
      "upload", "Send an .npy or raw file to the server once, for any number of runs");
  upload->add_option("file", upload_file, "The file, streamed as it is")->required();
  upload->add_option("--format", upload_format, "npy or raw (default: from the extension)")
      ->check(CLI::IsMember({"npy", "raw"}));
  upload->add_flag("--json", json_out, "Print the server's JSON (POST /datasets)");
  add_server_flags(upload, &server);
}

int UserCommands::Impl::do_datasets() const {
  auto a = api();
  if (!a.ok()) return usage_error("datasets", a.status());
  auto list = a->get("/datasets");
  if (!list.ok()) return server_error(list.status());
  std::cout << (json_out ? list->dump(2) + "\n" : datasets_view(*list));
  return 0;
}

// Each target in turn; the exit status is 1 when any was refused.
int UserCommands::Impl::do_datasets_rm() const {
  auto a = api();
  if (!a.ok()) return usage_error("datasets rm", a.status());
  int exit_status = 0;
  for (const std::string& target : targets) {
    const int status = remove_dataset(*a, target);
    if (status != 0) exit_status = status;
  }
  return exit_status;
}

int UserCommands::Impl::remove_dataset(const ServerApi& a, const std::string& target) const {
  if (looks_like_upload_id(target)) {
    auto deleted = a.del("/datasets/" + target);
    if (deleted.ok()) {
      std::cout << "deleted upload " << target << "; its kept rows dropped on "
                << deleted->value("workers_told", 0) << " worker(s)\n";
      return 0;
    }
    if (deleted.status().code() != Code::kNotFound) return server_error(deleted.status());
  }
  auto dropped = a.post("/datasets/drop", json{{"source", target}}, 60);
  if (!dropped.ok()) return server_error(dropped.status());
  std::cout << "dropped the kept rows of " << target << " on " << dropped->value("workers_told", 0)
            << " worker(s)\n";
  return 0;
}

int UserCommands::Impl::do_stage() const {
  auto a = api();
  if (!a.ok()) return usage_error("stage", a.status());
  json body = looks_like_upload_id(target) ? json{{"upload", target}} : json{{"path", target}};
  auto program = resolve_program(*a, stage_program, 900);
  if (!program.ok()) return server_error(program.status());
  body["program"] = program->hash;
  if (stage_executors > 0) body["executors"] = stage_executors;
  if (!stage_format.empty()) body["format"] = stage_format;
  if (!stage_dtype.empty()) body["dtype"] = stage_dtype;
  if (stage_width > 0) body["width"] = stage_width;
  auto staged = a->post("/datasets/stage", body);
  if (!staged.ok()) return server_error(staged.status());
  std::cout << (json_out ? staged->dump(2) + "\n" : staged_view(*staged));
  return 0;
}

int UserCommands::Impl::do_upload() const {
  auto a = api();
  if (!a.ok()) return usage_error("upload", a.status());
  const bool raw =
      upload_format == "raw" || (upload_format.empty() && upload_file.size() > 4 &&
                                 upload_file.compare(upload_file.size() - 4, 4, ".raw") == 0);
  auto stored = a->upload(upload_file, raw ? "raw" : "npy");
  if (!stored.ok()) return server_error(stored.status());
  std::cout << (json_out ? stored->dump(2) + "\n" : uploaded_view(*stored));
  return 0;
}

UserCommands::UserCommands(CLI::App* app) : impl_(new Impl) {
  impl_->add_run(app);
  impl_->add_others(app);
  impl_->add_datasets(app);
}

UserCommands::~UserCommands() = default;

std::optional<int> UserCommands::run() const {
  if (impl_->run->parsed()) return impl_->do_run();
  if (impl_->runs->parsed()) return impl_->do_runs();
  if (impl_->status->parsed()) return impl_->do_status();
  if (impl_->cancel->parsed()) return impl_->do_cancel();
  if (impl_->logs->parsed()) return impl_->do_logs();
  if (impl_->workers->parsed()) return impl_->do_workers();
  if (impl_->datasets_rm->parsed()) return impl_->do_datasets_rm();
  if (impl_->datasets_cmd->parsed()) return impl_->do_datasets();
  if (impl_->stage->parsed()) return impl_->do_stage();
  if (impl_->upload->parsed()) return impl_->do_upload();
  return std::nullopt;
}

}  // namespace lizard
