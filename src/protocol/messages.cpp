#include "protocol/messages.h"

#include "dataset/dataset_source_registry.h"

namespace lizard {

using nlohmann::json;

namespace {

// Reads optional header fields with their types checked; the first mismatch
// is kept and reported by status().
class HeaderReader {
 public:
  HeaderReader(const json& h, const char* what) : h_(h), what_(what) {
    if (!h_.is_object()) fail("header is not an object");
  }

  void str(const char* key, std::string* out) {
    if (const json* v = find(key)) {
      if (v->is_string())
        *out = v->get<std::string>();
      else
        fail(std::string(key) + " is not a string");
    }
  }
  void boolean(const char* key, bool* out) {
    if (const json* v = find(key)) {
      if (v->is_boolean())
        *out = v->get<bool>();
      else
        fail(std::string(key) + " is not a boolean");
    }
  }
  void i64(const char* key, int64_t* out) {
    if (const json* v = find(key)) {
      if (v->is_number_integer())
        *out = v->get<int64_t>();
      else
        fail(std::string(key) + " is not an integer");
    }
  }
  void u64(const char* key, uint64_t* out) {
    if (const json* v = find(key)) {
      if (v->is_number_unsigned())
        *out = v->get<uint64_t>();
      else if (v->is_number_integer() && v->get<int64_t>() >= 0)
        *out = static_cast<uint64_t>(v->get<int64_t>());
      else
        fail(std::string(key) + " is not a non-negative integer");
    }
  }
  void number(const char* key, double* out) {
    if (const json* v = find(key)) {
      if (v->is_number())
        *out = v->get<double>();
      else
        fail(std::string(key) + " is not a number");
    }
  }
  void object(const char* key, json* out) {
    if (const json* v = find(key)) {
      if (v->is_object())
        *out = *v;
      else
        fail(std::string(key) + " is not an object");
    }
  }
  // The array under `key` (empty when absent); each element goes to `each`.
  template <typename F>
  void array(const char* key, F each) {
    const json* v = find(key);
    if (!v) return;
    if (!v->is_array()) return fail(std::string(key) + " is not an array");
    for (const auto& e : *v) each(e);
  }
  void fail(const std::string& why) {
    if (error_.empty()) error_ = std::string(what_) + ": " + why;
  }
  Status status() const { return error_.empty() ? Status::Ok() : invalid_argument(error_); }

