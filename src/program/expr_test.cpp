#include "program/expr.h"

#include <gtest/gtest.h>

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
}

}  // namespace
}  // namespace lizard
