#include "program/manifest.h"

#include <gtest/gtest.h>

namespace lizard {
namespace {

const char* kKmeans = R"(
info: {name: K-Means, version: "1.0"}
sources: {cuda: kernel.cu, host: host.cpp}
params:
  k: {type: int32}
  dims: {type: int32}
  max_iterations: {type: int32, default: 50}
  threshold: {type: float32, default: 1.0e-4}
dataset:
  points: {type: float32, shape: [rows, dims]}
state:
  centroids: {type: float32, shape: [k, dims]}
aggregate:
  sums: {type: float32, shape: [k, dims], reduce: sum}
  counts: {type: int64, shape: [k], reduce: sum}
iterate:
  - kernel: assign
    block: 256
    shared_bytes: "k*dims*4 + k*8"
)";

TEST(Manifest, ParsesTheKmeansExample) {
  auto m = parse_manifest(kKmeans, "config.yaml");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->name, "K-Means");
  ASSERT_EQ(m->params.size(), 4u);
  EXPECT_EQ(m->params[3].type, DType::kFloat32);
  ASSERT_TRUE(m->params[2].default_value);
  EXPECT_EQ(*m->params[2].default_value, 50);
  ASSERT_EQ(m->dataset.size(), 1u);
  EXPECT_EQ(m->dataset[0].shape.size(), 2u);
  EXPECT_EQ(m->aggregate[1].reduce, Reducer::kSum);
  ASSERT_EQ(m->iterate.size(), 1u);
  EXPECT_EQ(m->iterate[0].kernel, "assign");
  EXPECT_EQ(m->source_files(), (std::vector<std::string>{"kernel.cu", "host.cpp"}));
}

std::string error_of(const std::string& yaml) {
  auto m = parse_manifest(yaml, "config.yaml");
  return m.ok() ? "" : m.status().message();
}

TEST(Manifest, UnknownTypeNamesTheKeyPath) {
  std::string e = error_of(R"(
sources: {cuda: k.cu}
dataset: {x: {type: float16, shape: [rows]}}
iterate: [run]
)");
  EXPECT_NE(e.find("config.yaml: dataset.x.type: unknown type 'float16'"), std::string::npos) << e;
}

TEST(Manifest, ShapeNamingAMissingParamIsAnError) {
  std::string e = error_of(R"(
sources: {cuda: k.cu}
params: {k: {type: int32}}
state: {c: {type: float32, shape: [k, dims]}}
iterate: [run]
)");
  EXPECT_NE(e.find("state.c.shape[1]: 'dims' is not a param"), std::string::npos) << e;
}

TEST(Manifest, MissingKernelSourceIsAnError) {
  std::string e = error_of("sources: {host: h.cpp}\niterate: [run]\n");
  EXPECT_NE(e.find("sources.cuda"), std::string::npos) << e;
}

TEST(Manifest, RowsOnlyAsFirstDatasetDimension) {
  EXPECT_NE(
      error_of("sources: {cuda: k.cu}\nstate: {c: {type: int32, shape: [rows]}}\niterate: [r]\n")
          .find("`rows` is not allowed here"),
      std::string::npos);
  EXPECT_NE(error_of("sources: {cuda: k.cu}\ndataset: {c: {type: int32, shape: [4, rows]}}\n"
                     "iterate: [r]\n")
                .find("first dimension of a dataset field must be `rows`"),
            std::string::npos);
}

TEST(Manifest, FloatParamInShapeIsAnError) {
  std::string e = error_of(R"(
sources: {cuda: k.cu}
params: {t: {type: float32}}
state: {c: {type: float32, shape: [t]}}
iterate: [run]
)");
  EXPECT_NE(e.find("not an integer"), std::string::npos) << e;
}

TEST(Manifest, RejectsUnknownKeysDuplicatesAndBadYaml) {
  EXPECT_NE(error_of("sources: {cuda: k.cu}\niterate: [r]\nextra: 1\n").find("extra: unknown key"),
            std::string::npos);
  EXPECT_NE(
      error_of("sources: {cuda: k.cu}\nparams: {a: {type: int32}}\nstate: {a: {type: int32}}\n"
               "iterate: [r]\n")
          .find("defined twice"),
      std::string::npos);
  EXPECT_NE(error_of("sources: [").find("not valid YAML"), std::string::npos);
  EXPECT_NE(error_of("sources: {cuda: ../../etc/passwd}\niterate: [r]\n").find("plain relative"),
            std::string::npos);
  EXPECT_NE(error_of("sources: {cuda: k.cu}\naggregate: {s: {type: int32, reduce: avg}}\n"
                     "iterate: [r]\n")
                .find("unknown reducer 'avg'"),
            std::string::npos);
}

// dataset_t has a member `iteration`: a dataset field may not take the
// name; a state field may (examples/anneal counts its iterations in one).
TEST(Manifest, IterationIsReservedInTheDatasetOnly) {
  EXPECT_EQ(error_of("sources: {cuda: k.cu}\ndataset: {iteration: {type: int64, shape: [rows]}}\n"
                     "iterate: [r]\n"),
            "config.yaml: dataset.iteration: 'iteration' is reserved");
  auto m = parse_manifest(
      "sources: {cuda: k.cu}\nstate: {iteration: {type: int32}}\niterate: [r]\n", "config.yaml");
  EXPECT_TRUE(m.ok()) << m.status().message();
}

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

