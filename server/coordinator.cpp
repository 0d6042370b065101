#include "server/coordinator.h"
#include "common/clock.h"

#include <spdlog/spdlog.h>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "common/auth.h"
#include "common/mailbox.h"
#include "dataset/dataset_file.h"
#include "dataset/json_values.h"
#include "dataset/mapped_rows.h"
#include "dataset/npy.h"
#include "exec/host_compiler.h"
#include "plan/partition_plan.h"
#include "program/bundle.h"
#include "program/reducers.h"
#include "protocol/wire.h"
#include "server/dataset_store.h"
#include "server/host_hooks.h"
#include "server/run_request.h"
#include "server/run_store.h"

namespace lizard {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

int http_status(const Status& s) {
  switch (s.code()) {
    case Code::kOk:
      return 200;
    case Code::kInvalidArgument:
      return 400;
    case Code::kNotFound:
      return 404;
    case Code::kConflict:
      return 409;
    case Code::kTooLarge:
      return 413;
    case Code::kCompileError:
      return 422;
    case Code::kUnavailable:
      return 503;
    default:
      return 500;
  }
}

HttpResponse json_response(int status, const json& j) {
  return {status, "application/json", j.dump(2) + "\n"};
}
HttpResponse error_response(const Status& s) {
  return json_response(http_status(s), {{"error", s.message()}});
}

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

std::vector<std::string> split_path(const std::string& target,
                                    std::map<std::string, std::string>* query) {
  std::string path = target, q;
  if (auto p = target.find('?'); p != std::string::npos) {
    path = target.substr(0, p);
    q = target.substr(p + 1);
  }
  size_t start = 0;
  while (start < q.size()) {
    size_t amp = q.find('&', start);
    std::string kv = q.substr(start, amp == std::string::npos ? std::string::npos : amp - start);
    size_t eq = kv.find('=');
    (*query)[kv.substr(0, eq)] = eq == std::string::npos ? "" : kv.substr(eq + 1);
    if (amp == std::string::npos) break;
    start = amp + 1;
  }
  std::vector<std::string> parts;
  size_t i = 0;
  while (i < path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    if (j > i) parts.push_back(path.substr(i, j - i));
    i = j + 1;
  }
  return parts;
}

// Converts a section's fields to JSON objects of arrays/scalars.
json section_to_json(const SectionBuffer& s, const Manifest& m, const ParamValues& p) {
  json out = json::object();
  for (const auto& slot : s.slots) {
    auto dims = field_dims(*slot.spec, m, p);
    out[slot.spec->name] = values_to_json(
        s.data(slot), slot.spec->type, dims.ok() ? dims.value() : std::vector<int64_t>{slot.count});
  }
  return out;
}

struct ProgramBuild {
  bool done = false;
  bool ok = false;
  std::string error;
};

struct WorkerEntry {
  std::string id;
  std::shared_ptr<WorkerLink> link;
  bool hello = false;
  json report;
  std::vector<ExecutorInfo> executors;
  std::map<std::string, ProgramBuild> programs;
  std::string connected_at;

  json to_json() const {
    json j = {{"id", id},
              {"address", link ? link->peer() : ""},
              {"connected_at", connected_at},
              {"hardware", report},
              {"programs", json::object()}};
    for (const auto& [h, b] : programs)
      j["programs"][h] =
          b.done ? (b.ok ? json("ready") : json({{"error", b.error}})) : json("building");
    return j;
  }
};

struct ProgramEntry {
  ProgramImage image;
  ProgramBundle bundle;
  std::shared_ptr<HostHooks> hooks;
  std::string registered_at;
};

struct OutputField {
  DType type;
  std::vector<int64_t> dims;
  std::string bytes;
};

struct RunEntry {
  std::string id;
  std::string hash;
  std::shared_ptr<const ProgramEntry> program;
  RunRequest request;
  json params_json;
  std::string status = "queued";
  std::string error;
  std::string created_at, started_at, finished_at;
  int64_t iterations = 0;
  json timings = json::array();
  json plan;
  json result;
  std::map<std::string, OutputField> outputs;
  std::vector<Responder> waiters;
  double elapsed_ms = 0;
  bool cancel_requested = false;
  uint64_t seq = 0;
  json recoveries = json::array();
  json restored;  // the stored record of a run from before a restart
  // Rows of the current iteration each executor of the plan has finished:
  // reported slice by slice in map-style runs, whole at the iteration's end.
  int64_t progress_iteration = -1;
  std::map<std::pair<std::string, int64_t>, int64_t> rows_done;  // by (worker, executor)

  json progress_json() const {
    json executors = json::array();
    int64_t done = 0;
    for (const auto& e : plan.value("executors", json::array())) {
      const std::string worker = e.value("worker", "");
      const int64_t executor = e.value("executor", int64_t{0});
      auto it = rows_done.find({worker, executor});
      const int64_t n = it == rows_done.end() ? 0 : it->second;
      done += n;
      executors.push_back({{"worker", worker},
                           {"executor", executor},
                           {"rows", e.value("rows", int64_t{0})},
                           {"rows_done", n}});
    }
    return {{"iteration", progress_iteration},
            {"rows", request.rows},
            {"rows_done", done},
            {"executors", executors}};
  }

  bool finished() const { return status == "done" || status == "failed" || status == "cancelled"; }
  json to_json() const {
    if (!restored.is_null()) return restored;
    json j = {{"runtime_id", id},
              {"program", hash},
              {"program_name", program ? program->image.manifest.name : ""},
              {"status", status},
              {"params", params_json},
              {"rows", request.rows},
              {"max_iterations", request.max_iterations},
              {"iterations", iterations},
              {"created_at", created_at},
              {"timings", timings}};
    if (!started_at.empty()) j["started_at"] = started_at;
    if (!finished_at.empty()) {
      j["finished_at"] = finished_at;
      j["elapsed_ms"] = elapsed_ms;
    }
    if (!plan.is_null()) j["plan"] = plan;
    if (!plan.is_null() && progress_iteration >= 0) j["progress"] = progress_json();
    if (!recoveries.empty()) j["recoveries"] = recoveries;
    if (!error.empty()) j["error"] = error;
    if (!result.is_null()) j["result"] = result;
    if (!outputs.empty()) {
      j["fields"] = json::object();
      for (const auto& [n, _] : outputs)
        j["fields"][n] = "/runtimes/" + id + "/fields/" + n + ".npy";
    }
    return j;
  }
};

// Prefix of the message of a status that reports a lost worker; such a
// failure is recovered by re-planning the run.
const std::string kWorkerLost = "lost worker ";
bool is_worker_loss(const Status& s) {
  return s.code() == Code::kUnavailable && s.message().find(kWorkerLost) != std::string::npos;
}

struct WorkerEvent {
  std::string worker_id;
  bool disconnected = false;
  Message msg;
};

}  // namespace

