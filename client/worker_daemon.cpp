#include "client/worker_daemon.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <future>
#include <map>
#include <thread>

#include "client/worker_connection.h"
#include "common/mailbox.h"
#include "dataset/dataset_file.h"
#include "program/bundle.h"
#include "program/reducers.h"
#include "protocol/wire.h"

namespace lizard {

using nlohmann::json;

namespace {

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      auto p = line.find(':');
      if (p != std::string::npos) return line.substr(p + 2);
    }
  return "unknown";
}

std::string hostname() {
  char buf[256] = {0};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

// Runs f(i) for every executor, in parallel when there are several.
template <typename F>
std::vector<Status> for_each_executor(size_t n, F f) {
  std::vector<Status> out(n);
  if (n == 1) {
    out[0] = f(0);
    return out;
  }
  std::vector<std::future<Status>> fs;
  for (size_t i = 0; i < n; ++i) fs.push_back(std::async(std::launch::async, f, i));
  for (size_t i = 0; i < n; ++i) out[i] = fs[i].get();
  return out;
}

Status first_error(const std::vector<Status>& v) {
  for (const auto& s : v)
    if (!s.ok()) return s;
  return Status::Ok();
}

struct ActiveRun {
  std::string id;
  std::shared_ptr<const ProgramImage> program;
  ParamValues params;
  std::vector<size_t> executors;  // indices into the executor list, in row order
  std::vector<int64_t> rows;      // each executor's rows
  bool report_progress = false;   // run iterations in slices, reporting each
};

// Slices of an iteration whose progress is reported: enough to show it
// moving, few enough that each slice's launches stay cheap beside its work.
constexpr int64_t kMinSliceRows = 4096;
constexpr int64_t kMaxSlices = 32;

int64_t slice_count(int64_t rows) {
  return std::clamp<int64_t>(rows / kMinSliceRows, 1, kMaxSlices);
}

}  // namespace

struct WorkerDaemon::Impl {
  WorkerOptions opts;
  std::vector<std::unique_ptr<Executor>> executors;
  std::string backend_note;
  std::map<std::string, std::shared_ptr<const ProgramImage>> programs;
  std::optional<ActiveRun> run;
  // Rows of uploaded fields that arrived ahead of their run_start: by field index.
  std::string chunks_run;
  std::map<size_t, std::vector<uint8_t>> chunks;
  // What the connection's io thread hands the daemon's thread, in order.
  struct InboxItem {
    enum Kind { kConnected, kFrame, kLost } kind;
    std::string frame;
  };
  Mailbox<InboxItem> inbox;
  std::vector<uint64_t> reported_free;  // free memory per executor, as last reported
  std::unique_ptr<WorkerConnection> conn;
  std::atomic<bool> stopping{false};

  json hello() {
    json ex = json::array();
    reported_free.clear();
    for (const auto& e : executors) {
      e->refresh_free_memory();
      reported_free.push_back(e->info().free_memory);
      ExecutorInfo info = e->info();
      if (opts.weight > 0) info.weight = opts.weight;
      ex.push_back(info.to_json());
    }
    return {{"hostname", hostname()},
            {"version", LIZARD_VERSION},
            {"backend", executors.empty() ? "none" : executors[0]->info().kind},
            {"backend_note", backend_note},
            {"cpu", {{"model", cpu_model()}, {"threads", std::thread::hardware_concurrency()}}},
            {"executors", ex}};
  }

  void reply(MessageType t, json header, std::string payload = "") {
    conn->send(encode(Message{t, std::move(header), std::move(payload)}));
  }

  void report_resources();
  void handle(const MessageView& m);
  void on_program(const MessageView& m);
  void on_chunk(const MessageView& m);
  Status start_run(const MessageView& m);
  Status iterate(const MessageView& m, std::string* payload, double* kernel_ms);
  Status end_run(bool want_outputs, const std::vector<std::string>& wanted, json* fields,
                 std::string* payload);
  void abort_run();
};

