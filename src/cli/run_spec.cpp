#include "cli/run_spec.h"

#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "dataset/file_format.h"
#include "dataset/json_values.h"
#include "dataset/npy.h"

namespace lizard {

using nlohmann::json;

namespace {

// Splits NAME=VALUE; `flag` names the option in errors.
Result<std::pair<std::string, std::string>> split_assignment(const std::string& arg,
                                                             const std::string& flag,
                                                             const std::string& form) {
  const size_t eq = arg.find('=');
  if (eq == std::string::npos || eq == 0)
    return invalid_argument(flag + " '" + arg + "': expected " + form);
  return std::make_pair(arg.substr(0, eq), arg.substr(eq + 1));
}

bool is_file_format(const std::string& s) {
  return parse_file_format(s).ok();
}

// Numbers separated by commas and white space, each parsed as JSON.
Result<json> number_list(const std::string& text, const std::string& what) {
  json out = json::array();
  std::string token;
  auto flush = [&]() -> Status {
    if (token.empty()) return Status::Ok();
    json v = json::parse(token, nullptr, false);
    if (!v.is_number()) return invalid_argument(what + ": '" + token + "' is not a number");
    out.push_back(std::move(v));
    token.clear();
    return Status::Ok();
  };
  for (char c : text) {
    if (c == ',' || std::isspace(static_cast<unsigned char>(c))) {
      LIZARD_RETURN_IF_ERROR(flush());
    } else {
      token += c;
    }
  }
  LIZARD_RETURN_IF_ERROR(flush());
  if (out.empty()) return invalid_argument(what + ": no values");
  return out;
}

Result<json> read_npy_values(const std::string& path, const std::string& bytes) {
  LIZARD_ASSIGN_OR_RETURN(size_t header_length, npy_header_length(bytes));
  auto header = parse_npy_header(std::string_view(bytes).substr(0, header_length));
  if (!header.ok()) return header.status().with_context(path);
  if (header->fortran_order)
    return invalid_argument(path + ": Fortran-ordered arrays are not read");
  if (bytes.size() - header_length != header->data_bytes())
    return invalid_argument(path + ": the data is not as long as the header says");
  return values_to_json(bytes.data() + header_length, header->dtype, header->shape);
}

}  // namespace

json RunArgs::request_without_dataset() const {
  json body = {{"params", params}};
  if (!state.empty()) body["state"] = state;
  if (!executors.is_null()) body["executors"] = executors;
  if (max_iterations) body["max_iterations"] = *max_iterations;
  if (seed) body["seed"] = *seed;
  return body;
}

Status add_param(RunArgs* spec, const std::string& arg) {
  LIZARD_ASSIGN_OR_RETURN(auto kv, split_assignment(arg, "--param", "NAME=VALUE, e.g. k=4"));
  if (kv.second.empty()) return invalid_argument("--param '" + arg + "': the value is empty");
  json v = json::parse(kv.second, nullptr, false);
  spec->params[kv.first] = v.is_discarded() ? json(kv.second) : v;
  return Status::Ok();
}

json DatasetArg::generate_source() const {
  json source = generate_options;
  source["generate"] = generator;
  return source;
}

namespace {

constexpr const char* kGenerate = "generate:";
constexpr const char* kUpload = "upload:";

// "blobs,rows=5000,seed=2" after generate:, into `d`.
Status parse_generator(const std::string& arg, const std::string& spec, DatasetArg* d) {
  std::stringstream parts(spec);
  std::string part;
  std::getline(parts, d->generator, ',');
  if (d->generator.empty())
    return invalid_argument("--dataset '" + arg + "': expected generate:KERNEL[,rows=N][,seed=S]");
  while (std::getline(parts, part, ',')) {
    const size_t eq = part.find('=');
    const std::string key = part.substr(0, eq);
    int64_t value = -1;
    try {
      size_t used = 0;
      if (eq != std::string::npos) value = std::stoll(part.substr(eq + 1), &used);
      if (used != part.size() - eq - 1) value = -1;
    } catch (const std::exception&) {
      value = -1;
    }
    if ((key != "rows" && key != "seed") || value < 0)
      return invalid_argument("--dataset '" + arg + "': '" + part +
                              "' is not rows=N or seed=S (whole numbers, 0 or more)");
    d->generate_options[key] = value;
  }
  return Status::Ok();
}

}  // namespace

Status add_dataset(RunArgs* spec, const std::string& arg) {
  DatasetArg d;
  d.file = arg;
  const size_t eq = arg.find('=');
  if (eq != std::string::npos) {
    d.field = arg.substr(0, eq);
    d.file = arg.substr(eq + 1);
    if (d.field.empty())
      return invalid_argument("--dataset '" + arg + "': expected NAME=FILE (or FILE)");
  }
  if (d.file.rfind(kGenerate, 0) == 0) {
    LIZARD_RETURN_IF_ERROR(parse_generator(arg, d.file.substr(std::strlen(kGenerate)), &d));
    d.file.clear();
  } else if (d.file.rfind(kUpload, 0) == 0) {
    d.upload = d.file.substr(std::strlen(kUpload));
    d.file.clear();
    if (d.upload.empty())
      return invalid_argument("--dataset '" + arg + "': expected upload:ID (lizard upload FILE)");
  } else {
    const size_t colon = d.file.find(':');
    if (colon != std::string::npos && is_file_format(d.file.substr(0, colon))) {
      d.format = d.file.substr(0, colon);
      d.file = d.file.substr(colon + 1);
    }
    if (d.file.empty()) return invalid_argument("--dataset '" + arg + "': no file named");
  }
  // NAME1,NAME2=generate:... : one generator fills several fields.
  std::vector<std::string> fields;
  std::stringstream names(d.field);
  for (std::string name; std::getline(names, name, ',');) fields.push_back(name);
  if (fields.size() > 1 && d.generator.empty())
    return invalid_argument("--dataset '" + arg +
                            "': only a generator fills several fields (NAME1,NAME2=generate:"
                            "KERNEL); give each file a --dataset of its own");
  if (fields.empty()) fields.push_back(d.field);
  const bool gap =
      d.field.find(',') != std::string::npos &&
      (d.field.front() == ',' || d.field.back() == ',' || d.field.find(",,") != std::string::npos);
  if (gap) return invalid_argument("--dataset '" + arg + "': an empty field name");
  for (const std::string& field : fields) {
    for (const DatasetArg& other : spec->datasets)
      if (other.field == field)
        return invalid_argument("--dataset: field '" + field + "' is given twice");
    DatasetArg one = d;
    one.field = field;
    spec->datasets.push_back(std::move(one));
  }
  return Status::Ok();
}

Result<json> read_values_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found("cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  const std::string bytes = text.str();
  if (bytes.rfind("\x93NUMPY", 0) == 0) return read_npy_values(path, bytes);
  return number_list(bytes, path);
}

Status add_state(RunArgs* spec, const std::string& arg) {
  LIZARD_ASSIGN_OR_RETURN(
      auto kv, split_assignment(arg, "--state", "NAME=FILE or NAME=VALUES, e.g. shift=0"));
  const std::string what = "--state " + kv.first;
  std::error_code ec;
  json values;
  if (std::filesystem::is_regular_file(kv.second, ec)) {
    LIZARD_ASSIGN_OR_RETURN(values, read_values_file(kv.second));
  } else {
    values = json::parse(kv.second, nullptr, false);
    if (values.is_discarded() || values.is_string() || values.is_object()) {
      if (kv.second.find_first_of("[]{}") != std::string::npos)
        return invalid_argument(what + ": '" + kv.second +
                                "' is neither a file nor valid JSON numbers");
      LIZARD_ASSIGN_OR_RETURN(values, number_list(kv.second, what));
    }
  }
  spec->state[kv.first] = std::move(values);
  return Status::Ok();
}

Result<json> parse_executors_arg(const std::string& arg) {
  auto count = [](const std::string& s, int64_t* out) {
    const char* end = s.data() + s.size();
    auto [p, ec] = std::from_chars(s.data(), end, *out);
    return !s.empty() && ec == std::errc() && p == end && *out >= 1;
  };
  const Status bad = invalid_argument("--executors '" + arg +
                                      "': expected N, MIN:MAX or MIN: (positive integers)");
  const size_t colon = arg.find(':');
  int64_t min = 0, max = 0;
  if (colon == std::string::npos) return count(arg, &min) ? json(min) : Result<json>(bad);
  if (!count(arg.substr(0, colon), &min)) return bad;
  const std::string upper = arg.substr(colon + 1);
  if (upper.empty()) return json{{"min", min}};
  if (!count(upper, &max) || max < min) return bad;
  return json{{"min", min}, {"max", max}};
}

}  // namespace lizard
