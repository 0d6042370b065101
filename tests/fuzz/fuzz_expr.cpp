// libFuzzer target: the expression parser of manifest shapes and launch
// sizes.  The input is expression text; when Expr::parse accepts it, it is
// evaluated with every name bound to a small value, and its names must
// appear in the text.  Inputs nested past the parser's bound must come back
// as errors, never as a crash.
//
//   build-fuzz/tests/fuzz/fuzz_expr -dict=tests/fuzz/expr.dict CORPUS tests/fuzz/corpus/expr
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "program/expr.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  lizard::Result<lizard::Expr> e = lizard::Expr::parse(text);
  if (!e.ok()) {
    if (e.status().message().empty()) {
      std::fprintf(stderr, "Expr::parse failed without a message\n");
      std::abort();
    }
    return 0;
  }
  if (text.size() > lizard::Expr::kMaxLength) {
    std::fprintf(stderr, "Expr::parse accepted a text longer than its bound\n");
    std::abort();
  }
  for (const std::string& name : e->names()) {
    if (text.find(name) == std::string::npos) {
      std::fprintf(stderr, "Expr::names() gave '%s', which the text does not hold\n", name.c_str());
      std::abort();
    }
  }
  auto v = e->eval([](const std::string& name) -> std::optional<int64_t> {
    return static_cast<int64_t>(name.size()) - 3;
  });
  if (!v.ok() && v.status().message().empty()) {
    std::fprintf(stderr, "Expr::eval failed without a message\n");
    std::abort();
  }
  return 0;
}