void WorkerDaemon::Impl::handle(const MessageView& m) {
  const std::string run_id = m.header.value("run_id", "");
  switch (m.type) {
    case MessageType::kWelcome:
      spdlog::info("registered with the server as {}", m.header.value("worker_id", "?"));
      return;
    case MessageType::kProgram:
      return on_program(m);
    case MessageType::kDataChunk:
      return on_chunk(m);
    case MessageType::kRunStart: {
      Status st = start_run(m);
      if (!st.ok()) {
        spdlog::warn("run {}: {}", run_id, st.message());
        abort_run();
      }
      return reply(MessageType::kRunReady,
                   {{"run_id", run_id}, {"ok", st.ok()}, {"error", st.message()}});
    }
    case MessageType::kIterate: {
      std::string payload;
      double kernel_ms = 0;
      Status st = iterate(m, &payload, &kernel_ms);
      json h = {{"run_id", run_id},
                {"iteration", m.header.value("iteration", 0)},
                {"ok", st.ok()},
                {"kernel_ms", kernel_ms}};
      if (!st.ok()) h["error"] = st.message();
      return reply(MessageType::kIterationResult, h, std::move(payload));
    }
    case MessageType::kRunEnd: {
      if (!run || run->id != run_id) return;
      json fields = json::array();
      std::string payload;
      bool want = m.header.value("want_outputs", false);
      std::vector<std::string> wanted;
      if (m.header.contains("outputs") && m.header["outputs"].is_array())
        for (const auto& n : m.header["outputs"])
          if (n.is_string()) wanted.push_back(n.get<std::string>());
      Status st = end_run(want, wanted, &fields, &payload);
      if (want)
        reply(MessageType::kRunOutputs,
              {{"run_id", run_id}, {"ok", st.ok()}, {"error", st.message()}, {"fields", fields}},
              std::move(payload));
      return;
    }
    default:
      spdlog::debug("ignoring {} message", message_type_name(m.type));
  }
}

// Tells the server how much memory each executor has free now, when that
// moved by 16 MiB or more since the last report (other processes on the node
// allocate and free too), so that plans are capped by what is free.
void WorkerDaemon::Impl::report_resources() {
  constexpr uint64_t kReportStep = uint64_t{16} << 20;
  bool changed = reported_free.size() != executors.size();
  json free = json::array();
  for (size_t i = 0; i < executors.size(); ++i) {
    executors[i]->refresh_free_memory();
    const uint64_t now = executors[i]->info().free_memory;
    free.push_back(now);
    if (i < reported_free.size()) {
      const uint64_t before = reported_free[i];
      changed = changed || (now > before ? now - before : before - now) >= kReportStep;
    }
  }
  if (!changed) return;
  reported_free = free.get<std::vector<uint64_t>>();
  reply(MessageType::kResources, {{"free_memory", free}});
}

// Copies a chunk of uploaded rows into its field's buffer, which is
// allocated once at the size the first chunk announces.
void WorkerDaemon::Impl::on_chunk(const MessageView& m) {
  const std::string run_id = m.header.value("run_id", "");
  if (run_id != chunks_run) {
    chunks.clear();
    chunks_run = run_id;
  }
  std::vector<uint8_t>& buf = chunks[m.header.value("field", size_t{0})];
  const size_t offset = m.header.value("offset", size_t{0});
  const size_t total = m.header.value("total", size_t{0});
  if (buf.empty() && total > 0) buf.resize(total);
  if (offset > buf.size() || m.payload.size() > buf.size() - offset) {
    spdlog::warn("run {}: rows at byte {} lie outside the {} bytes announced; dropped", run_id,
                 offset, buf.size());
    return;
  }
  if (!m.payload.empty()) std::memcpy(buf.data() + offset, m.payload.data(), m.payload.size());
}