struct Coordinator::Impl {
  CoordinatorOptions opts;
  HostCompiler compiler;
  boost::asio::thread_pool pool{4};

  std::mutex mu;
  std::condition_variable cv;  // worker programs, queue, stopping
  std::map<std::string, WorkerEntry> workers;
  std::map<std::string, std::shared_ptr<ProgramEntry>> programs;
  std::map<std::string, std::shared_ptr<RunEntry>> runs;
  std::deque<std::shared_ptr<RunEntry>> queue;
  uint64_t next_worker = 1, next_run = 1;
  bool stopping = false;

  Mailbox<WorkerEvent> events;
  std::thread driver;
  std::unique_ptr<RunStore> store;  // null: run records do not survive a restart
  std::unique_ptr<DatasetStore> datasets;

  // Records the run's current record durably (call with `mu` held or the record in hand).
  void persist(const RunEntry& run, const json& record);
  void restore_runs();

  explicit Impl(CoordinatorOptions o)
      : opts(std::move(o)), compiler((std::filesystem::path(opts.state_dir) / "hooks").string()) {}

  // ---- HTTP ---------------------------------------------------------------
  void handle(HttpRequest req, Responder respond);
  std::optional<HttpResponse> check_token(const HttpRequest& req) const;
  HttpResponse datasets_endpoint(const std::string& method, const std::vector<std::string>& parts,
                                 std::map<std::string, std::string>& query,
                                 const std::string& body_file);
  Status send_upload_rows(const std::string& worker_id, const std::string& wire_id, size_t field,
                          const DatasetSource& s, DType type, int64_t first, int64_t count);
  HttpResponse get_clients(const std::vector<std::string>& parts);
  HttpResponse get_programs(const std::vector<std::string>& parts);
  HttpResponse get_runtimes(const std::vector<std::string>& parts,
                            std::map<std::string, std::string>& query);
  void post_program(std::string body, Responder respond);
  void post_run(std::string hash, std::string body, bool wait, Responder respond);

  // ---- persistence --------------------------------------------------------
  std::filesystem::path program_dir() const {
    return std::filesystem::path(opts.state_dir) / "programs";
  }
  void save_program(const ProgramEntry& p);
  void forget_program(const std::string& hash);
  void load_programs();

  // ---- workers ------------------------------------------------------------
  void on_frame(const std::string& worker_id, std::string frame);
  void on_progress(const std::string& worker_id, const json& header);
  void send(const std::string& worker_id, const Message& m);
  void push_program(WorkerEntry& w, const ProgramEntry& p);

  // ---- runs ---------------------------------------------------------------
  void drive();
  void execute(const std::shared_ptr<RunEntry>& run);
  Status run_iterations(const std::shared_ptr<RunEntry>& run);
  Result<std::vector<ExecutorSlot>> wait_for_executors(const RunEntry& run);
  Status limit_rows_to_memory(const RunEntry& run, std::vector<ExecutorSlot>* slots);
  Status start_worker_partition(const RunEntry& run, const std::string& wire_id,
                                const std::string& worker_id,
                                const std::vector<const PlanEntry*>& entries);
  Result<std::vector<std::string>> start_partitions(const std::shared_ptr<RunEntry>& run,
                                                    const std::string& wire_id);
  Status run_one_iteration(const std::shared_ptr<RunEntry>& run, const std::string& wire_id,
                           const std::vector<std::string>& participants, int64_t it,
                           SectionBuffer* state, SectionBuffer* agg, SectionBuffer* partial,
                           bool* done);
  Result<std::map<std::string, Message>> collect(const RunEntry& run, const std::string& wire_id,
                                                 MessageType type,
                                                 const std::vector<std::string>& from);
  void cancel(const std::string& id, Responder respond);
  void serve_field(const std::string& id, std::string name, Responder respond);
  void finish(const std::shared_ptr<RunEntry>& run, const Status& st);
};

void Coordinator::Impl::handle(HttpRequest req, Responder respond) {
  std::map<std::string, std::string> query;
  auto parts = split_path(req.target, &query);
  const std::string& method = req.method;
  spdlog::debug("{} {}", method, req.target);
  const bool health = parts.size() == 1 && parts[0] == "ruok";
  if (!health) {
    if (auto refusal = check_token(req)) return respond(std::move(*refusal));
  }
  if (parts.empty())
    return respond(json_response(200, {{"service", "lizard"}, {"version", LIZARD_VERSION}}));
  const std::string& top = parts[0];
  if (health && method == "GET") return respond({200, "text/plain", "imok"});
  if (top == "clients" && method == "GET") return respond(get_clients(parts));
  if (top == "programs") {
    if (method == "GET") return respond(get_programs(parts));
    if (method == "POST" && parts.size() == 1)
      return post_program(std::move(req.body), std::move(respond));
  }
  if ((top == "runtime" || top == "runtimes") && method == "POST" && parts.size() == 2) {
    bool wait = query.count("wait") && query["wait"] != "0" && query["wait"] != "false";
    return post_run(parts[1], std::move(req.body), wait, std::move(respond));
  }
  if (top == "datasets") return respond(datasets_endpoint(method, parts, query, req.body_file));
  if (top == "runtimes" && method == "GET" && parts.size() == 4 && parts[2] == "fields")
    return serve_field(parts[1], parts[3], std::move(respond));
  if (top == "runtimes" && method == "GET") return respond(get_runtimes(parts, query));
  if (top == "runtimes" && method == "DELETE" && parts.size() == 2)
    return cancel(parts[1], std::move(respond));
  respond(json_response(404, {{"error", "no such endpoint: " + method + " " + req.target}}));
}

std::optional<HttpResponse> Coordinator::Impl::check_token(const HttpRequest& req) const {
  auto it = req.headers.find("authorization");
  const std::string given = it == req.headers.end() ? "" : bearer_token(it->second);
  const bool writes = req.method != "GET" && req.method != "HEAD";
  const std::string& need = writes ? opts.token : opts.read_token;
  bool ok = need.empty() || constant_time_equals(given, need) ||
            (!writes && !opts.token.empty() && constant_time_equals(given, opts.token));
  if (ok) return std::nullopt;
  return json_response(401, {{"error", std::string(given.empty() ? "missing" : "wrong") +
                                           " token: send Authorization: Bearer <token>"}});
}

HttpResponse Coordinator::Impl::datasets_endpoint(const std::string& method,
                                                  const std::vector<std::string>& parts,
                                                  std::map<std::string, std::string>& query,
                                                  const std::string& body_file) {
  if (method == "POST" && parts.size() == 1) {
    if (body_file.empty())
      return json_response(400, {{"error", "POST /datasets takes the file as the request body"}});
    std::string id = std::filesystem::path(body_file).stem().string();
    auto meta = datasets->commit(id, body_file, query["format"]);
    if (!meta.ok()) return error_response(meta.status());
    spdlog::info("stored dataset {} ({} bytes)", id, meta->value("bytes", uint64_t{0}));
    return json_response(201, meta.value());
  }
  if (method == "GET" && parts.size() == 1) return json_response(200, datasets->list());
  if (parts.size() == 2 && method == "GET") {
    auto meta = datasets->get(parts[1]);
    return meta.ok() ? json_response(200, meta.value()) : error_response(meta.status());
  }
  if (parts.size() == 2 && method == "DELETE") {
    Status st = datasets->remove(parts[1]);
    return st.ok() ? json_response(200, {{"deleted", parts[1]}}) : error_response(st);
  }
  return json_response(404, {{"error", "no such endpoint: " + method + " /" + parts[0]}});
}

