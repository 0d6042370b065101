#include "program/manifest.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <limits>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "program/run_values.h"

namespace lizard {

const char* reducer_name(Reducer r) {
  switch (r) {
    case Reducer::kNone:
      return "none";
    case Reducer::kSum:
      return "sum";
    case Reducer::kMin:
      return "min";
    case Reducer::kMax:
      return "max";
    case Reducer::kProd:
      return "prod";
    case Reducer::kCustom:
      return "custom";
  }
  return "?";
}

const ParamSpec* Manifest::find_param(const std::string& n) const {
  for (const auto& p : params)
    if (p.name == n) return &p;
  return nullptr;
}

const FieldSpec* Manifest::find_dataset(const std::string& n) const {
  for (const auto& f : dataset)
    if (f.name == n) return &f;
  return nullptr;
}

const KernelStep* Manifest::find_generator(const std::string& kernel) const {
  for (const auto& k : generate)
    if (k.kernel == kernel) return &k;
  return nullptr;
}

bool Manifest::has_custom_reducer() const {
  for (const auto& f : aggregate)
    if (f.reduce == Reducer::kCustom) return true;
  return false;
}

bool Manifest::has_specialised_params() const {
  for (const auto& p : params)
    if (p.specialize) return true;
  return false;
}

std::vector<std::string> Manifest::source_files() const {
  std::vector<std::string> out{cuda_source};
  if (!host_source.empty()) out.push_back(host_source);
  out.insert(out.end(), headers.begin(), headers.end());
  return out;
}

namespace {

// Walks the parsed document without recursion; an error when it nests past
// kMaxManifestDepth or has more than kMaxManifestNodes nodes (aliases count
// each time they are used, so a few lines cannot stand for billions).
Status check_document_bounds(const YAML::Node& root, const std::string& file) {
  std::vector<std::pair<YAML::Node, int>> todo{{root, 0}};
  size_t visited = 0;
  while (!todo.empty()) {
    auto [node, depth] = todo.back();
    todo.pop_back();
    if (++visited > kMaxManifestNodes)
      return invalid_argument(file + ": more than " + std::to_string(kMaxManifestNodes) +
                              " YAML nodes");
    if (!node.IsMap() && !node.IsSequence()) continue;
    if (depth + 1 > kMaxManifestDepth)
      return invalid_argument(file + ": mappings and lists nested deeper than " +
                              std::to_string(kMaxManifestDepth));
    for (const auto& child : node) {
      if (node.IsMap()) {
        todo.emplace_back(child.first, depth + 1);
        todo.emplace_back(child.second, depth + 1);
      } else {
        todo.emplace_back(child, depth + 1);
      }
    }
  }
  return Status::Ok();
}

// Counts the nodes of the documents a YAML::Parser hands it.
class NodeCounter final : public YAML::EventHandler {
 public:
  size_t nodes = 0;
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override { ++nodes; }
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {
    ++nodes;
  }
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    ++nodes;
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    ++nodes;
  }
  void OnMapEnd() override {}
};

// Whether a document with content follows the first, so that a second one
// is refused rather than ignored (an empty one after `---` is harmless).
// The documents are walked a bounded number of times: on some malformed
// inputs yaml-cpp's parser reports empty documents without end, which is
// why YAML::LoadAll, which reads until the parser stops, is not used.
bool has_second_document(const std::string& text) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  NodeCounter first;
  if (!parser.HandleNextDocument(first)) return false;
  for (int i = 0; i < 4; ++i) {
    NodeCounter next;
    if (!parser.HandleNextDocument(next)) return false;
    if (next.nodes > 0) return true;
  }
  return false;
}

