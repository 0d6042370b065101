#include "server/run_request.h"

#include <sys/stat.h>

#include <filesystem>

#include "dataset/dataset_file.h"
#include "dataset/file_rows_key.h"
#include "dataset/json_values.h"

#include <vector>

namespace lizard {

using nlohmann::json;

namespace {

constexpr int64_t kDefaultIterationCap = 1000;

Status check_keys(const json& body) {
  static const char* kKeys[] = {"params",         "dataset",         "state",
                                "max_iterations", "outputs",         "executors",
                                "gpus",           "min_free_memory", "timeout_s"};
  for (const auto& [k, _] : body.items()) {
    bool known = false;
    for (const char* n : kKeys) known = known || k == n;
    if (!known)
      return invalid_argument(
          "unknown key '" + k +
          "' in the run request (expected params, dataset, state, max_iterations, outputs, "
          "executors or gpus, min_free_memory, timeout_s)");
  }
  return Status::Ok();
}

Result<DatasetSource> parse_generate(const Manifest& m, const std::string& what, const json& spec,
                                     DatasetSource s, int64_t* rows, uint64_t* seed) {
  if (!spec["generate"].is_string())
    return invalid_argument(what + ": `generate` must name a generator kernel");
  s.kind = DatasetSource::Kind::kGenerate;
  s.generator = spec["generate"].get<std::string>();
  if (!m.find_generator(s.generator)) {
    std::string known;
    for (const auto& g : m.generate) known += (known.empty() ? "" : ", ") + g.kernel;
    return invalid_argument(what + ": '" + s.generator +
                            "' is not in the manifest's `generate` list (" +
                            (known.empty() ? "it has none" : known) + ")");
  }
  if (!spec.contains("rows") || !spec["rows"].is_number_integer() ||
      spec["rows"].get<int64_t>() < 1)
    return invalid_argument(what + ": a generated field needs `rows`, a positive integer");
  *rows = spec["rows"].get<int64_t>();
  if (spec.contains("seed")) {
    if (!spec["seed"].is_number_unsigned() &&
        !(spec["seed"].is_number_integer() && spec["seed"].get<int64_t>() >= 0))
      return invalid_argument(what + ": `seed` must be a non-negative integer");
    *seed = spec["seed"].get<uint64_t>();
  }
  return s;
}

// A source is one kind (`values`, `path`, `upload` or `generate`) with the
// keys of that kind only.
Status check_source_keys(const json& spec, const std::string& what) {
  struct Kind {
    const char* key;
    std::vector<const char*> allowed;
  };
  static const Kind kKinds[] = {{"values", {"values"}},
                                {"path", {"path", "format"}},
                                {"upload", {"upload"}},
                                {"generate", {"generate", "rows", "seed"}}};
  const Kind* kind = nullptr;
  for (const Kind& k : kKinds) {
    if (!spec.contains(k.key)) continue;
    if (kind)
      return invalid_argument(what + ": give one of `values`, `path`, `upload` or `generate`, " +
                              "not both `" + kind->key + "` and `" + k.key + "`");
    kind = &k;
  }
  if (!kind) return Status::Ok();  // the caller says what is missing
  for (const auto& [key, _] : spec.items()) {
    bool known = false;
    for (const char* a : kind->allowed) known = known || key == a;
    if (known) continue;
    std::string list;
    for (const char* a : kind->allowed) list += std::string(list.empty() ? "" : ", ") + a;
    return invalid_argument(what + ": unknown key '" + key + "' in a `" + kind->key +
                            "` source (expected " + list + ")");
  }
  return Status::Ok();
}

const DataRoots kAnywhere;

Result<DatasetSource> parse_source(const Manifest& m, const FieldSpec& f, int64_t width,
                                   const json& spec, int64_t* rows, uint64_t* seed,
                                   const UploadLookup& uploads, const RunRequestLimits& limits) {
  const std::string what = "dataset field '" + f.name + "'";
  DatasetSource s;
  s.width = width;
  if (!spec.is_object())
    return invalid_argument(what +
                            ": expected an object such as {\"values\": [...]} or {\"path\": ...}");
  LIZARD_RETURN_IF_ERROR(check_source_keys(spec, what));
  if (spec.contains("values")) {
    s.kind = DatasetSource::Kind::kInline;
    LIZARD_ASSIGN_OR_RETURN(s.values,
                            values_from_json(spec["values"], f.type, {-1, width}, what, rows));
    return s;
  }
  if (spec.contains("path")) {
    if (!spec["path"].is_string()) return invalid_argument(what + ": `path` must be a string");
    s.kind = DatasetSource::Kind::kPath;
    s.path = spec["path"].get<std::string>();
    const DataRoots& roots = limits.data_roots ? *limits.data_roots : kAnywhere;
    auto at = roots.locate(s.path);
    if (!at.ok()) return at.status().with_context(what);
    std::string fmt;
    if (spec.contains("format")) {
      if (!spec["format"].is_string())
        return invalid_argument(what + ": `format` must be a string");
      fmt = spec["format"].get<std::string>();
    }
    auto format = resolve_file_format(fmt, s.path);
    if (!format.ok()) return format.status().with_context(what);
    s.format = format.value();
    // Opened without blocking, and only a regular file, before any read.
    auto file = roots.open(at.value());
    if (!file.ok()) return file.status().with_context(what);
    auto n = count_rows(&file.value(), s.format, f.type, width);
    if (!n.ok()) return n.status().with_context(what);
    *rows = n.value();
    if (struct stat st{}; ::fstat(file->fd(), &st) == 0)
      s.row_source = FileIdentity::of(st).key_prefix();
    return s;
  }
  if (spec.contains("generate")) return parse_generate(m, what, spec, std::move(s), rows, seed);
  if (spec.contains("upload")) {
    if (!spec["upload"].is_string())
      return invalid_argument(what + ": `upload` must be a dataset id");
    if (!uploads) return invalid_argument(what + ": uploads are not available here");
    auto found = uploads(spec["upload"].get<std::string>());
    if (!found.ok()) return found.status().with_context(what);
    s.kind = DatasetSource::Kind::kUpload;
    s.path = found->first;
    s.format = found->second;
    auto n = count_rows(s.path, s.format, f.type, width);
    if (!n.ok()) {
      // The upload's id names the file; its place in the server's state
      // directory means nothing to the client.
      std::string message = n.status().message();
      if (message.rfind(s.path + ": ", 0) == 0) message.erase(0, s.path.size() + 2);
      return Status(n.status().code(),
                    what + " (upload " + spec["upload"].get<std::string>() + "): " + message);
    }
    *rows = n.value();
    return s;
  }
  return invalid_argument(what + ": give `values`, `path`, `upload` or `generate`");
}

// A row of every dataset field, and all rows of it, must have a size that
// fits the arithmetic (workers check their memory when the run starts).
Status check_row_bytes(const FieldSpec& f, int64_t width, const RunRequestLimits& limits) {
  uint64_t row_bytes = 0;
  if (__builtin_mul_overflow(static_cast<uint64_t>(width), dtype_size(f.type), &row_bytes) ||
      row_bytes > limits.max_state_bytes)
    return too_large("dataset field '" + f.name + "': one row of " + std::to_string(width) + " " +
                     dtype_name(f.type) + " values is larger than the server's limit of " +
                     std::to_string(limits.max_state_bytes) + " bytes (--max-state-bytes)");
  return Status::Ok();
}

Status parse_dataset(const ProgramImage& image, const json& body, const UploadLookup& uploads,
                     const RunRequestLimits& limits, RunRequest* out) {
  const Manifest& m = image.manifest;
  static const json kNone = json::object();
  const json& ds = body.contains("dataset") ? body["dataset"] : kNone;
  if (!ds.is_object()) return invalid_argument("`dataset` must be an object of field: source");
  for (const auto& [k, _] : ds.items()) {
    const FieldSpec* f = m.find_dataset(k);
    if (!f) return invalid_argument("`dataset` names '" + k + "', which is not a dataset field");
    if (!f->input)
      return invalid_argument("dataset field '" + k + "' is not an input (input: false)");
  }
  int64_t rows = -1;
  bool seeded = false;
  std::string rows_from;
  for (const auto& f : m.dataset) {
    LIZARD_ASSIGN_OR_RETURN(int64_t width, row_width(f, m, out->params));
    LIZARD_RETURN_IF_ERROR(check_row_bytes(f, width, limits));
    if (!f.input) {
      DatasetSource none;
      none.width = width;
      out->dataset.push_back(std::move(none));
      continue;
    }
    if (!ds.contains(f.name)) return invalid_argument("missing dataset field '" + f.name + "'");
    int64_t n = 0;
    uint64_t seed = 0;
    LIZARD_ASSIGN_OR_RETURN(DatasetSource s,
                            parse_source(m, f, width, ds[f.name], &n, &seed, uploads, limits));
    if (s.kind == DatasetSource::Kind::kGenerate) {
      if (seeded && seed != out->seed)
        return invalid_argument("dataset field '" + f.name +
                                "': generated fields must share one seed");
      out->seed = seed;
      seeded = true;
    }
    if (rows >= 0 && n != rows)
      return invalid_argument("dataset field '" + f.name + "' has " + std::to_string(n) +
                              " rows but '" + rows_from + "' has " + std::to_string(rows));
    rows = n;
    rows_from = f.name;
    out->dataset.push_back(std::move(s));
  }
  if (rows < 0) return invalid_argument("the program has no input dataset field to take rows from");
  if (rows == 0) return invalid_argument("the dataset has no rows");
  for (const auto& f : m.dataset) {
    LIZARD_ASSIGN_OR_RETURN(int64_t width, row_width(f, m, out->params));
    int64_t all = 0;
    if (__builtin_mul_overflow(rows, width, &all) ||
        __builtin_mul_overflow(all, static_cast<int64_t>(dtype_size(f.type)), &all))
      return too_large("dataset field '" + f.name + "': " + std::to_string(rows) + " rows of " +
                       std::to_string(width) + " values are too large");
  }
  out->rows = rows;
  return Status::Ok();
}

Status parse_state(const ProgramImage& image, const json& body, RunRequest* out) {
  if (!body.contains("state") || body["state"].is_null()) return Status::Ok();
  const Manifest& m = image.manifest;
  const json& st = body["state"];
  if (!st.is_object()) return invalid_argument("`state` must be an object of field: values");
  LIZARD_ASSIGN_OR_RETURN(SectionBuffer buf, make_section(m.state, m, out->params));
  for (const auto& [k, v] : st.items()) {
    const FieldSlot* slot = buf.find(k);
    if (!slot) return invalid_argument("`state` names '" + k + "', which is not a state field");
    LIZARD_ASSIGN_OR_RETURN(auto dims, field_dims(*slot->spec, m, out->params));
    int64_t rows = 0;
    LIZARD_ASSIGN_OR_RETURN(
        auto bytes, values_from_json(v, slot->spec->type, dims, "state field '" + k + "'", &rows));
    if (bytes.size() != slot->bytes)
      return invalid_argument("state field '" + k + "' needs " + std::to_string(slot->count) +
                              " values");
    std::copy(bytes.begin(), bytes.end(), buf.data(*slot));
  }
  out->state = std::move(buf);
  return Status::Ok();
}

// `outputs`: which output fields to gather (default: all of them).
Status parse_outputs(const Manifest& m, const json& body, RunRequest* out) {
  for (const auto& f : m.dataset) out->want_output.push_back(f.output);
  if (!body.contains("outputs")) return Status::Ok();
  const json& o = body["outputs"];
  if (!o.is_array()) return invalid_argument("`outputs` must be a list of output field names");
  std::fill(out->want_output.begin(), out->want_output.end(), false);
  for (const auto& name : o) {
    const FieldSpec* f = name.is_string() ? m.find_dataset(name.get<std::string>()) : nullptr;
    if (!f || !f->output)
      return invalid_argument("`outputs` names " + name.dump() + ", which is not an output field");
    out->want_output[static_cast<size_t>(f - m.dataset.data())] = true;
  }
  return Status::Ok();
}

// "executors" (or "gpus", the same restricted to GPUs): N, or {"min": a,
// "max": b}; absent: every free executor.  "min_free_memory": bytes.
Status parse_executors(const json& body, ExecutorDemand* out) {
  if (body.contains("executors") && body.contains("gpus"))
    return invalid_argument(
        "give `executors` or `gpus`, not both (`gpus` asks for executors that are GPUs)");
  if (body.contains("min_free_memory")) {
    const json& m = body["min_free_memory"];
    if (!m.is_number_unsigned() && !(m.is_number_integer() && m.get<int64_t>() >= 0))
      return invalid_argument(
          "`min_free_memory` must be a number of bytes (a non-negative integer)");
    out->min_free_memory = m.get<uint64_t>();
  }
  const char* key = body.contains("gpus") ? "gpus" : "executors";
  if (!body.contains(key)) return Status::Ok();
  out->gpus_only = body.contains("gpus");
  const json& v = body[key];
  auto count = [](const json& n) { return n.is_number_integer() && n.get<int64_t>() >= 1; };
  const std::string form =
      std::string("`") + key +
      "` must be a positive integer or {\"min\": a, \"max\": b} with 1 <= a <= b";
  if (count(v)) {
    out->min = out->max = v.get<int64_t>();
    return Status::Ok();
  }
  if (!v.is_object()) return invalid_argument(form);
  for (const auto& [k, _] : v.items())
    if (k != "min" && k != "max") return invalid_argument(form);
  if (v.contains("min") && !count(v["min"])) return invalid_argument(form);
  if (v.contains("max") && !count(v["max"])) return invalid_argument(form);
  out->min = v.contains("min") ? v["min"].get<int64_t>() : 1;
  out->max = v.contains("max") ? v["max"].get<int64_t>() : 0;
  if (out->max != 0 && out->max < out->min) return invalid_argument(form);
  return Status::Ok();
}

}  // namespace

// The state and aggregate buffers a run allocates (on the server and every
// executor), from the params alone, before anything is allocated.
Status check_state_bytes(const Manifest& m, const ParamValues& p, const RunRequestLimits& limits) {
  uint64_t total = 0;
  for (const auto* section : {&m.state, &m.aggregate}) {
    LIZARD_ASSIGN_OR_RETURN(uint64_t bytes, section_bytes(*section, m, p));
    total += bytes;  // each at most a few TiB: no overflow
  }
  if (total > limits.max_state_bytes)
    return too_large("state and aggregate take " + std::to_string(total) +
                     " bytes with these params; the server's limit is " +
                     std::to_string(limits.max_state_bytes) + " bytes (--max-state-bytes)");
  return Status::Ok();
}

Result<RunRequest> parse_run_request(const ProgramImage& image, const json& body,
                                     const UploadLookup& uploads, const RunRequestLimits& limits) {
  if (!body.is_object()) return invalid_argument("the run request must be a JSON object");
  LIZARD_RETURN_IF_ERROR(check_keys(body));
  RunRequest out;
  LIZARD_ASSIGN_OR_RETURN(
      out.params, bind_params(image.manifest, body.contains("params") ? body["params"] : json()));
  // Shapes must resolve with these params, to sizes within the limits,
  // before anything else is read.
  LIZARD_RETURN_IF_ERROR(check_state_bytes(image.manifest, out.params, limits));
  LIZARD_RETURN_IF_ERROR(parse_dataset(image, body, uploads, limits, &out));
  LIZARD_RETURN_IF_ERROR(parse_state(image, body, &out));
  out.max_iterations = kDefaultIterationCap;
  if (auto p = out.params.lookup(image.manifest, "max_iterations")) out.max_iterations = *p;
  if (body.contains("max_iterations")) {
    const json& v = body["max_iterations"];
    if (!v.is_number_integer() || v.get<int64_t>() < 1)
      return invalid_argument("`max_iterations` must be a positive integer");
    out.max_iterations = v.get<int64_t>();
  }
  if (out.max_iterations < 1) return invalid_argument("max_iterations must be at least 1");
  LIZARD_RETURN_IF_ERROR(parse_outputs(image.manifest, body, &out));
  LIZARD_RETURN_IF_ERROR(parse_executors(body, &out.executors));
  if (body.contains("timeout_s")) {
    const json& v = body["timeout_s"];
    if (!v.is_number() || v.get<double>() <= 0 || v.get<double>() > 1e9)
      return invalid_argument("`timeout_s` must be a positive number of seconds");
    out.timeout_s = v.get<double>();
  }
  return out;
}

std::vector<std::string> row_sources(const RunRequest& r) {
  std::vector<std::string> out;
  for (const DatasetSource& s : r.dataset) {
    if (s.kind == DatasetSource::Kind::kPath && !s.row_source.empty()) out.push_back(s.row_source);
    if (s.kind == DatasetSource::Kind::kUpload)  // client/upload_cache.h's keys
      out.push_back(std::filesystem::path(s.path).stem().string() + ":");
  }
  return out;
}

}  // namespace lizard