// Streams a worker's rows of an uploaded field in chunks of about 8 MiB,
// pacing itself so that no more than 64 MiB wait in the connection's queue.
// The stored file is mapped and each chunk's rows go to the socket from the
// mapping, never copied into a buffer; each chunk names the field's total
// size on this worker so that the worker allocates it once.
Status Coordinator::Impl::send_upload_rows(const std::string& worker_id, const std::string& wire_id,
                                           size_t field, const DatasetSource& s, DType type,
                                           int64_t first, int64_t count) {
  std::shared_ptr<WorkerLink> link;
  {
    std::lock_guard<std::mutex> l(mu);
    auto it = workers.find(worker_id);
    if (it == workers.end()) return Status(Code::kUnavailable, kWorkerLost + worker_id);
    link = it->second.link;
  }
  LIZARD_ASSIGN_OR_RETURN(std::shared_ptr<const MappedRows> file,
                          MappedRows::open(s.path, s.format, type, s.width));
  const size_t row_bytes = file->row_bytes();
  const int64_t rows_per_chunk =
      std::max<int64_t>(1, (int64_t{8} << 20) / static_cast<int64_t>(row_bytes));
  const size_t total = static_cast<size_t>(count) * row_bytes;
  for (int64_t done = 0; done < count;) {
    const int64_t n = std::min(rows_per_chunk, count - done);
    LIZARD_ASSIGN_OR_RETURN(std::string_view rows, file->rows(first + done, n));
    while (link->queued_bytes() > (size_t{64} << 20))
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    link->send(OutgoingFrame(encode(Message{MessageType::kDataChunk,
                                            {{"run_id", wire_id},
                                             {"field", field},
                                             {"offset", static_cast<size_t>(done) * row_bytes},
                                             {"bytes", rows.size()},
                                             {"total", total}},
                                            ""}),
                             rows, file));
    done += n;
  }
  return Status::Ok();
}

HttpResponse Coordinator::Impl::get_clients(const std::vector<std::string>& parts) {
  std::lock_guard<std::mutex> l(mu);
  if (parts.size() == 1) {
    json out = json::array();
    for (const auto& [id, w] : workers)
      if (w.hello) out.push_back(w.to_json());
    return json_response(200, out);
  }
  auto it = workers.find(parts[1]);
  if (parts.size() != 2 || it == workers.end())
    return json_response(404, {{"error", "no such client: " + parts[1]}});
  return json_response(200, it->second.to_json());
}

HttpResponse Coordinator::Impl::get_programs(const std::vector<std::string>& parts) {
  std::lock_guard<std::mutex> l(mu);
  auto describe = [&](const ProgramEntry& p) {
    const Manifest& m = p.image.manifest;
    json j = {{"hash", p.image.hash},     {"name", m.name},
              {"version", m.version},     {"registered_at", p.registered_at},
              {"kernels", json::array()}, {"workers", json::object()}};
    for (const auto& k : m.iterate) j["kernels"].push_back(k.kernel);
    for (const auto& [id, w] : workers) {
      auto b = w.programs.find(p.image.hash);
      if (b != w.programs.end())
        j["workers"][id] = b->second.done
                               ? (b->second.ok ? json("ready") : json({{"error", b->second.error}}))
                               : json("building");
    }
    return j;
  };
  if (parts.size() == 1) {
    json out = json::array();
    for (const auto& [h, p] : programs) out.push_back(describe(*p));
    return json_response(200, out);
  }
  auto it = programs.find(parts[1]);
  if (parts.size() != 2 || it == programs.end())
    return json_response(404, {{"error", "no such program: " + parts[1]}});
  json j = describe(*it->second);
  j["config"] = it->second->bundle.config;
  j["header"] = it->second->image.header;
  return json_response(200, j);
}

HttpResponse Coordinator::Impl::get_runtimes(const std::vector<std::string>& parts,
                                             std::map<std::string, std::string>& query) {
  std::lock_guard<std::mutex> l(mu);
  if (parts.size() == 1) {
    static const std::set<std::string> kStatuses = {"queued", "running", "done", "failed",
                                                    "cancelled"};
    const std::string want = query["status"];
    if (!want.empty() && !kStatuses.count(want))
      return json_response(
          400, {{"error", "status must be one of queued, running, done, failed, cancelled"}});
    std::vector<std::shared_ptr<RunEntry>> ordered;
    for (const auto& [id, r] : runs) ordered.push_back(r);
    std::sort(ordered.begin(), ordered.end(),
              [](const auto& a, const auto& b) { return a->seq < b->seq; });
    json out = json::array();
    for (const auto& r : ordered) {
      if (!want.empty() && r->status != want) continue;
      json j = r->to_json();
      j.erase("result");
      j.erase("timings");
      out.push_back(j);
    }
    return json_response(200, out);
  }
  auto it = runs.find(parts[1]);
  if (it == runs.end()) return json_response(404, {{"error", "no such runtime: " + parts[1]}});
  const RunEntry& r = *it->second;
  if (parts.size() == 2) return json_response(200, r.to_json());
  return json_response(404, {{"error", "no such endpoint"}});
}

// GET /runtimes/<id>/fields/<name>.npy.  Fields can be large: the file is
// assembled (or read back from the run store) on the pool, not the io thread.
// A finished run's fields no longer change, so they are read without the lock.
void Coordinator::Impl::serve_field(const std::string& id, std::string name, Responder respond) {
  std::shared_ptr<RunEntry> run;
  {
    std::lock_guard<std::mutex> l(mu);
    auto it = runs.find(id);
    if (it != runs.end() && it->second->finished()) run = it->second;
  }
  if (!run) return respond(json_response(404, {{"error", "no finished runtime " + id}}));
  if (name.size() > 4 && name.substr(name.size() - 4) == ".npy") name.resize(name.size() - 4);
  boost::asio::post(pool, [this, run, name, respond = std::move(respond)] {
    auto f = run->outputs.find(name);
    if (f != run->outputs.end())
      return respond({200, "application/octet-stream",
                      npy_bytes(f->second.type, f->second.dims, f->second.bytes.data())});
    if (store && run->restored.contains("fields") && run->restored["fields"].contains(name)) {
      auto blob = store->load_blob(run->id, name);
      if (blob.ok()) return respond({200, "application/octet-stream", std::move(blob).value()});
    }
    respond(json_response(404, {{"error", "runtime " + run->id + " has no field '" + name + "'"}}));
  });
}