// Program names are shown in listings, logs and generated code comments:
// one line of printable text.
// One line of printable text: no ASCII control characters, no C1 controls
// (U+0080-U+009F, NEL among them) and no Unicode line or paragraph
// separators (U+2028, U+2029), which end a line in logs and terminals.
bool printable_name(const std::string& s) {
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f) return false;
    const unsigned char next = i + 1 < s.size() ? static_cast<unsigned char>(s[i + 1]) : 0;
    const unsigned char third = i + 2 < s.size() ? static_cast<unsigned char>(s[i + 2]) : 0;
    if (c == 0xc2 && next >= 0x80 && next <= 0x9f) return false;
    if (c == 0xe2 && next == 0x80 && (third == 0xa8 || third == 0xa9)) return false;
  }
  return true;
}

class ManifestParser {
 public:
  explicit ManifestParser(std::string file) : file_(std::move(file)) {}

  Result<Manifest> parse(const std::string& text) {
    if (text.size() > kMaxManifestBytes)
      return fail("", "larger than " + std::to_string(kMaxManifestBytes) + " bytes");
    YAML::Node root;
    try {
      // yaml-cpp stops its own recursion at 2,000 levels.
      root = YAML::Load(text);
      if (has_second_document(text))
        return fail("",
                    "holds more than one YAML document; a manifest is one (remove the '---' line)");
    } catch (const YAML::Exception& e) {
      return invalid_argument(file_ + ": not valid YAML: " + e.what());
    }
    LIZARD_RETURN_IF_ERROR(check_document_bounds(root, file_));
    if (!root.IsMap()) return fail("", "the manifest must be a mapping");
    static const std::set<std::string> kTop = {"info",  "sources",   "params",  "dataset",
                                               "state", "aggregate", "iterate", "generate"};
    LIZARD_RETURN_IF_ERROR(check_keys(root, "", kTop));
    LIZARD_RETURN_IF_ERROR(parse_info(root["info"]));
    LIZARD_RETURN_IF_ERROR(parse_sources(root["sources"]));
    LIZARD_RETURN_IF_ERROR(parse_params(root["params"]));
    LIZARD_RETURN_IF_ERROR(parse_fields(root["dataset"], "dataset", &m_.dataset));
    LIZARD_RETURN_IF_ERROR(parse_fields(root["state"], "state", &m_.state));
    LIZARD_RETURN_IF_ERROR(parse_fields(root["aggregate"], "aggregate", &m_.aggregate));
    if (!root["iterate"] || !root["iterate"].IsSequence() || root["iterate"].size() == 0)
      return fail("iterate", "required: a list of kernels ({kernel: name}) run every iteration");
    LIZARD_RETURN_IF_ERROR(parse_kernels(root["iterate"], "iterate", &m_.iterate));
    if (root["generate"]) {
      if (!root["generate"].IsSequence())
        return fail("generate", "expected a list of generator kernels ({kernel: name})");
      LIZARD_RETURN_IF_ERROR(parse_kernels(root["generate"], "generate", &m_.generate));
    }
    return std::move(m_);
  }

 private:
  Status fail(const std::string& path, const std::string& what) const {
    return invalid_argument(file_ + ": " + (path.empty() ? "" : path + ": ") + what);
  }

  Status check_keys(const YAML::Node& node, const std::string& path,
                    const std::set<std::string>& allowed) const {
    for (const auto& kv : node) {
      std::string k = kv.first.as<std::string>();
      if (!allowed.count(k)) {
        std::string list;
        for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
        return fail(path.empty() ? k : path + "." + k,
                    "unknown key (expected one of: " + list + ")");
      }
    }
    return Status::Ok();
  }

  Result<std::string> scalar_string(const YAML::Node& n, const std::string& path) const {
    if (!n.IsScalar()) return fail(path, "expected a string");
    return n.as<std::string>();
  }

  Status parse_info(const YAML::Node& info) {
    if (!info) return Status::Ok();
    if (!info.IsMap()) return fail("info", "expected a mapping");
    if (info["name"]) {
      LIZARD_ASSIGN_OR_RETURN(m_.name, scalar_string(info["name"], "info.name"));
      if (!printable_name(m_.name))
        return fail("info.name",
                    "must be one line of printable text (no newlines or control "
                    "characters)");
    }
    if (info["version"]) {
      LIZARD_ASSIGN_OR_RETURN(m_.version, scalar_string(info["version"], "info.version"));
      if (!printable_name(m_.version))
        return fail("info.version",
                    "must be one line of printable text (no newlines or control "
                    "characters)");
    }
    return Status::Ok();
  }