 private:
  const json* find(const char* key) const {
    if (!h_.is_object()) return nullptr;
    auto it = h_.find(key);
    return it == h_.end() || it->is_null() ? nullptr : &*it;
  }
  const json& h_;
  const char* what_;
  std::string error_;
};

template <typename T>
Result<T> done(const HeaderReader& r, T v) {
  if (!r.status().ok()) return r.status();
  return v;
}

}  // namespace

json HelloMsg::to_json() const {
  json ex = json::array();
  for (const auto& e : executors) ex.push_back(e.to_json());
  json j = {{"hostname", hostname},
            {"version", version},
            {"backend", backend},
            {"backend_note", backend_note},
            {"cpu", {{"model", cpu_model}, {"threads", cpu_threads}}},
            {"executors", ex}};
  if (!slurm_job_id.empty()) j["slurm_job_id"] = slurm_job_id;
  return j;
}

Message HelloMsg::to_message() const {
  return Message{MessageType::kHello, to_json(), ""};
}

Result<HelloMsg> HelloMsg::parse(const json& h) {
  HelloMsg m;
  HeaderReader r(h, "hello");
  r.str("hostname", &m.hostname);
  r.str("version", &m.version);
  r.str("backend", &m.backend);
  r.str("backend_note", &m.backend_note);
  r.str("slurm_job_id", &m.slurm_job_id);
  json cpu = json::object();
  r.object("cpu", &cpu);
  HeaderReader c(cpu, "hello.cpu");
  c.str("model", &m.cpu_model);
  c.i64("threads", &m.cpu_threads);
  if (!c.status().ok()) return c.status();
  r.array("executors", [&](const json& e) {
    if (!e.is_object()) return r.fail("an executor is not an object");
    try {
      m.executors.push_back(ExecutorInfo::from_json(e));
    } catch (const json::exception&) {
      r.fail("an executor has a field of the wrong type");
    }
  });
  return done(r, std::move(m));
}

Message WelcomeMsg::to_message() const {
  return Message{MessageType::kWelcome, {{"worker_id", worker_id}}, ""};
}
Result<WelcomeMsg> WelcomeMsg::parse(const json& h) {
  WelcomeMsg m;
  HeaderReader r(h, "welcome");
  r.str("worker_id", &m.worker_id);
  return done(r, std::move(m));
}

Message ProgramMsg::to_message() const {
  return Message{MessageType::kProgram, {{"hash", hash}, {"bundle", bundle}}, ""};
}
Result<ProgramMsg> ProgramMsg::parse(const json& h) {
  ProgramMsg m;
  HeaderReader r(h, "program");
  r.str("hash", &m.hash);
  r.object("bundle", &m.bundle);
  return done(r, std::move(m));
}

Message ProgramStatusMsg::to_message() const {
  return Message{MessageType::kProgramStatus, {{"hash", hash}, {"ok", ok}, {"error", error}}, ""};
}
Result<ProgramStatusMsg> ProgramStatusMsg::parse(const json& h) {
  ProgramStatusMsg m;
  HeaderReader r(h, "program_status");
  r.str("hash", &m.hash);
  r.boolean("ok", &m.ok);
  r.str("error", &m.error);
  return done(r, std::move(m));
}

Message RunStartMsg::to_message(std::string payload) const {
  json p = json::array(), f = json::array();
  for (const auto& e : parts)
    p.push_back({{"executor", e.executor}, {"first_row", e.first_row}, {"rows", e.rows}});
  for (const auto& s : fields) {
    json j = {{"name", s.name}, {"source", "none"}};
    if (s.source) s.source->encode(s, &j);  // its own keys
    f.push_back(std::move(j));
  }
  return Message{MessageType::kRunStart,
                 {{"run_id", run_id},
                  {"hash", hash},
                  {"params", params},
                  {"seed", seed},
                  {"first_row", first_row},
                  {"rows", rows},
                  {"parts", p},
                  {"fields", f},
                  {"data_roots", data_roots},
                  {"progress", progress}},
                 std::move(payload)};
}

Result<RunStartMsg> RunStartMsg::parse(const json& h) {
  RunStartMsg m;
  HeaderReader r(h, "run_start");
  r.str("run_id", &m.run_id);
  r.str("hash", &m.hash);
  r.object("params", &m.params);
  r.u64("seed", &m.seed);
  r.i64("first_row", &m.first_row);
  r.i64("rows", &m.rows);
  r.boolean("progress", &m.progress);
  r.array("parts", [&](const json& e) {
    HeaderReader pr(e, "run_start part");
    PartSpec p;
    pr.i64("executor", &p.executor);
    pr.i64("first_row", &p.first_row);
    pr.i64("rows", &p.rows);
    if (!pr.status().ok()) return r.fail(pr.status().message());
    if (p.executor < 0 || p.first_row < 0 || p.rows < 0) return r.fail("a part is negative");
    m.parts.push_back(p);
  });
  r.array("fields", [&](const json& e) {
    HeaderReader fr(e, "run_start field");
    FieldSource s;
    std::string source = "none";
    fr.str("name", &s.name);
    fr.str("source", &source);
    if (!fr.status().ok()) return r.fail(fr.status().message());
    auto kind = DatasetSourceRegistry::global().for_wire(source);
    if (!kind.ok()) return r.fail("run_start field: " + kind.status().message());
    s.source = kind.value();
    if (s.source) {
      Status read = s.source->decode(source, e, &s);
      if (!read.ok()) return r.fail("run_start field: " + read.message());
    }
    m.fields.push_back(std::move(s));
  });
  r.array("data_roots", [&](const json& e) {
    if (!e.is_string()) return r.fail("data_roots holds a non-string");
    m.data_roots.push_back(e.get<std::string>());
  });
  return done(r, std::move(m));
}

Message RunReadyMsg::to_message() const {
  return Message{MessageType::kRunReady,
                 {{"run_id", run_id},
                  {"ok", ok},
                  {"error", error},
                  {"compile_ms", compile_ms},
                  {"compile_cache_hit", compile_cache_hit},
                  {"missing", missing},
                  {"file_bytes_read", file_bytes_read},
                  {"file_bytes_kept", file_bytes_kept}},
                 ""};
}
Result<RunReadyMsg> RunReadyMsg::parse(const json& h) {
  RunReadyMsg m;
  HeaderReader r(h, "run_ready");
  r.str("run_id", &m.run_id);
  r.boolean("ok", &m.ok);
  r.str("error", &m.error);
  r.number("compile_ms", &m.compile_ms);
  r.boolean("compile_cache_hit", &m.compile_cache_hit);
  r.u64("file_bytes_read", &m.file_bytes_read);
  r.u64("file_bytes_kept", &m.file_bytes_kept);
  r.array("missing", [&](const json& e) {
    if (!e.is_number_integer() || e.get<int64_t>() < 0)
      return r.fail("a missing field is not an index");
    m.missing.push_back(e.get<int64_t>());
  });
  return done(r, std::move(m));
}

Message LoopMsg::to_message(std::string payload) const {
  return Message{MessageType::kLoop,
                 {{"run_id", run_id},
                  {"first_iteration", first_iteration},
                  {"max_iterations", max_iterations},
                  {"hook_timeout_ms", hook_timeout_ms}},
                 std::move(payload)};
}
Result<LoopMsg> LoopMsg::parse(const json& h) {
  LoopMsg m;
  HeaderReader r(h, "loop");
  r.str("run_id", &m.run_id);
  r.i64("first_iteration", &m.first_iteration);
  r.i64("max_iterations", &m.max_iterations);
  r.i64("hook_timeout_ms", &m.hook_timeout_ms);
  return done(r, std::move(m));
}

Message RunEndMsg::to_message() const {
  return Message{MessageType::kRunEnd,
                 {{"run_id", run_id}, {"want_outputs", want_outputs}, {"outputs", outputs}},
                 ""};
}
Result<RunEndMsg> RunEndMsg::parse(const json& h) {
  RunEndMsg m;
  HeaderReader r(h, "run_end");
  r.str("run_id", &m.run_id);
  r.boolean("want_outputs", &m.want_outputs);
  r.array("outputs", [&](const json& e) {
    if (!e.is_string()) return r.fail("an output name is not a string");
    m.outputs.push_back(e.get<std::string>());
  });
  return done(r, std::move(m));
}

Message RunOutputsMsg::to_message(std::string payload) const {
  json f = json::array();
  for (const auto& p : fields) f.push_back({{"name", p.name}, {"bytes", p.bytes}});
  return Message{MessageType::kRunOutputs,
                 {{"run_id", run_id}, {"ok", ok}, {"error", error}, {"fields", f}},
                 std::move(payload)};
}
Result<RunOutputsMsg> RunOutputsMsg::parse(const json& h) {
  RunOutputsMsg m;
  HeaderReader r(h, "run_outputs");
  r.str("run_id", &m.run_id);
  r.boolean("ok", &m.ok);
  r.str("error", &m.error);
  r.array("fields", [&](const json& e) {
    HeaderReader fr(e, "run_outputs field");
    OutputPart p;
    fr.str("name", &p.name);
    fr.u64("bytes", &p.bytes);
    if (!fr.status().ok()) return r.fail(fr.status().message());
    m.fields.push_back(std::move(p));
  });
  return done(r, std::move(m));
}

Message DataChunkMsg::to_message(std::string payload) const {
  return Message{MessageType::kDataChunk,
                 {{"run_id", run_id},
                  {"field", field},
                  {"offset", offset},
                  {"bytes", bytes},
                  {"total", total}},
                 std::move(payload)};
}
Result<DataChunkMsg> DataChunkMsg::parse(const json& h) {
  DataChunkMsg m;
  HeaderReader r(h, "data_chunk");
  r.str("run_id", &m.run_id);
  r.u64("field", &m.field);
  r.u64("offset", &m.offset);
  r.u64("bytes", &m.bytes);
  r.u64("total", &m.total);
  return done(r, std::move(m));
}

Message ProgressMsg::to_message() const {
  if (compiling) return Message{MessageType::kProgress, {{"run_id", run_id}, {"compiling", true}}};
  return Message{MessageType::kProgress,
                 {{"run_id", run_id},
                  {"iteration", iteration},
                  {"executor", executor},
                  {"rows_done", rows_done}},
                 ""};
}
Result<ProgressMsg> ProgressMsg::parse(const json& h) {
  ProgressMsg m;
  HeaderReader r(h, "progress");
  r.str("run_id", &m.run_id);
  r.i64("iteration", &m.iteration);
  r.i64("executor", &m.executor);
  r.i64("rows_done", &m.rows_done);
  r.boolean("compiling", &m.compiling);
  return done(r, std::move(m));
}

namespace {

// Measurements with unknown values (< 0) as null.
json measured(const std::vector<double>& v) {
  json out = json::array();
  for (double x : v) out.push_back(x < 0 ? json(nullptr) : json(x));
  return out;
}

}  // namespace

Message ResourcesMsg::to_message() const {
  json h = {{"free_memory", free_memory}};
  if (!utilization.empty()) h["utilization"] = measured(utilization);
  if (!launch_delay_us.empty()) h["launch_delay_us"] = measured(launch_delay_us);
  if (!kept.empty()) {
    json all = json::array();
    for (const auto& one : kept) {
      json list = json::array();
      for (const auto& e : one) {
        json entry = {{"key", e.key}, {"description", e.description}, {"bytes", e.bytes}};
        if (!e.source.empty())
          entry["source"] = e.source, entry["rows"] = {e.first_row, e.first_row + e.rows};
        list.push_back(std::move(entry));
      }
      all.push_back(std::move(list));
    }
    h["kept"] = std::move(all);
  }
  return Message{MessageType::kResources, std::move(h), ""};
}
Result<ResourcesMsg> ResourcesMsg::parse(const json& h) {
  ResourcesMsg m;
  HeaderReader r(h, "resources");
  r.array("free_memory", [&](const json& e) {
    if (!e.is_number_unsigned()) return r.fail("free_memory holds a non-count");
    m.free_memory.push_back(e.get<uint64_t>());
  });
  auto measurements = [&](const char* key, std::vector<double>* out) {
    r.array(key, [&, key](const json& e) {
      if (e.is_null()) return out->push_back(-1);
      if (!e.is_number() || e.get<double>() < 0)
        return r.fail(std::string(key) + " holds a value that is not a non-negative number");
      out->push_back(e.get<double>());
    });
  };
  measurements("utilization", &m.utilization);
  measurements("launch_delay_us", &m.launch_delay_us);
  r.array("kept", [&](const json& one) {
    if (!one.is_array()) return r.fail("kept holds a non-list");
    std::vector<KeptRowsEntry> list;
    for (const auto& e : one) {
      HeaderReader er(e, "kept rows");
      KeptRowsEntry k;
      er.str("key", &k.key);
      er.str("description", &k.description);
      er.u64("bytes", &k.bytes);
      er.str("source", &k.source);
      std::vector<int64_t> range;
      er.array("rows", [&](const json& b) {
        if (!b.is_number_integer()) return er.fail("rows holds a non-integer");
        range.push_back(b.get<int64_t>());
      });
      if (!range.empty() && (range.size() != 2 || range[1] < range[0]))
        er.fail("rows is not a range [begin, end]");
      else if (!range.empty())
        k.first_row = range[0], k.rows = range[1] - range[0];
      if (!er.status().ok()) return r.fail(er.status().message());
      list.push_back(std::move(k));
    }
    m.kept.push_back(std::move(list));
  });
  return done(r, std::move(m));
}

Message RunAbortMsg::to_message() const {
  return Message{MessageType::kRunAbort, {{"run_id", run_id}, {"reason", reason}}, ""};
}
Result<RunAbortMsg> RunAbortMsg::parse(const json& h) {
  RunAbortMsg m;
  HeaderReader r(h, "run_abort");
  r.str("run_id", &m.run_id);
  r.str("reason", &m.reason);
  if (m.run_id.empty()) r.fail("run_id is missing");
  return done(r, std::move(m));
}

Message BuildAheadMsg::to_message() const {
  return Message{MessageType::kBuildAhead, {{"hash", hash}, {"params", params}}, ""};
}
Result<BuildAheadMsg> BuildAheadMsg::parse(const json& h) {
  BuildAheadMsg m;
  HeaderReader r(h, "build_ahead");
  r.str("hash", &m.hash);
  r.object("params", &m.params);
  if (m.hash.empty()) r.fail("hash is missing");
  return done(r, std::move(m));
}

std::string_view run_of_wire_id(std::string_view wire_id) {
  return wire_id.substr(0, wire_id.rfind('.'));
}

std::string wire_run_id_of(MessageType type, const json& header, std::string_view packed) {
  if (has_packed_header(type)) return std::string(packed_run_id(packed));
  auto it = header.find("run_id");
  return it != header.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::optional<std::string> reported_error(MessageType type, const json& header,
                                          std::string_view packed) {
  auto failed = [](bool ok, std::string error) -> std::optional<std::string> {
    if (ok) return std::nullopt;
    return error.empty() ? "failed" : error;
  };
  switch (type) {
    case MessageType::kIterationResult: {
      auto m = IterationResultMsg::parse(packed);
      return m.ok() ? failed(m->ok, m->error) : m.status().message();
    }
    case MessageType::kLoopStep: {
      auto m = LoopStepMsg::parse(packed);
      return m.ok() ? failed(m->ok, m->error) : m.status().message();
    }
    default: {
      auto ok = header.find("ok");
      if (ok == header.end() || *ok != false) return std::nullopt;
      auto error = header.find("error");
      return failed(false, error != header.end() && error->is_string() ? error->get<std::string>()
                                                                       : std::string());
    }
  }
}

}  // namespace lizard