void Coordinator::Impl::post_program(std::string body, Responder respond) {
  boost::asio::post(pool, [this, body = std::move(body), respond = std::move(respond)] {
    json j = json::parse(body, nullptr, false);
    if (j.is_discarded())
      return respond(error_response(invalid_argument("request body is not valid JSON")));
    auto bundle = ProgramBundle::from_json(j);
    if (!bundle.ok()) return respond(error_response(bundle.status()));
    auto image = make_program_image(bundle.value());
    if (!image.ok()) return respond(error_response(image.status()));
    const std::string hash = image->hash;
    auto entry = std::make_shared<ProgramEntry>();
    entry->bundle = std::move(bundle).value();
    entry->image = std::move(image).value();
    entry->registered_at = now_iso();
    auto hooks = HostHooks::build(entry->image, compiler);
    if (!hooks.ok()) return respond(error_response(hooks.status()));
    entry->hooks = hooks.value();

    std::unique_lock<std::mutex> l(mu);
    const bool is_new = !programs.count(hash);
    if (is_new) {
      programs[hash] = entry;
      save_program(*entry);
      spdlog::info("registered program {} ({})", hash.substr(0, 12), entry->image.manifest.name);
    }
    for (auto& [id, w] : workers)
      if (w.hello && !w.programs.count(hash)) push_program(w, *programs[hash]);
    // Wait until every connected worker has built it.
    auto deadline = Clock::now() + std::chrono::seconds(opts.program_build_timeout_s);
    auto all_done = [&] {
      for (const auto& [id, w] : workers)
        if (w.hello && w.programs.count(hash) && !w.programs.at(hash).done) return false;
      return true;
    };
    cv.wait_until(l, deadline, [&] { return stopping || all_done(); });
    json result = {
        {"hash", hash}, {"name", programs[hash]->image.manifest.name}, {"workers", json::object()}};
    std::string errors;
    for (const auto& [id, w] : workers) {
      auto b = w.programs.find(hash);
      if (!w.hello || b == w.programs.end()) continue;
      if (!b->second.done) {
        result["workers"][id] = "building";
        errors += "worker " + id + ": still building after " +
                  std::to_string(opts.program_build_timeout_s) + " s\n";
      } else if (!b->second.ok) {
        result["workers"][id] = {{"error", b->second.error}};
        errors += "worker " + id + ": " + b->second.error + "\n";
      } else {
        result["workers"][id] = "ready";
      }
    }
    if (!errors.empty()) {
      if (is_new) {  // a new program that does not build is not kept
        programs.erase(hash);
        forget_program(hash);
        for (auto& [id, w] : workers) w.programs.erase(hash);
      }
      l.unlock();
      return respond(json_response(422, {{"error", "the program did not build:\n" + errors},
                                         {"hash", hash},
                                         {"workers", result["workers"]}}));
    }
    l.unlock();
    respond(json_response(201, result));
  });
}

void Coordinator::Impl::post_run(std::string hash, std::string body, bool wait, Responder respond) {
  boost::asio::post(pool, [this, hash = std::move(hash), body = std::move(body), wait,
                           respond = std::move(respond)]() mutable {
    std::shared_ptr<ProgramEntry> program;
    {
      std::lock_guard<std::mutex> l(mu);
      auto it = programs.find(hash);
      if (it != programs.end()) program = it->second;
    }
    if (!program) return respond(json_response(404, {{"error", "no such program: " + hash}}));
    json j = body.empty() ? json::object() : json::parse(body, nullptr, false);
    if (j.is_discarded())
      return respond(error_response(invalid_argument("request body is not valid JSON")));
    auto request = parse_run_request(
        program->image, j, [this](const std::string& id) { return datasets->lookup(id); });
    if (!request.ok()) return respond(error_response(request.status()));
    auto run = std::make_shared<RunEntry>();
    run->hash = hash;
    run->program = program;
    run->params_json = request->params.to_json(program->image.manifest);
    run->request = std::move(request).value();
    run->created_at = now_iso();
    std::lock_guard<std::mutex> l(mu);
    run->seq = next_run++;
    run->id = "r" + std::to_string(run->seq);
    runs[run->id] = run;
    queue.push_back(run);
    persist(*run, run->to_json());
    cv.notify_all();
    spdlog::info("queued {} for program {} ({} rows)", run->id, hash.substr(0, 12),
                 run->request.rows);
    if (wait) {
      run->waiters.push_back(std::move(respond));
    } else {
      respond(json_response(202, {{"runtime_id", run->id}, {"status", run->status}}));
    }
  });
}

void Coordinator::Impl::cancel(const std::string& id, Responder respond) {
  std::shared_ptr<RunEntry> run;
  bool was_queued = false;
  {
    std::lock_guard<std::mutex> l(mu);
    auto it = runs.find(id);
    if (it == runs.end()) return respond(json_response(404, {{"error", "no such runtime: " + id}}));
    run = it->second;
    if (run->finished())
      return respond(
          json_response(409, {{"error", "runtime " + id + " is " + run->status + " already"},
                              {"status", run->status}}));
    run->cancel_requested = true;
    auto q = std::find(queue.begin(), queue.end(), run);
    if (q != queue.end()) {
      queue.erase(q);
      was_queued = true;
    }
  }
  cv.notify_all();
  if (was_queued) finish(run, Status(Code::kCancelled, "cancelled before it started"));
  respond(json_response(202,
                        {{"runtime_id", id}, {"status", was_queued ? "cancelled" : "cancelling"}}));
}

void Coordinator::Impl::persist(const RunEntry& run, const json& record) {
  if (!store) return;
  Status st = store->save(run.id, run.seq, run.status, record);
  if (!st.ok()) spdlog::warn("run {} not saved: {}", run.id, st.message());
}

// Run records from before a restart: finished ones as they were; those that
// were queued or running fail, since their requests are not kept.
void Coordinator::Impl::restore_runs() {
  auto opened = RunStore::open(opts.state_dir);
  if (!opened.ok()) {
    spdlog::warn("run records will not survive a restart: {}", opened.status().message());
    return;
  }
  store = std::move(opened).value();
  auto stored = store->load_all();
  if (!stored.ok()) {
    spdlog::warn("cannot read earlier run records: {}", stored.status().message());
    return;
  }
  for (StoredRun& s : stored.value()) {
    auto run = std::make_shared<RunEntry>();
    run->id = s.id;
    run->seq = s.seq;
    run->hash = s.record.value("program", "");
    run->status = s.status;
    if (!run->finished()) {
      run->status = "failed";
      s.record["status"] = "failed";
      s.record["error"] = "the server restarted while the run was " + s.status;
      s.record["finished_at"] = now_iso();
    }
    run->restored = std::move(s.record);
    if (run->restored.value("status", "") != s.status) persist(*run, run->restored);
    next_run = std::max(next_run, s.seq + 1);
    runs[run->id] = std::move(run);
  }
  if (!runs.empty()) spdlog::info("restored {} run record(s)", runs.size());
}