TEST(Manifest, DeeplyNestedShapeExpressionIsAnErrorNamingTheField) {
  const std::string deep = repeat("(", 20000) + "1" + repeat(")", 20000);
  std::string e = error_of("sources: {cuda: k.cu}\naggregate: {x: {type: float32, shape: [\"" +
                           deep + "\"], reduce: sum}}\niterate: [run]\n");
  EXPECT_EQ(e, "config.yaml: aggregate.x.shape[0]: expression nested deeper than 64");
  e = error_of("sources: {cuda: k.cu}\niterate: [{kernel: run, threads: \"" + repeat("-", 20000) +
               "rows\"}]\n");
  EXPECT_EQ(e, "config.yaml: iterate[0].threads: expression nested deeper than 64");
}

TEST(Manifest, DeeplyNestedYamlIsAnError) {
  const std::string docs[] = {
      "sources: {cuda: k.cu}\niterate: [run]\nx: " + repeat("[", 20000) + repeat("]", 20000),
      "sources: {cuda: k.cu}\niterate: [run]\nx: " + repeat("{a: ", 20000) + "1" +
          repeat("}", 20000),
      "x: " + repeat("- ", 20000) + "1\n",
      "sources: {cuda: k.cu}\niterate: [run]\nx: " + repeat("[", 100) + repeat("]", 100),
  };
  for (const auto& doc : docs) {
    std::string e = error_of(doc);
    EXPECT_EQ(e.rfind("config.yaml: ", 0), 0u) << e;
    EXPECT_TRUE(e.find("nested deeper than 64") != std::string::npos ||
                e.find("not valid YAML") != std::string::npos)
        << e;
  }
  EXPECT_NE(error_of(docs[3]).find("nested deeper than 64"), std::string::npos);
  EXPECT_NE(error_of(std::string(kMaxManifestBytes + 1, '#')).find("larger than"),
            std::string::npos);
  // Aliases count each time they are used.
  std::string laughs = "a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n";
  for (char c = 'b'; c <= 'j'; ++c)
    laughs += std::string(1, c) + ": &" + c + " [*" + static_cast<char>(c - 1) + ", *" +
              static_cast<char>(c - 1) + ", *" + static_cast<char>(c - 1) + ", *" +
              static_cast<char>(c - 1) + ", *" + static_cast<char>(c - 1) + ", *" +
              static_cast<char>(c - 1) + ", *" + static_cast<char>(c - 1) + ", *" +
              static_cast<char>(c - 1) + ", *" + static_cast<char>(c - 1) + ", *" +
              static_cast<char>(c - 1) + "]\n";
  EXPECT_NE(error_of(laughs).find("more than 100000 YAML nodes"), std::string::npos)
      << error_of(laughs);
}

TEST(Manifest, ProgramNamesAreOneLineOfPrintableText) {
  for (const std::string name : {"\"a\\nb\"", "\"a\\tb\"", "\"a\\x7fb\"", "\"a\\rb\""}) {
    std::string e = error_of("info: {name: " + name + "}\nsources: {cuda: k.cu}\niterate: [run]\n");
    EXPECT_NE(e.find("config.yaml: info.name: must be one line of printable text"),
              std::string::npos)
        << name << ": " << e;
  }
  EXPECT_EQ(error_of("info: {name: \"K-Means (v2) \u00e9\"}\nsources: {cuda: k.cu}\n"
                     "iterate: [run]\n"),
            "");
}

// Line and paragraph separators and C1 controls end a line too, and the
// version is held to the same rule as the name.
TEST(Manifest, NamesAndVersionsHoldNoLineBreakOfAnyKind) {
  for (const std::string field : {"name", "version"})
    for (const std::string value : {"\"a\u2028b\"", "\"a\u2029b\"", "\"a\u0085b\"", "\"1\\n2\""}) {
      std::string e =
          error_of("info: {" + field + ": " + value + "}\nsources: {cuda: k.cu}\niterate: [run]\n");
      EXPECT_NE(e.find("config.yaml: info." + field + ": must be one line of printable text"),
                std::string::npos)
          << field << " " << value << ": " << e;
    }
  EXPECT_EQ(error_of("info: {version: \"2.1 \u00e9\"}\nsources: {cuda: k.cu}\niterate: [run]\n"),
            "");
}

// A second YAML document is refused, not silently ignored (and hashed).
TEST(Manifest, ASecondYamlDocumentIsRefused) {
  const std::string e = error_of(
      "sources: {cuda: k.cu}\niterate: [run]\n---\nsources: {cuda: other.cu}\niterate: [x]\n");
  EXPECT_EQ(e,
            "config.yaml: holds more than one YAML document; a manifest is one (remove the '---' "
            "line)");
  EXPECT_EQ(error_of("---\nsources: {cuda: k.cu}\niterate: [run]\n"), "");
  EXPECT_EQ(error_of("sources: {cuda: k.cu}\niterate: [run]\n---\n"), "");
}

// Inputs on which yaml-cpp's parser reports empty documents without end
// (so that reading every document never returns) are answered at once.
TEST(Manifest, InputsThatNeverEndADocumentAreAnsweredAtOnce) {
  for (const char* text : {",\xdd\n", ",\n-\n- b`"})
    EXPECT_EQ(error_of(text), "config.yaml: the manifest must be a mapping") << text;
}

TEST(Manifest, FloatDefaultsOutOfTheTypesRangeAreErrors) {
  std::string e = error_of(
      "sources: {cuda: k.cu}\nparams: {t: {type: float32, default: 1e39}}\niterate: [run]\n");
  EXPECT_EQ(e, "config.yaml: params.t.default: out of range for float32");
  e = error_of(
      "sources: {cuda: k.cu}\nparams: {t: {type: float64, default: .inf}}\niterate: [run]\n");
  EXPECT_EQ(e, "config.yaml: params.t.default: out of range for float64");
  EXPECT_EQ(error_of("sources: {cuda: k.cu}\nparams: {t: {type: float32, default: 3.0e38}}\n"
                     "iterate: [run]\n"),
            "");
}

}  // namespace
}  // namespace lizard
