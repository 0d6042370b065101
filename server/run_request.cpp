#include "server/run_request.h"

#include "users/user_directory.h"

#include <random>
#include <vector>

#include "dataset/dataset_source_registry.h"
#include "dataset/json_values.h"

namespace lizard {

using nlohmann::json;

namespace {

constexpr int64_t kDefaultIterationCap = 1000;

Status check_keys(const json& body) {
  static const char* kKeys[] = {
      "params",          "dataset",   "state", "max_iterations", "outputs",  "executors", "gpus",
      "min_free_memory", "timeout_s", "seed",  "owner",          "priority", "share"};
  for (const auto& [k, _] : body.items()) {
    bool known = false;
    for (const char* n : kKeys) known = known || k == n;
    if (!known)
      return invalid_argument(
          "unknown key '" + k +
          "' in the run request (expected params, dataset, state, max_iterations, outputs, "
          "executors or gpus, min_free_memory, timeout_s, seed, priority, share)");
  }
  return Status::Ok();
}

// A field's source, by the kind of source its object names
// (dataset/dataset_source_registry.h).
Result<ParsedSource> parse_source(const Manifest& m, const FieldSpec& f, int64_t width,
                                  const json& spec, const UploadLookup& uploads,
                                  const RunRequestLimits& limits) {
  SourceField field;
  field.what = "dataset field '" + f.name + "'";
  field.type = f.type;
  field.width = width;
  for (const auto& g : m.generate) field.generators.push_back(g.kernel);
  if (!spec.is_object())
    return invalid_argument(field.what +
                            ": expected an object such as {\"values\": [...]} or {\"path\": ...}");
  return DatasetSourceRegistry::global().parse(spec, field, {limits.data_roots, uploads});
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
      ParsedSource none;
      none.width = width;
      out->dataset.push_back(std::move(none));
      continue;
    }
    if (!ds.contains(f.name)) return invalid_argument("missing dataset field '" + f.name + "'");
    LIZARD_ASSIGN_OR_RETURN(ParsedSource s, parse_source(m, f, width, ds[f.name], uploads, limits));
    const int64_t n = s.rows;
    if (s.seed) {
      const uint64_t seed = *s.seed;
      if (seeded && seed != out->spec.generate_seed)
        return invalid_argument("dataset field '" + f.name +
                                "': generated fields must share one seed");
      out->spec.generate_seed = seed;
      seeded = true;
    }
    if (rows >= 0 && n != rows)
      return invalid_argument("dataset field '" + f.name + "' has " + std::to_string(n) +
                              " rows but '" + rows_from + "' has " + std::to_string(rows));
    rows = n;
    rows_from = f.name;
    // The version counted of a file the request named (an upload's copy is
    // the server's own, pinned on the wire only: server/run_loader.cpp).
    if (s.file && s.source && s.source->delivery() == RowDelivery::kFile)
      out->spec.files.push_back({f.name, s.path, *s.file, s.content_sha256});
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

// "seed": the run's seed, a uint64 (absent: drawn at random).
Status parse_seed(const json& body, uint64_t* out) {
  if (!body.contains("seed")) {
    std::random_device device;
    *out = (uint64_t{device()} << 32) ^ device();
    return Status::Ok();
  }
  const json& v = body["seed"];
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
    return invalid_argument("`seed` must be an integer from 0 to 18446744073709551615");
  *out = v.get<uint64_t>();
  return Status::Ok();
}

}  // namespace

// The state and aggregate buffers a run allocates (on the server and every
// executor), from the params alone, before anything is allocated.
// The request's `max_iterations` caps the run; where the program has a
// param of that name (whose update hook stops the run by it), it sets that
// param too, over any value `params` gives it, so that the cap the user
// gave is the one that stops the run.
Status cap_sets_param(const Manifest& m, const json& body, json* params) {
  if (!body.contains("max_iterations") || !m.find_param("max_iterations")) return Status::Ok();
  const json& cap = body["max_iterations"];
  if (!cap.is_number_integer() || cap.get<int64_t>() < 1)
    return invalid_argument("`max_iterations` must be a positive integer");
  if (params->is_null()) *params = json::object();
  if (!params->is_object()) return Status::Ok();  // bind_params says what is wrong
  (*params)["max_iterations"] = cap;
  return Status::Ok();
}

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
  json params = body.contains("params") ? body["params"] : json();
  LIZARD_RETURN_IF_ERROR(cap_sets_param(image.manifest, body, &params));
  LIZARD_ASSIGN_OR_RETURN(out.params, bind_params(image.manifest, params));
  // Shapes must resolve with these params, to sizes within the limits,
  // before anything else is read.
  LIZARD_RETURN_IF_ERROR(check_state_bytes(image.manifest, out.params, limits));
  out.spec.hash = image.hash;
  out.spec.params = out.params.to_json(image.manifest);
  LIZARD_RETURN_IF_ERROR(parse_seed(body, &out.spec.run_seed));
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
  if (body.contains("priority")) {
    const json& v = body["priority"];
    if (!v.is_number_integer() || v.get<int64_t>() < -1000 || v.get<int64_t>() > 1000)
      return invalid_argument(
          "`priority` must be an integer from -1000 to 1000 (higher first "
          "among your own runs)");
    out.priority = v.get<int64_t>();
  }
  if (body.contains("share")) {
    const json& v = body["share"];
    bool ok = v.is_array();
    for (const json& name : ok ? v : json::array())
      ok = ok && name.is_string() && valid_share_name(name.get<std::string>());
    if (!ok)
      return invalid_argument(
          "`share` must be a list of user names (or \"*\" for every user) who may read the run's "
          "result, fields and logs");
    out.share = v.get<std::vector<std::string>>();
  }
  if (body.contains("owner")) {
    if (!body["owner"].is_string()) return invalid_argument("`owner` must be a user's name");
    out.owner = body["owner"].get<std::string>();
  }
  return out;
}

std::vector<std::string> row_sources(const RunRequest& r) {
  std::vector<std::string> out;
  for (const ParsedSource& s : r.dataset)
    if (!s.row_source.empty()) out.push_back(s.row_source);
  return out;
}

size_t drop_inline_rows(RunRequest* r) {
  size_t bytes = r->state ? r->state->bytes.size() : 0;
  for (ParsedSource& src : r->dataset) {
    bytes += src.values.size();
    std::vector<uint8_t>().swap(src.values);
  }
  r->state.reset();
  return bytes;
}

}  // namespace lizard