void Coordinator::Impl::save_program(const ProgramEntry& p) {
  std::error_code ec;
  std::filesystem::create_directories(program_dir(), ec);
  const auto path = program_dir() / (p.image.hash + ".json");
  const auto tmp = program_dir() / (p.image.hash + ".json.tmp");
  {
    std::ofstream out(tmp, std::ios::binary);
    out << p.bundle.to_json().dump();
    if (!out) {
      spdlog::warn("cannot save program {} in {}", p.image.hash.substr(0, 12),
                   program_dir().string());
      return;
    }
  }
  std::filesystem::rename(tmp, path, ec);
}

void Coordinator::Impl::forget_program(const std::string& hash) {
  std::error_code ec;
  std::filesystem::remove(program_dir() / (hash + ".json"), ec);
}

// Registered programs survive a restart: their bundles are kept in the state
// directory and rebuilt (the hook build is cached) when the server starts.
void Coordinator::Impl::load_programs() {
  std::error_code ec;
  for (const auto& f : std::filesystem::directory_iterator(program_dir(), ec)) {
    if (f.path().extension() != ".json") continue;
    std::ifstream in(f.path(), std::ios::binary);
    json j = json::parse(in, nullptr, false);
    auto bundle = ProgramBundle::from_json(j);
    auto image =
        bundle.ok() ? make_program_image(bundle.value()) : Result<ProgramImage>(bundle.status());
    if (!image.ok()) {
      spdlog::warn("skipping stored program {}: {}", f.path().string(), image.status().message());
      continue;
    }
    auto entry = std::make_shared<ProgramEntry>();
    entry->bundle = std::move(bundle).value();
    entry->image = std::move(image).value();
    entry->registered_at = now_iso();
    auto hooks = HostHooks::build(entry->image, compiler);
    if (!hooks.ok()) {
      spdlog::warn("skipping stored program {}: {}", entry->image.hash.substr(0, 12),
                   hooks.status().message());
      continue;
    }
    entry->hooks = hooks.value();
    spdlog::info("restored program {} ({})", entry->image.hash.substr(0, 12),
                 entry->image.manifest.name);
    programs[entry->image.hash] = std::move(entry);
  }
}

void Coordinator::Impl::send(const std::string& worker_id, const Message& m) {
  std::shared_ptr<WorkerLink> link;
  {
    std::lock_guard<std::mutex> l(mu);
    auto it = workers.find(worker_id);
    if (it != workers.end()) link = it->second.link;
  }
  if (link) link->send(encode(m));
}

void Coordinator::Impl::push_program(WorkerEntry& w, const ProgramEntry& p) {
  w.programs[p.image.hash] = ProgramBuild{};
  w.link->send(encode(Message{
      MessageType::kProgram, {{"hash", p.image.hash}, {"bundle", p.bundle.to_json()}}, ""}));
}

void Coordinator::Impl::on_frame(const std::string& worker_id, std::string frame) {
  auto m = decode(frame);
  if (!m.ok()) {
    spdlog::warn("worker {} sent a bad frame: {}", worker_id, m.status().message());
    return;
  }
  switch (m->type) {
    case MessageType::kHello: {
      std::lock_guard<std::mutex> l(mu);
      auto it = workers.find(worker_id);
      if (it == workers.end()) return;
      WorkerEntry& w = it->second;
      w.hello = true;
      w.report = m->header;
      w.executors.clear();
      if (m->header.contains("executors") && m->header["executors"].is_array())
        for (const auto& e : m->header["executors"])
          w.executors.push_back(ExecutorInfo::from_json(e));
      spdlog::info("worker {} joined from {}: {} executor(s), backend {}", worker_id,
                   w.link->peer(), w.executors.size(), m->header.value("backend", "?"));
      w.link->send(encode(Message{MessageType::kWelcome, {{"worker_id", worker_id}}, ""}));
      for (const auto& [h, p] : programs) push_program(w, *p);
      cv.notify_all();
      return;
    }
    case MessageType::kProgramStatus: {
      std::lock_guard<std::mutex> l(mu);
      auto it = workers.find(worker_id);
      if (it == workers.end()) return;
      ProgramBuild& b = it->second.programs[m->header.value("hash", "")];
      b.done = true;
      b.ok = m->header.value("ok", false);
      b.error = m->header.value("error", "");
      spdlog::debug("worker {} built {}: {}", worker_id, m->header.value("hash", "").substr(0, 12),
                    b.ok ? "ok" : b.error);
      cv.notify_all();
      return;
    }
    case MessageType::kHeartbeat:
      return;
    case MessageType::kProgress:
      return on_progress(worker_id, m->header);
    case MessageType::kResources: {  // free memory now, for the next plans
      std::lock_guard<std::mutex> l(mu);
      auto it = workers.find(worker_id);
      const json& free = m->header["free_memory"];
      if (it == workers.end() || !free.is_array()) return;
      std::vector<ExecutorInfo>& ex = it->second.executors;
      json& shown = it->second.report["executors"];  // as GET /clients shows them
      for (size_t i = 0; i < ex.size() && i < free.size(); ++i) {
        if (!free[i].is_number_unsigned()) continue;
        ex[i].free_memory = free[i].get<uint64_t>();
        if (shown.is_array() && i < shown.size()) shown[i]["free_memory"] = ex[i].free_memory;
      }
      return;
    }
    default:
      events.push(WorkerEvent{worker_id, false, std::move(m).value()});
  }
}

// Records how many rows of the running iteration an executor has finished.
void Coordinator::Impl::on_progress(const std::string& worker_id, const json& header) {
  const std::string wire_id = header.value("run_id", "");
  std::lock_guard<std::mutex> l(mu);
  auto it = runs.find(wire_id.substr(0, wire_id.rfind('.')));
  if (it == runs.end()) return;
  RunEntry& run = *it->second;
  if (run.status != "running" || header.value("iteration", int64_t{-1}) != run.progress_iteration)
    return;
  int64_t& done = run.rows_done[{worker_id, header.value("executor", int64_t{0})}];
  done = std::max(done, header.value("rows_done", int64_t{0}));
}

void Coordinator::Impl::drive() {
  for (;;) {
    std::shared_ptr<RunEntry> run;
    {
      std::unique_lock<std::mutex> l(mu);
      cv.wait(l, [&] { return stopping || !queue.empty(); });
      if (stopping) return;
      run = queue.front();
      queue.pop_front();
    }
    execute(run);
  }
}