void WorkerDaemon::Impl::on_program(const MessageView& m) {
  const std::string hash = m.header.value("hash", "");
  auto bundle = ProgramBundle::from_json(m.header.contains("bundle") ? m.header["bundle"] : json());
  Status st = bundle.status();
  std::shared_ptr<ProgramImage> image;
  if (st.ok()) {
    auto img = make_program_image(bundle.value());
    st = img.status();
    if (st.ok()) image = std::make_shared<ProgramImage>(std::move(img).value());
  }
  if (st.ok() && image->hash != hash) st = internal_error("program checksum mismatch");
  if (st.ok()) {
    auto t0 = std::chrono::steady_clock::now();
    st = first_error(
        for_each_executor(executors.size(), [&](size_t i) { return executors[i]->build(*image); }));
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (st.ok()) {
      programs[hash] = image;
      spdlog::info("built program {} ({}) in {:.0f} ms", hash.substr(0, 12), image->manifest.name,
                   ms);
    }
  }
  if (!st.ok()) spdlog::warn("program {} did not build: {}", hash.substr(0, 12), st.message());
  reply(MessageType::kProgramStatus, {{"hash", hash}, {"ok", st.ok()}, {"error", st.message()}});
}

Status WorkerDaemon::Impl::start_run(const MessageView& m) {
  abort_run();
  const json& h = m.header;
  auto it = programs.find(h.value("hash", ""));
  if (it == programs.end())
    return not_found("this worker has not built program " + h.value("hash", ""));
  ActiveRun r;
  r.id = h.value("run_id", "");
  r.report_progress = h.value("progress", false);
  r.program = it->second;
  const Manifest& man = r.program->manifest;
  LIZARD_ASSIGN_OR_RETURN(r.params, bind_params(man, h.value("params", json::object())));
  const int64_t worker_first = h.value("first_row", int64_t{0});
  const json& fields = h["fields"];
  if (!fields.is_array() || fields.size() != man.dataset.size())
    return invalid_argument("run_start: field list does not match the manifest");
  std::vector<PartitionData> parts;
  for (const auto& p : h["parts"]) {
    size_t e = p.value("executor", size_t{0});
    if (e >= executors.size())
      return invalid_argument("run_start names executor " + std::to_string(e));
    PartitionData d;
    d.first_row = p.value("first_row", int64_t{0});
    d.rows = p.value("rows", int64_t{0});
    for (size_t k = 0; k < man.dataset.size(); ++k) {
      const FieldSpec& f = man.dataset[k];
      const json& src = fields[k];
      LIZARD_ASSIGN_OR_RETURN(int64_t width, row_width(f, man, r.params));
      const size_t row_bytes = static_cast<size_t>(width) * dtype_size(f.type);
      std::vector<uint8_t> buf;
      const std::string kind = src.value("source", "none");
      if (kind == "inline") {
        size_t off = src.value("offset", size_t{0}) +
                     row_bytes * static_cast<size_t>(d.first_row - worker_first);
        size_t n = row_bytes * static_cast<size_t>(d.rows);
        if (off + n > m.payload.size())
          return invalid_argument("run_start: inline rows exceed the payload");
        buf.assign(m.payload.begin() + off, m.payload.begin() + off + n);
      } else if (kind == "chunks") {
        std::vector<uint8_t> none;
        std::vector<uint8_t>& all = chunks_run == r.id ? chunks[k] : none;
        size_t off = row_bytes * static_cast<size_t>(d.first_row - worker_first);
        size_t n = row_bytes * static_cast<size_t>(d.rows);
        if (off + n > all.size())
          return invalid_argument("run_start: rows of field '" + f.name + "' did not arrive");
        if (off == 0 && n == all.size())
          buf = std::move(all);  // the usual case: one executor takes all of them
        else
          buf.assign(all.begin() + static_cast<long>(off),
                     all.begin() + static_cast<long>(off + n));
      } else if (kind == "generate") {  // left empty: the executor allocates it zeroed
        const std::string kernel = src.value("kernel", "");
        if (std::find(d.generators.begin(), d.generators.end(), kernel) == d.generators.end())
          d.generators.push_back(kernel);
        d.seed = h.value("seed", uint64_t{0});
      } else if (kind == "path") {
        buf.resize(row_bytes * static_cast<size_t>(d.rows));
        auto fmt = parse_file_format(src.value("format", "raw"));
        if (!fmt.ok()) return fmt.status();
        LIZARD_RETURN_IF_ERROR(read_rows(src.value("path", ""), fmt.value(), f.type, width,
                                         d.first_row, d.rows, buf.data())
                                   .with_context("dataset field '" + f.name + "'"));
      }
      d.fields.push_back(std::move(buf));
    }
    r.executors.push_back(e);
    r.rows.push_back(d.rows);
    parts.push_back(std::move(d));
  }
  chunks.clear();
  chunks_run.clear();
  LIZARD_RETURN_IF_ERROR(first_error(for_each_executor(parts.size(), [&](size_t i) {
    return executors[r.executors[i]]->begin_run(*r.program, r.params, std::move(parts[i]));
  })));
  spdlog::debug("run {}: loaded rows {}..{}", r.id, worker_first,
                worker_first + h.value("rows", int64_t{0}));
  run = std::move(r);
  return Status::Ok();
}

