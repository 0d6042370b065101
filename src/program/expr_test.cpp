#include "program/expr.h"

#include <gtest/gtest.h>

#include <limits>

namespace lizard {
namespace {

int64_t eval(const std::string& text, int64_t k = 3, int64_t dims = 4) {
  auto e = Expr::parse(text);
  EXPECT_TRUE(e.ok()) << e.status().message();
  auto v = e->eval([&](const std::string& n) -> std::optional<int64_t> {
    if (n == "k") return k;
    if (n == "dims") return dims;
    return std::nullopt;
  });
  EXPECT_TRUE(v.ok()) << v.status().message();
  return v.ok() ? v.value() : -999;
}

TEST(Expr, IntegerArithmeticWithPrecedence) {
  EXPECT_EQ(eval("k*dims*4 + k*8"), 3 * 4 * 4 + 3 * 8);
  EXPECT_EQ(eval("(k + 1) * 2"), 8);
  EXPECT_EQ(eval("-k + 10 / 3"), 0);
  EXPECT_EQ(eval("7 / 2"), 3);
  EXPECT_EQ(eval("  42 "), 42);
}

TEST(Expr, MinAndMaxBoundAValue) {
  EXPECT_EQ(eval("min(k * dims * 4, 40)"), 40);
  EXPECT_EQ(eval("min(k * dims * 4, 100)"), 48);
  EXPECT_EQ(eval("max(k, dims) * 2"), 8);
  EXPECT_EQ(eval("max(-k, min(1, 2))"), 1);
  EXPECT_EQ(eval("min (k, 2)"), 2);
  auto e = Expr::parse("min(k, dims)");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->names(), (std::vector<std::string>{"k", "dims"}));
  EXPECT_NE(Expr::parse("min(k)").status().message().find("expected ','"), std::string::npos);
  EXPECT_NE(Expr::parse("max(k, 2").status().message().find("expected ')'"), std::string::npos);
}

TEST(Expr, ReportsNamesAndErrors) {
  auto e = Expr::parse("k * dims + k");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->names(), (std::vector<std::string>{"k", "dims"}));
  EXPECT_NE(Expr::parse("k *").status().message().find("column 4"), std::string::npos);
  EXPECT_FALSE(Expr::parse("(k").ok());
  EXPECT_FALSE(Expr::parse("k $ 2").ok());
  EXPECT_FALSE(Expr::parse("").ok());
  auto zero = Expr::parse("k / (dims - 4)");
  auto v = zero->eval([](const std::string&) { return std::optional<int64_t>(4); });
  EXPECT_NE(v.status().message().find("division by zero"), std::string::npos);
  auto unknown = Expr::parse("q")->eval([](const std::string&) { return std::nullopt; });
  EXPECT_NE(unknown.status().message().find("unknown name 'q'"), std::string::npos);
  auto big =
      Expr::parse("4611686018427387904 * 4")->eval([](const std::string&) { return std::nullopt; });
  EXPECT_NE(big.status().message().find("overflow"), std::string::npos);
  // The most negative int64 divided by -1, or negated, has no int64 value.
  auto k_is = [](int64_t v) {
    return [v](const std::string&) { return std::optional<int64_t>(v); };
  };
  const int64_t lowest = std::numeric_limits<int64_t>::min();
  auto quotient = Expr::parse("k / (0 - 1)")->eval(k_is(lowest));
  EXPECT_NE(quotient.status().message().find("overflow"), std::string::npos);
  auto negated = Expr::parse("-k")->eval(k_is(lowest));
  EXPECT_NE(negated.status().message().find("overflow"), std::string::npos);
  EXPECT_EQ(Expr::parse("k / (0 - 1)")->eval(k_is(lowest + 1)).value(), -(lowest + 1));
}

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

TEST(Expr, DeepNestingIsAnErrorNotACrash) {
  const std::string deep[] = {
      repeat("(", 20000) + "k" + repeat(")", 20000),
      repeat("-", 20000) + "k",
      repeat("+(", 20000) + "k" + repeat(")", 20000),
      "k" + repeat("+k", 20000),
  };
  for (const auto& text : deep) {
    auto e = Expr::parse(text);
    ASSERT_FALSE(e.ok()) << text.substr(0, 20);
    EXPECT_NE(e.status().message().find("expression nested deeper than 64"), std::string::npos)
        << e.status().message();
    EXPECT_LT(e.status().message().size(), 200u) << "the message quotes the text, not all of it";
  }
  EXPECT_EQ(eval(repeat("(", 64) + "k" + repeat(")", 64)), 3);
  EXPECT_EQ(eval(repeat("-", 64) + "k"), 3);
  EXPECT_EQ(eval("k" + repeat("+1", 64)), 67);
  EXPECT_FALSE(Expr::parse("k" + repeat("+1", 65)).ok());
  EXPECT_FALSE(Expr::parse(repeat("-", 65) + "k").ok());
  EXPECT_FALSE(Expr::parse(repeat("(", 65) + "k" + repeat(")", 65)).ok());
  auto tail = Expr::parse("k" + repeat(" ", 5000));
  ASSERT_FALSE(tail.ok());
  EXPECT_NE(tail.status().message().find("longer than 4096 characters"), std::string::npos);
}

}  // namespace
}  // namespace lizard