Result<std::map<std::string, Message>> Coordinator::Impl::collect(
    const RunEntry& run, const std::string& wire_id, MessageType type,
    const std::vector<std::string>& from) {
  std::map<std::string, Message> got;
  while (got.size() < from.size()) {
    auto ev = events.pop_for(std::chrono::milliseconds(200));
    {
      std::lock_guard<std::mutex> l(mu);
      if (stopping) return unavailable("the server is shutting down");
      if (run.cancel_requested) return Status(Code::kCancelled, "cancelled");
    }
    if (!ev) continue;
    bool ours = std::find(from.begin(), from.end(), ev->worker_id) != from.end();
    if (!ours) continue;
    if (ev->disconnected) return Status(Code::kUnavailable, kWorkerLost + ev->worker_id);
    if (ev->msg.header.value("run_id", "") != wire_id)
      continue;  // stale message of an earlier attempt
    if (ev->msg.type != type) continue;
    if (!ev->msg.header.value("ok", true))
      return runtime_error("worker " + ev->worker_id + ": " +
                           ev->msg.header.value("error", "failed"));
    got[ev->worker_id] = std::move(ev->msg);
  }
  return got;
}

void Coordinator::Impl::execute(const std::shared_ptr<RunEntry>& run) {
  {
    std::lock_guard<std::mutex> l(mu);
    run->status = "running";
    run->started_at = now_iso();
    persist(*run, run->to_json());
  }
  auto t0 = Clock::now();
  Status st = run_iterations(run);
  run->elapsed_ms = ms_since(t0);
  finish(run, st);
}

Result<std::vector<ExecutorSlot>> Coordinator::Impl::wait_for_executors(const RunEntry& run) {
  std::unique_lock<std::mutex> l(mu);
  auto ready = [&] {
    bool any = false;
    for (const auto& [id, w] : workers) {
      auto b = w.programs.find(run.hash);
      if (!w.hello || b == w.programs.end()) continue;
      if (!b->second.done) return false;  // still building: wait for it
      any = any || b->second.ok;
    }
    return any;
  };
  if (!cv.wait_for(l, std::chrono::seconds(opts.worker_wait_s),
                   [&] { return stopping || run.cancel_requested || ready(); }))
    return unavailable("no worker has built program " + run.hash.substr(0, 12) + " after " +
                       std::to_string(opts.worker_wait_s) + " s (GET /clients lists the workers)");
  if (stopping) return unavailable("the server is shutting down");
  if (run.cancel_requested) return Status(Code::kCancelled, "cancelled");
  std::vector<ExecutorSlot> slots;
  for (const auto& [id, w] : workers) {
    auto b = w.programs.find(run.hash);
    if (!w.hello || b == w.programs.end() || !b->second.ok) continue;
    for (size_t e = 0; e < w.executors.size(); ++e)
      slots.push_back(
          {id, static_cast<int>(e), w.executors[e].weight,
           static_cast<int64_t>(std::min<uint64_t>(w.executors[e].free_memory, INT64_MAX))});
  }
  if (slots.empty()) return unavailable("the workers that built the program report no executors");
  return slots;
}

// Turns each executor's free memory (max_rows holds bytes on entry) into the
// rows it can hold; fails before any work when the cluster cannot hold them all.
Status Coordinator::Impl::limit_rows_to_memory(const RunEntry& run,
                                               std::vector<ExecutorSlot>* slots) {
  const Manifest& m = run.program->image.manifest;
  const ParamValues& p = run.request.params;
  int64_t row_bytes = 0;
  for (const auto& f : m.dataset) {
    LIZARD_ASSIGN_OR_RETURN(int64_t width, row_width(f, m, p));
    row_bytes += width * static_cast<int64_t>(dtype_size(f.type));
  }
  LIZARD_ASSIGN_OR_RETURN(SectionBuffer st, make_section(m.state, m, p));
  LIZARD_ASSIGN_OR_RETURN(SectionBuffer ag, make_section(m.aggregate, m, p));
  const int64_t fixed =
      static_cast<int64_t>(st.bytes.size() + 2 * ag.bytes.size()) + (int64_t{64} << 20);
  int64_t room = 0;
  for (auto& s : *slots) {
    const int64_t free_bytes = s.max_rows;
    s.max_rows = free_bytes <= 0 || row_bytes == 0
                     ? -1
                     : std::max<int64_t>(0, free_bytes - fixed) / row_bytes;
    room += std::max<int64_t>(0, free_bytes - fixed);
  }
  if (fits(run.request.rows, *slots)) return Status::Ok();
  return too_large("the dataset does not fit: " + std::to_string(run.request.rows) + " rows x " +
                   std::to_string(row_bytes) +
                   " bytes = " + std::to_string(run.request.rows * row_bytes) + " bytes, but the " +
                   std::to_string(slots->size()) + " executor(s) have " + std::to_string(room) +
                   " bytes free between them");
}

// Sends one worker its rows (uploaded ones as chunks, others as sources it
// reads or generates) and then its run_start.
Status Coordinator::Impl::start_worker_partition(const RunEntry& run, const std::string& wire_id,
                                                 const std::string& worker_id,
                                                 const std::vector<const PlanEntry*>& entries) {
  const Manifest& m = run.program->image.manifest;
  const RunRequest& req = run.request;
  // A map-style run (one iteration) runs in slices that report progress.
  const bool map_style = req.max_iterations == 1 || !run.program->hooks->has_update();
  json parts = json::array();
  for (const auto* e : entries)
    parts.push_back({{"executor", e->executor}, {"first_row", e->first_row}, {"rows", e->rows}});
  const int64_t first = entries.front()->first_row;
  int64_t count = 0;
  for (const auto* e : entries) count += e->rows;
  json fields = json::array();
  std::string payload;
  for (size_t k = 0; k < m.dataset.size(); ++k) {
    const DatasetSource& s = req.dataset[k];
    json f = {{"name", m.dataset[k].name}};
    if (s.kind == DatasetSource::Kind::kInline) {
      const size_t row_bytes = static_cast<size_t>(s.width) * dtype_size(m.dataset[k].type);
      f["source"] = "inline";
      f["offset"] = payload.size();
      f["bytes"] = row_bytes * count;
      payload.append(reinterpret_cast<const char*>(s.values.data()) + row_bytes * first,
                     row_bytes * count);
    } else if (s.kind == DatasetSource::Kind::kPath) {
      f["source"] = "path";
      f["path"] = s.path;
      f["format"] = file_format_name(s.format);
    } else if (s.kind == DatasetSource::Kind::kGenerate) {
      f["source"] = "generate";
      f["kernel"] = s.generator;
    } else if (s.kind == DatasetSource::Kind::kUpload) {
      f["source"] = "chunks";  // sent just before run_start
      LIZARD_RETURN_IF_ERROR(
          send_upload_rows(worker_id, wire_id, k, s, m.dataset[k].type, first, count));
    } else {
      f["source"] = "none";
    }
    fields.push_back(f);
  }
  send(worker_id, Message{MessageType::kRunStart,
                          {{"run_id", wire_id},
                           {"hash", run.hash},
                           {"params", run.params_json},
                           {"seed", req.seed},
                           {"first_row", first},
                           {"rows", count},
                           {"parts", parts},
                           {"fields", fields},
                           {"progress", map_style}},
                          std::move(payload)});
  return Status::Ok();
}