Status WorkerDaemon::Impl::iterate(const MessageView& m, std::string* payload, double* kernel_ms) {
  if (!run || run->id != m.header.value("run_id", ""))
    return not_found("no such run on this worker");
  const Manifest& man = run->program->manifest;
  LIZARD_ASSIGN_OR_RETURN(SectionBuffer state, make_section(man.state, man, run->params));
  if (m.payload.size() != state.bytes.size())
    return invalid_argument("state of " + std::to_string(m.payload.size()) + " bytes; expected " +
                            std::to_string(state.bytes.size()));
  if (!state.bytes.empty()) std::memcpy(state.bytes.data(), m.payload.data(), state.bytes.size());
  // Each executor's aggregates: one, or one per slice when progress is reported.
  const size_t n = run->executors.size();
  std::vector<std::vector<SectionBuffer>> per_executor(n);
  std::vector<double> executor_ms(n, 0.0);
  const int64_t iteration = m.header.value("iteration", int64_t{0});
  LIZARD_RETURN_IF_ERROR(first_error(for_each_executor(n, [&](size_t i) -> Status {
    Executor& e = *executors[run->executors[i]];
    const int64_t rows = run->rows[i];
    const int64_t slices = run->report_progress ? slice_count(rows) : 1;
    for (int64_t k = 0; k < slices; ++k) {
      LIZARD_ASSIGN_OR_RETURN(SectionBuffer a, make_section(man.aggregate, man, run->params));
      IterationStats st;
      if (slices == 1) {
        LIZARD_RETURN_IF_ERROR(e.iterate(state, &a, &st));
      } else {
        const int64_t first = rows * k / slices, end = rows * (k + 1) / slices;
        LIZARD_RETURN_IF_ERROR(e.iterate_rows(state, &a, &st, first, end - first));
        reply(MessageType::kProgress, {{"run_id", run->id},
                                       {"iteration", iteration},
                                       {"executor", run->executors[i]},
                                       {"rows_done", end}});
      }
      executor_ms[i] += st.kernel_ms;
      per_executor[i].push_back(std::move(a));
    }
    return Status::Ok();
  })));
  std::vector<SectionBuffer> aggs;
  for (auto& v : per_executor)
    for (auto& a : v) aggs.push_back(std::move(a));
  for (double ms : executor_ms) *kernel_ms = std::max(*kernel_ms, ms);
  // Built-in reducers fold here; custom ones go to the server's aggregate hook.
  if (!man.has_custom_reducer()) {
    for (size_t i = 1; i < aggs.size(); ++i) fold_into(&aggs[0], aggs[i]);
    aggs.resize(1);
  }
  for (const auto& a : aggs)
    payload->append(reinterpret_cast<const char*>(a.bytes.data()), a.bytes.size());
  return Status::Ok();
}