  static bool safe_file_name(const std::string& f) {
    if (f.empty() || f[0] == '/' || f.find("..") != std::string::npos) return false;
    for (char c : f)
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' ||
            c == '/'))
        return false;
    return true;
  }

  Status parse_sources(const YAML::Node& src) {
    if (!src || !src.IsMap()) return fail("sources", "required mapping with at least `cuda`");
    LIZARD_RETURN_IF_ERROR(check_keys(src, "sources", {"cuda", "host", "headers"}));
    if (!src["cuda"]) return fail("sources.cuda", "missing: the kernel source file is required");
    LIZARD_ASSIGN_OR_RETURN(m_.cuda_source, scalar_string(src["cuda"], "sources.cuda"));
    if (src["host"]) {
      LIZARD_ASSIGN_OR_RETURN(m_.host_source, scalar_string(src["host"], "sources.host"));
    }
    if (src["headers"]) {
      const auto& h = src["headers"];
      if (!h.IsSequence()) return fail("sources.headers", "expected a list of file names");
      for (size_t i = 0; i < h.size(); ++i) {
        LIZARD_ASSIGN_OR_RETURN(std::string name,
                                scalar_string(h[i], "sources.headers[" + std::to_string(i) + "]"));
        m_.headers.push_back(name);
      }
    }
    for (const auto& f : m_.source_files())
      if (!safe_file_name(f))
        return fail("sources", "'" + f + "' is not a plain relative file name");
    return Status::Ok();
  }

  static bool valid_identifier(const std::string& s) {
    if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
    for (char c : s)
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
    return true;
  }

  Status check_name(const std::string& name, const std::string& path) {
    if (!valid_identifier(name)) return fail(path, "'" + name + "' is not a valid C identifier");
    bool reserved = name == "rows" || name == "first_row" || name == "sm_count";
    for (const RunValueMember& v : run_value_members()) reserved = reserved || name == v.name;
    if (reserved) return fail(path, "'" + name + "' is reserved");
    if (name.rfind("lizard_specialised_", 0) == 0)
      return fail(path, "names starting with 'lizard_specialised_' are reserved");
    if (!names_.insert(name).second) return fail(path, "'" + name + "' is defined twice");
    return Status::Ok();
  }

  Result<DType> parse_type(const YAML::Node& n, const std::string& path) const {
    if (!n) return fail(path + ".type", "missing");
    LIZARD_ASSIGN_OR_RETURN(std::string t, scalar_string(n, path + ".type"));
    DType d;
    if (!parse_dtype(t, &d))
      return fail(path + ".type", "unknown type '" + t +
                                      "' (expected int8, int16, int32, int64, uint8, uint16, "
                                      "uint32, uint64, float32 or float64)");
    return d;
  }

  Status check_default(const ParamSpec& p, const std::string& path) const {
    const double v = *p.default_value;
    if (dtype_is_float(p.type)) {
      const double max = p.type == DType::kFloat32 ? std::numeric_limits<float>::max()
                                                   : std::numeric_limits<double>::max();
      if (!std::isfinite(v) || std::fabs(v) > max)
        return fail(path, "out of range for " + std::string(dtype_name(p.type)));
      return Status::Ok();
    }
    if (v != std::floor(v))
      return fail(path, "expected an integer for " + std::string(dtype_name(p.type)));
    bool fits = visit_dtype(p.type, [&](auto t) {
      using T = decltype(t);
      return v >= static_cast<double>(std::numeric_limits<T>::lowest()) &&
             v <= static_cast<double>(std::numeric_limits<T>::max());
    });
    if (!fits) return fail(path, "out of range for " + std::string(dtype_name(p.type)));
    return Status::Ok();
  }

  Status parse_params(const YAML::Node& params) {
    if (!params) return Status::Ok();
    if (!params.IsMap()) return fail("params", "expected a mapping of name: {type: ...}");
    for (const auto& kv : params) {
      ParamSpec p;
      p.name = kv.first.as<std::string>();
      std::string path = "params." + p.name;
      LIZARD_RETURN_IF_ERROR(check_name(p.name, path));
      if (!kv.second.IsMap()) return fail(path, "expected a mapping with `type`");
      LIZARD_RETURN_IF_ERROR(check_keys(kv.second, path, {"type", "default", "specialize"}));
      LIZARD_ASSIGN_OR_RETURN(p.type, parse_type(kv.second["type"], path));
      if (kv.second["default"]) {
        try {
          p.default_value = kv.second["default"].as<double>();
        } catch (const YAML::Exception&) {
          return fail(path + ".default", "expected a number");
        }
        LIZARD_RETURN_IF_ERROR(check_default(p, path + ".default"));
      }
      LIZARD_RETURN_IF_ERROR(
          parse_bool(kv.second["specialize"], path + ".specialize", &p.specialize));
      m_.params.push_back(std::move(p));
    }
    return Status::Ok();
  }

  Status check_expr_names(const Expr& e, const std::string& path, bool allow_rows,
                          bool allow_sm_count) const {
    for (const auto& n : e.names()) {
      if (n == "rows" && allow_rows) continue;
      if (n == "sm_count" && allow_sm_count) continue;
      const ParamSpec* p = m_.find_param(n);
      if (!p) {
        if (n == "rows") return fail(path, "`rows` is not allowed here");
        return fail(path, "'" + n + "' is not a param");
      }
      if (dtype_is_float(p->type))
        return fail(path, "param '" + n + "' is " + dtype_name(p->type) + ", not an integer");
    }
    return Status::Ok();
  }

  Result<Expr> parse_expr(const YAML::Node& n, const std::string& path, bool allow_rows,
                          bool allow_sm_count) const {
    if (!n.IsScalar()) return fail(path, "expected an integer or an expression");
    auto e = Expr::parse(n.as<std::string>());
    if (!e.ok()) return fail(path, e.status().message());
    LIZARD_RETURN_IF_ERROR(check_expr_names(e.value(), path, allow_rows, allow_sm_count));
    return e;
  }

  Status parse_fields(const YAML::Node& node, const std::string& section,
                      std::vector<FieldSpec>* out) {
    if (!node) return Status::Ok();
    if (!node.IsMap()) return fail(section, "expected a mapping of name: {type: ...}");
    const bool is_dataset = section == "dataset", is_agg = section == "aggregate";
    for (const auto& kv : node) {
      FieldSpec f;
      f.name = kv.first.as<std::string>();
      std::string path = section + "." + f.name;
      LIZARD_RETURN_IF_ERROR(check_name(f.name, path));
      // dataset_t's own member; other sections may use the name.
      if (is_dataset && f.name == "iteration") return fail(path, "'iteration' is reserved");
      if (!kv.second.IsMap()) return fail(path, "expected a mapping with `type`");
      std::set<std::string> keys = {"type", "shape"};
      if (is_dataset) keys.insert({"input", "output"});
      if (is_agg) keys.insert("reduce");
      LIZARD_RETURN_IF_ERROR(check_keys(kv.second, path, keys));
      LIZARD_ASSIGN_OR_RETURN(f.type, parse_type(kv.second["type"], path));
      if (const auto& shape = kv.second["shape"]) {
        if (!shape.IsSequence()) return fail(path + ".shape", "expected a list of dimensions");
        for (size_t i = 0; i < shape.size(); ++i) {
          std::string dpath = path + ".shape[" + std::to_string(i) + "]";
          bool rows_here = is_dataset && i == 0;
          LIZARD_ASSIGN_OR_RETURN(Expr e, parse_expr(shape[i], dpath, rows_here, false));
          if (rows_here && e.text() != "rows")
            return fail(dpath, "the first dimension of a dataset field must be `rows`");
          f.shape.push_back(std::move(e));
        }
      }
      if (is_dataset && f.shape.empty())
        return fail(path + ".shape", "dataset fields need a shape starting with `rows`");
      if (is_dataset) {
        LIZARD_RETURN_IF_ERROR(parse_bool(kv.second["input"], path + ".input", &f.input));
        LIZARD_RETURN_IF_ERROR(parse_bool(kv.second["output"], path + ".output", &f.output));
      }
      if (is_agg) {
        if (!kv.second["reduce"])
          return fail(path + ".reduce", "missing (sum, min, max, prod or custom)");
        LIZARD_ASSIGN_OR_RETURN(std::string r,
                                scalar_string(kv.second["reduce"], path + ".reduce"));
        static const std::pair<const char*, Reducer> kReducers[] = {{"sum", Reducer::kSum},
                                                                    {"min", Reducer::kMin},
                                                                    {"max", Reducer::kMax},
                                                                    {"prod", Reducer::kProd},
                                                                    {"custom", Reducer::kCustom}};
        for (const auto& [n, v] : kReducers)
          if (r == n) f.reduce = v;
        if (f.reduce == Reducer::kNone)
          return fail(path + ".reduce",
                      "unknown reducer '" + r + "' (sum, min, max, prod or custom)");
      }
      out->push_back(std::move(f));
    }
    return Status::Ok();
  }

  Status parse_bool(const YAML::Node& n, const std::string& path, bool* out) const {
    if (!n) return Status::Ok();
    try {
      *out = n.as<bool>();
    } catch (const YAML::Exception&) {
      return fail(path, "expected true or false");
    }
    return Status::Ok();
  }

  Status parse_kernels(const YAML::Node& it, const std::string& section,
                       std::vector<KernelStep>* out) {
    for (size_t i = 0; i < it.size(); ++i) {
      std::string path = section + "[" + std::to_string(i) + "]";
      KernelStep k;
      const auto& n = it[i];
      if (n.IsScalar()) {
        k.kernel = n.as<std::string>();
      } else if (n.IsMap()) {
        LIZARD_RETURN_IF_ERROR(
            check_keys(n, path, {"kernel", "threads", "blocks", "block", "shared_bytes"}));
        if (!n["kernel"]) return fail(path + ".kernel", "missing kernel name");
        LIZARD_ASSIGN_OR_RETURN(k.kernel, scalar_string(n["kernel"], path + ".kernel"));
        if (n["threads"] && n["blocks"])
          return fail(path, "give either `threads` or `blocks`, not both");
        if (n["threads"]) {
          LIZARD_ASSIGN_OR_RETURN(k.threads,
                                  parse_expr(n["threads"], path + ".threads", true, false));
        }
        if (n["blocks"]) {
          LIZARD_ASSIGN_OR_RETURN(k.blocks, parse_expr(n["blocks"], path + ".blocks", true, true));
        }
        if (n["block"]) {
          LIZARD_ASSIGN_OR_RETURN(k.block, parse_expr(n["block"], path + ".block", false, false));
        }
        if (n["shared_bytes"]) {
          LIZARD_ASSIGN_OR_RETURN(
              k.shared_bytes, parse_expr(n["shared_bytes"], path + ".shared_bytes", false, false));
        }
      } else {
        return fail(path, "expected a kernel name or a mapping with `kernel`");
      }
      if (!valid_identifier(k.kernel))
        return fail(path + ".kernel", "'" + k.kernel + "' is not a valid kernel name");
      out->push_back(std::move(k));
    }
    return Status::Ok();
  }

  std::string file_;
  Manifest m_;
  std::set<std::string> names_;
};

}  // namespace

Result<Manifest> parse_manifest(const std::string& yaml_text, const std::string& file) {
  try {
    return ManifestParser(file).parse(yaml_text);
  } catch (const YAML::Exception& e) {
    return invalid_argument(file + ": " + e.what());
  }
}

}  // namespace lizard