Result<std::vector<std::string>> Coordinator::Impl::start_partitions(
    const std::shared_ptr<RunEntry>& run, const std::string& wire_id) {
  const RunRequest& req = run->request;
  LIZARD_ASSIGN_OR_RETURN(auto slots, wait_for_executors(*run));
  LIZARD_RETURN_IF_ERROR(limit_rows_to_memory(*run, &slots));
  PartitionPlan plan = plan_partition(req.rows, slots);
  {
    std::lock_guard<std::mutex> l(mu);
    run->plan = plan.to_json();
  }
  std::map<std::string, std::vector<const PlanEntry*>> by_worker;
  for (const auto& e : plan.entries)
    if (e.rows > 0) by_worker[e.worker_id].push_back(&e);
  // Each worker is loaded on a thread of its own, so uploaded rows stream to
  // all of them at once; its run_start follows its rows on the connection.
  std::vector<std::string> participants;
  std::vector<std::future<Status>> loads;
  for (const auto& [id, entries] : by_worker) {
    participants.push_back(id);
    loads.push_back(std::async(std::launch::async, [&, id = id, entries = entries] {
      return start_worker_partition(*run, wire_id, id, entries);
    }));
  }
  Status loaded = Status::Ok();
  for (auto& f : loads) {
    Status st = f.get();
    if (loaded.ok() && !st.ok()) loaded = st;
  }
  LIZARD_RETURN_IF_ERROR(loaded);
  auto ready = collect(*run, wire_id, MessageType::kRunReady, participants);
  if (!ready.ok()) return ready.status().with_context("loading the dataset");
  return participants;
}

Status Coordinator::Impl::run_iterations(const std::shared_ptr<RunEntry>& run) {
  const ProgramEntry& prog = *run->program;
  const Manifest& m = prog.image.manifest;
  const RunRequest& req = run->request;

  LIZARD_ASSIGN_OR_RETURN(SectionBuffer state, make_section(m.state, m, req.params));
  if (req.state) {
    state.bytes = req.state->bytes;
  } else {
    prog.hooks->init_state(m, req.params, &state);
  }
  LIZARD_ASSIGN_OR_RETURN(SectionBuffer agg, make_section(m.aggregate, m, req.params));
  LIZARD_ASSIGN_OR_RETURN(SectionBuffer partial, make_section(m.aggregate, m, req.params));

  // Each attempt plans the rows over the workers present; when a worker is
  // lost, its rows go to the others and the run goes on so that its result is
  // the one an undisturbed run gives.  Rows are reloaded from their sources,
  // so where kernels keep per-row values of their own (dataset fields that
  // are not inputs) the run starts over from the initial state; otherwise the
  // interrupted iteration runs again from the state it started with.
  constexpr int kMaxAttempts = 20;
  bool per_row_values = false;
  for (const auto& f : m.dataset) per_row_values = per_row_values || !f.input;
  const SectionBuffer initial_state = state;
  int64_t it = 0;
  bool done = false;
  std::string wire_id;
  std::vector<std::string> participants;
  // Whatever happens, the workers of the last attempt free the run's buffers.
  struct Release {
    Impl* self;
    const std::string& wire_id;
    const std::vector<std::string>& participants;
    bool armed = true;
    ~Release() {
      if (!armed) return;
      for (const auto& id : participants)
        self->send(
            id, Message{MessageType::kRunEnd, {{"run_id", wire_id}, {"want_outputs", false}}, ""});
    }
  } release{this, wire_id, participants};
  for (int attempt = 0; !done; ++attempt) {
    wire_id = run->id + "." + std::to_string(attempt);
    auto started = start_partitions(run, wire_id);
    Status st = started.status();
    if (st.ok()) {
      participants = std::move(started).value();
      for (; it < req.max_iterations && !done; ++it) {
        st = run_one_iteration(run, wire_id, participants, it, &state, &agg, &partial, &done);
        if (!st.ok()) break;
      }
      if (st.ok()) done = true;
    }
    if (st.ok()) break;
    if (!is_worker_loss(st) || attempt + 1 >= kMaxAttempts) return st;
    if (per_row_values) {
      state = initial_state;
      it = 0;
    }
    spdlog::warn("{}: {}; re-planning and resuming at iteration {}", run->id, st.message(), it);
    for (const auto& id : participants)
      send(id, Message{MessageType::kRunEnd, {{"run_id", wire_id}, {"want_outputs", false}}, ""});
    std::lock_guard<std::mutex> l(mu);
    run->recoveries.push_back({{"resumed_at_iteration", it}, {"reason", st.message()}});
    if (per_row_values) {
      run->timings = json::array();
      run->iterations = 0;
    }
  }

  // Gather output fields in row order.
  release.armed = false;
  bool want_outputs = false;
  json wanted = json::array();
  for (size_t k = 0; k < m.dataset.size(); ++k)
    if (req.want_output[k]) wanted.push_back(m.dataset[k].name);
  want_outputs = !wanted.empty();
  for (const auto& id : participants)
    send(id, Message{MessageType::kRunEnd,
                     {{"run_id", wire_id}, {"want_outputs", want_outputs}, {"outputs", wanted}},
                     ""});
  std::map<std::string, OutputField> outputs;
  if (want_outputs) {
    auto outs = collect(*run, wire_id, MessageType::kRunOutputs, participants);
    if (!outs.ok()) return outs.status().with_context("gathering outputs");
    for (size_t k = 0; k < m.dataset.size(); ++k) {
      const FieldSpec& f = m.dataset[k];
      if (!req.want_output[k]) continue;
      OutputField of{f.type, {}, ""};
      LIZARD_ASSIGN_OR_RETURN(of.dims, field_dims(f, m, req.params, req.rows));
      for (const auto& id : participants) {  // plan order == row order
        const Message& msg = outs->at(id);
        size_t off = 0;
        for (const auto& fj : msg.header["fields"]) {
          size_t n = fj.value("bytes", size_t{0});
          if (fj.value("name", "") == f.name) of.bytes.append(msg.payload, off, n);
          off += n;
        }
      }
      outputs[f.name] = std::move(of);
    }
  }
  json result = {{"state", section_to_json(state, m, req.params)},
                 {"aggregate", section_to_json(agg, m, req.params)}};
  std::lock_guard<std::mutex> l(mu);
  run->result = std::move(result);
  run->outputs = std::move(outputs);
  auto add_section = [&](const SectionBuffer& s) {
    for (const auto& slot : s.slots) {
      auto dims = field_dims(*slot.spec, m, req.params);
      run->outputs.emplace(
          slot.spec->name,
          OutputField{slot.spec->type, dims.ok() ? dims.value() : std::vector<int64_t>{},
                      std::string(reinterpret_cast<const char*>(s.data(slot)), slot.bytes)});
    }
  };
  add_section(state);
  add_section(agg);
  return Status::Ok();
}