Status WorkerDaemon::Impl::end_run(bool want_outputs, const std::vector<std::string>& wanted,
                                   json* fields, std::string* payload) {
  const Manifest& man = run->program->manifest;
  std::vector<std::vector<std::vector<uint8_t>>> outs(run->executors.size());
  Status st;
  for (size_t i = 0; i < run->executors.size(); ++i) {
    auto r = executors[run->executors[i]]->end_run(want_outputs);
    if (!r.ok()) {
      st = r.status();
      continue;
    }
    outs[i] = std::move(r).value();
  }
  if (want_outputs && st.ok()) {
    for (size_t k = 0; k < man.dataset.size(); ++k) {
      if (!man.dataset[k].output) continue;
      if (std::find(wanted.begin(), wanted.end(), man.dataset[k].name) == wanted.end()) continue;
      size_t bytes = 0;
      for (const auto& o : outs) {
        if (k < o.size()) {
          payload->append(reinterpret_cast<const char*>(o[k].data()), o[k].size());
          bytes += o[k].size();
        }
      }
      fields->push_back({{"name", man.dataset[k].name}, {"bytes", bytes}});
    }
  }
  run.reset();
  return st;
}

void WorkerDaemon::Impl::abort_run() {
  if (!run) return;
  for (size_t e : run->executors) (void)executors[e]->end_run(false);
  run.reset();
}

WorkerDaemon::WorkerDaemon(WorkerOptions opts) : impl_(new Impl) {
  impl_->opts = std::move(opts);
}
WorkerDaemon::~WorkerDaemon() = default;

Status WorkerDaemon::init() {
  LIZARD_ASSIGN_OR_RETURN(impl_->executors,
                          make_executors(impl_->opts.backend, &impl_->backend_note));
  if (!impl_->backend_note.empty()) spdlog::warn("{}", impl_->backend_note);
  for (const auto& e : impl_->executors) {
    const auto& i = e->info();
    spdlog::info("executor: {} {} ({}{} multiprocessors/threads, {:.1f} GiB)", i.kind, i.name,
                 i.arch.empty() ? "" : i.arch + ", ", i.sm_count, i.total_memory / double(1 << 30));
  }
  return Status::Ok();
}

bool WorkerDaemon::run() {
  Impl* d = impl_.get();
  d->conn = std::make_unique<WorkerConnection>(
      d->opts.host, d->opts.port, d->opts.token,
      ConnectionCallbacks{
          [d] {
            d->inbox.push({Impl::InboxItem::kConnected, {}});
          },
          [d](std::string f) {
            d->inbox.push({Impl::InboxItem::kFrame, std::move(f)});
          },
          [d] {
            d->inbox.push({Impl::InboxItem::kLost, {}});
          },
      });
  d->conn->start();
  while (!d->stopping) {
    auto item = d->inbox.pop_for(std::chrono::seconds(2));
    if (!item) {  // closed, or two quiet seconds
      if (d->stopping) break;
      if (!d->run) d->report_resources();
      continue;
    }
    if (item->kind == Impl::InboxItem::kConnected) {
      d->reply(MessageType::kHello, d->hello());
      continue;
    }
    if (item->kind == Impl::InboxItem::kLost) {  // drop the run, keep built programs
      d->abort_run();
      continue;
    }
    auto m = decode_view(item->frame);
    if (!m.ok()) {
      spdlog::warn("bad frame from the server: {}", m.status().message());
      continue;
    }
    d->handle(m.value());
    for (const auto& e : d->executors) {
      if (!e->lost()) continue;
      spdlog::error("{} {} is unusable after a kernel fault; restarting the worker", e->info().kind,
                    e->info().name);
      d->conn->stop();
      return true;
    }
  }
  d->conn->stop();
  return false;
}

void WorkerDaemon::stop() {
  impl_->stopping = true;
  impl_->inbox.close();
}

}  // namespace lizard
