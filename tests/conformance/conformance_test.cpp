// Conformance cases: each directory under cases/ holds a program (config.yaml,
// kernel.cu), its run (case.json: params, rows, inputs, state, iterations)
// and the answer (expected.json: aggregate fields and output fields, with an
// optional relative `tolerance`; see expect_values for the forms).  Every case runs on every
// backend that conformance_executors() returns.
//
// Input fields are given as {"values": [...]} or as a formula over the
// element index e: offset + scale * (e % mod) (each part optional).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "backends.h"
#include "common/sha256.h"
#include "program/codegen.h"

namespace lizard {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> case_names() {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(LIZARD_CONFORMANCE_CASES))
    if (e.is_directory()) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// Writes element e of `values` (JSON numbers) into `out` as type `t`.
void put(DType t, const json& v, size_t e, std::vector<uint8_t>* out) {
  visit_dtype(t, [&](auto zero) {
    using T = decltype(zero);
    const T x = v.is_number_float()      ? static_cast<T>(v.get<double>())
                : v.is_number_unsigned() ? static_cast<T>(v.get<uint64_t>())
                                         : static_cast<T>(v.get<int64_t>());
    std::memcpy(out->data() + e * sizeof(T), &x, sizeof(T));
  });
}

std::vector<uint8_t> make_input(const FieldSpec& f, const json& spec, size_t count) {
  std::vector<uint8_t> out(count * dtype_size(f.type));
  if (spec.contains("values")) {
    const json& v = spec["values"];
    EXPECT_EQ(v.size(), count) << "input '" << f.name << "'";
    for (size_t e = 0; e < count && e < v.size(); ++e) put(f.type, v[e], e, &out);
    return out;
  }
  const int64_t mod = spec.value("mod", int64_t{1} << 62);
  const double scale = spec.value("scale", 1.0), offset = spec.value("offset", 0.0);
  for (size_t e = 0; e < count; ++e)
    put(f.type, json(offset + scale * static_cast<double>(static_cast<int64_t>(e) % mod)), e, &out);
  return out;
}

std::vector<double> as_doubles(DType t, const uint8_t* p, size_t count) {
  std::vector<double> out(count);
  visit_dtype(t, [&](auto zero) {
    using T = decltype(zero);
    for (size_t e = 0; e < count; ++e) {
      T x;
      std::memcpy(&x, p + e * sizeof(T), sizeof(T));
      out[e] = static_cast<double>(x);
    }
  });
  return out;
}

// `want`: a number, an array of numbers, or {"prefix": [...]} for the first
// elements only; null elements are not checked.
void expect_values(const std::string& what, const std::vector<double>& got, const json& want,
                   double tolerance) {
  const bool prefix = want.is_object();
  json w = want;
  if (prefix) w = want.at("prefix");
  if (!w.is_array()) w = json::array({want});
  if (prefix) {
    ASSERT_LE(w.size(), got.size()) << what;
  } else {
    ASSERT_EQ(got.size(), w.size()) << what;
  }
  for (size_t i = 0; i < w.size(); ++i) {
    if (w[i].is_null()) continue;
    const double x = w[i].get<double>();
    const double slack = tolerance * std::max(1.0, std::fabs(x));
    EXPECT_LE(std::fabs(got[i] - x), slack)
        << what << "[" << i << "]: got " << got[i] << ", expected " << x;
  }
}

class Conformance : public testing::TestWithParam<std::string> {};

TEST_P(Conformance, MatchesExpected) {
  const fs::path dir = fs::path(LIZARD_CONFORMANCE_CASES) / GetParam();
  const json run = json::parse(read_text(dir / "case.json"));
  const json want = json::parse(read_text(dir / "expected.json"));
  ProgramImage p;
  const std::string yaml = read_text(dir / "config.yaml");
  auto m = parse_manifest(yaml, (dir / "config.yaml").string());
  ASSERT_TRUE(m.ok()) << m.status().message();
  p.manifest = *m;
  p.header = generate_program_header(p.manifest);
  for (const std::string& name : p.manifest.source_files()) p.sources[name] = read_text(dir / name);
  p.hash = sha256_hex(yaml + p.sources[p.manifest.cuda_source]);
  auto params = bind_params(p.manifest, run.value("params", json::object()));
  ASSERT_TRUE(params.ok()) << params.status().message();
  const int64_t rows = run.at("rows").get<int64_t>();
  const double tolerance = want.value("tolerance", 0.0);
  const json want_aggregate = want.value("aggregate", json::object());
  const json want_outputs = want.value("outputs", json::object());

  std::string why;
  auto executors = conformance_executors(&why);
  ASSERT_FALSE(executors.empty()) << why;
  for (auto& exec : executors) {
    SCOPED_TRACE(exec->info().kind + " " + exec->info().name);
    PartitionData data;
    data.rows = rows;
    for (const FieldSpec& f : p.manifest.dataset) {
      auto width = row_width(f, p.manifest, *params);
      ASSERT_TRUE(width.ok());
      data.fields.push_back(
          f.input ? make_input(f, run.at("inputs").at(f.name), static_cast<size_t>(rows * *width))
                  : std::vector<uint8_t>{});
    }
    Status s = exec->begin_run(p, *params, std::move(data));
    ASSERT_TRUE(s.ok()) << s.message();
    auto state = make_section(p.manifest.state, p.manifest, *params);
    auto agg = make_section(p.manifest.aggregate, p.manifest, *params);
    ASSERT_TRUE(state.ok() && agg.ok());
    for (const FieldSlot& slot : state->slots) {
      std::vector<uint8_t> v = make_input(*slot.spec, run.at("state").at(slot.spec->name),
                                          static_cast<size_t>(slot.count));
      std::memcpy(state->data(slot), v.data(), v.size());
    }
    const int iterations = run.value("iterations", 1);
    for (int i = 0; i < iterations; ++i) {
      IterationStats stats;
      s = exec->iterate(*state, i, &*agg, &stats);
      ASSERT_TRUE(s.ok()) << s.message();
    }
    auto outputs = exec->end_run(true);
    ASSERT_TRUE(outputs.ok()) << outputs.status().message();
    for (const auto& [name, values] : want_aggregate.items()) {
      const FieldSlot* slot = agg->find(name);
      ASSERT_NE(slot, nullptr) << "no aggregate field " << name;
      expect_values("aggregate " + name,
                    as_doubles(slot->spec->type, agg->data(*slot), slot->count), values, tolerance);
    }
    for (const auto& [name, values] : want_outputs.items()) {
      size_t i = 0;
      while (i < p.manifest.dataset.size() && p.manifest.dataset[i].name != name) ++i;
      ASSERT_LT(i, outputs->size()) << "no dataset field " << name;
      const std::vector<uint8_t>& b = (*outputs)[i];
      const DType t = p.manifest.dataset[i].type;
      expect_values("output " + name, as_doubles(t, b.data(), b.size() / dtype_size(t)), values,
                    tolerance);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, Conformance, testing::ValuesIn(case_names()),
                         [](const testing::TestParamInfo<std::string>& i) { return i.param; });

}  // namespace
}  // namespace lizard