Status Coordinator::Impl::run_one_iteration(const std::shared_ptr<RunEntry>& run,
                                            const std::string& wire_id,
                                            const std::vector<std::string>& participants,
                                            int64_t it, SectionBuffer* state, SectionBuffer* agg,
                                            SectionBuffer* partial, bool* done) {
  const ProgramEntry& prog = *run->program;
  const Manifest& m = prog.image.manifest;
  const RunRequest& req = run->request;
  auto t0 = Clock::now();
  const std::string state_bytes(state->bytes.begin(), state->bytes.end());
  {
    std::lock_guard<std::mutex> l(mu);
    run->progress_iteration = it;
    run->rows_done.clear();
  }
  for (const auto& id : participants)
    send(id, Message{MessageType::kIterate, {{"run_id", wire_id}, {"iteration", it}}, state_bytes});
  auto results = collect(*run, wire_id, MessageType::kIterationResult, participants);
  if (!results.ok()) return results.status().with_context("iteration " + std::to_string(it));
  auto t_fold = Clock::now();
  set_identity(agg);
  double kernel_ms = 0;
  for (auto& [id, msg] : results.value()) {
    kernel_ms = std::max(kernel_ms, msg.header.value("kernel_ms", 0.0));
    const size_t n = partial->bytes.size();
    if (n == 0) continue;
    if (msg.payload.size() % n != 0)
      return internal_error("worker " + id + " sent an aggregate of " +
                            std::to_string(msg.payload.size()) + " bytes; expected a multiple of " +
                            std::to_string(n));
    for (size_t off = 0; off < msg.payload.size(); off += n) {
      std::memcpy(partial->bytes.data(), msg.payload.data() + off, n);
      fold_into(agg, *partial);
      if (m.has_custom_reducer()) prog.hooks->aggregate(m, req.params, agg, partial);
    }
  }
  *done = prog.hooks->update_state(m, req.params, agg, state, it);
  std::lock_guard<std::mutex> l(mu);
  run->iterations = it + 1;
  for (const auto& e : run->plan.value("executors", json::array()))
    run->rows_done[{e.value("worker", ""), e.value("executor", int64_t{0})}] =
        e.value("rows", int64_t{0});
  run->timings.push_back({{"iteration", it},
                          {"ms", ms_since(t0)},
                          {"kernel_ms", kernel_ms},
                          {"fold_ms", ms_since(t_fold)}});
  return Status::Ok();
}

void Coordinator::Impl::finish(const std::shared_ptr<RunEntry>& run, const Status& st) {
  std::vector<Responder> waiters;
  json record;
  {
    std::lock_guard<std::mutex> l(mu);
    run->status = st.ok() ? "done" : (st.code() == Code::kCancelled ? "cancelled" : "failed");
    run->error = st.ok() ? "" : st.message();
    run->finished_at = now_iso();
    waiters.swap(run->waiters);
    record = run->to_json();
  }
  if (store) {
    for (const auto& [name, f] : run->outputs) {
      Status st = store->save_blob(run->id, name, npy_bytes(f.type, f.dims, f.bytes.data()));
      if (!st.ok()) spdlog::warn("run {}: field {} not saved: {}", run->id, name, st.message());
    }
    persist(*run, record);
  }
  if (st.ok())
    spdlog::info("{} done: {} iteration(s) in {:.1f} ms", run->id, run->iterations,
                 run->elapsed_ms);
  else
    spdlog::warn("{} failed: {}", run->id, st.message());
  for (auto& w : waiters) w(json_response(200, record));
}

Coordinator::Coordinator(CoordinatorOptions opts) : impl_(new Impl(std::move(opts))) {
  std::error_code ec;
  std::filesystem::create_directories(impl_->opts.state_dir, ec);
  impl_->load_programs();
  impl_->restore_runs();
  impl_->datasets = std::make_unique<DatasetStore>(impl_->opts.state_dir);
  impl_->driver = std::thread([this] { impl_->drive(); });
}

Coordinator::~Coordinator() {
  shutdown();
}

void Coordinator::shutdown() {
  {
    std::lock_guard<std::mutex> l(impl_->mu);
    if (impl_->stopping) return;
    impl_->stopping = true;
  }
  impl_->cv.notify_all();
  impl_->events.close();
  if (impl_->driver.joinable()) impl_->driver.join();
  impl_->pool.join();
  std::deque<std::shared_ptr<RunEntry>> queued;
  {
    std::lock_guard<std::mutex> l(impl_->mu);
    queued.swap(impl_->queue);
  }
  for (auto& run : queued)
    impl_->finish(run, unavailable("the server shut down before the run started"));
  // The links belong to the network layer's io context: let them go while it
  // still exists (the hub is stopped, not yet destroyed).
  std::map<std::string, WorkerEntry> workers;
  {
    std::lock_guard<std::mutex> l(impl_->mu);
    workers.swap(impl_->workers);
  }
}

void Coordinator::on_http(HttpRequest req, Responder respond) {
  impl_->handle(std::move(req), std::move(respond));
}

std::variant<std::string, HttpResponse> Coordinator::upload_destination(const HttpRequest& head) {
  if (auto refusal = impl_->check_token(head)) return *refusal;
  std::string id;
  return impl_->datasets->reserve(&id);
}

bool Coordinator::authorize_worker(const std::map<std::string, std::string>& headers) {
  if (impl_->opts.token.empty()) return true;
  auto it = headers.find("authorization");
  bool ok =
      it != headers.end() && constant_time_equals(bearer_token(it->second), impl_->opts.token);
  if (!ok) {  // workers retry every few seconds: say it once a minute
    static std::atomic<int64_t> last{0};
    const int64_t now =
        std::chrono::duration_cast<std::chrono::seconds>(Clock::now().time_since_epoch()).count();
    if (now - last.load() >= 60) {
      last = now;
      spdlog::warn("refused a worker without a valid token");
    }
  }
  return ok;
}

std::string Coordinator::on_worker_connect(std::shared_ptr<WorkerLink> link) {
  std::lock_guard<std::mutex> l(impl_->mu);
  std::string id = "w" + std::to_string(impl_->next_worker++);
  impl_->workers[id] = WorkerEntry{id, std::move(link), false, json::object(), {}, {}, now_iso()};
  spdlog::debug("worker {} connected", id);
  return id;
}

void Coordinator::on_worker_frame(const std::string& worker_id, std::string frame) {
  impl_->on_frame(worker_id, std::move(frame));
}

void Coordinator::on_worker_close(const std::string& worker_id) {
  {
    std::lock_guard<std::mutex> l(impl_->mu);
    impl_->workers.erase(worker_id);
  }
  spdlog::info("worker {} left", worker_id);
  impl_->events.push(WorkerEvent{worker_id, true, {}});
  impl_->cv.notify_all();
}

}  // namespace lizard
