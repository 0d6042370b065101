// The `generate` source: rows a generator kernel of the program fills on the
// executors ({"generate": kernel, "rows": n, "seed": s}); nothing but the
// kernel's name travels ({"source": "generate", "kernel"}), and the run's
// seed, which every generated field of a run shares, goes in run_start.
#include "dataset/dataset_source.h"

namespace lizard {

using nlohmann::json;

namespace {

class GenerateSource final : public DatasetSource {
 public:
  std::vector<std::string> request_keys() const override { return {"generate", "rows", "seed"}; }
  std::vector<std::string> wire_names() const override { return {"generate"}; }
  RowDelivery delivery() const override { return RowDelivery::kGenerator; }

  Result<ParsedSource> parse(const json& spec, const SourceField& field,
                             const SourceContext&) const override {
    const std::string& what = field.what;
    if (!spec["generate"].is_string())
      return invalid_argument(what + ": `generate` must name a generator kernel");
    ParsedSource p;
    p.generator = spec["generate"].get<std::string>();
    bool known = false;
    std::string list;
    for (const std::string& g : field.generators) {
      known = known || g == p.generator;
      list += (list.empty() ? "" : ", ") + g;
    }
    if (!known)
      return invalid_argument(what + ": '" + p.generator +
                              "' is not in the manifest's `generate` list (" +
                              (list.empty() ? "it has none" : list) + ")");
    if (!spec.contains("rows") || !spec["rows"].is_number_integer() ||
        spec["rows"].get<int64_t>() < 1)
      return invalid_argument(what + ": a generated field needs `rows`, a positive integer");
    p.rows = spec["rows"].get<int64_t>();
    p.seed = 0;
    if (spec.contains("seed")) {
      if (!spec["seed"].is_number_unsigned() &&
          !(spec["seed"].is_number_integer() && spec["seed"].get<int64_t>() >= 0))
        return invalid_argument(what + ": `seed` must be a non-negative integer");
      p.seed = spec["seed"].get<uint64_t>();
    }
    return p;
  }

  Status to_wire(const ParsedSource& parsed, const WireRows&, FieldSource* out,
                 std::string*) const override {
    out->delivery = RowDelivery::kGenerator;
    out->kernel = parsed.generator;
    return Status::Ok();
  }

  void encode(const FieldSource& field, json* out) const override {
    out->update({{"source", "generate"}, {"kernel", field.kernel}});
  }

  Status decode(std::string_view, const json& in, FieldSource* field) const override {
    field->delivery = RowDelivery::kGenerator;
    return read_wire(in, "kernel", &field->kernel);
  }
};

}  // namespace

std::unique_ptr<const DatasetSource> make_generate_source() {
  return std::make_unique<GenerateSource>();
}

}  // namespace lizard
