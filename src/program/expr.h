// Expr: integer arithmetic over names, as used by manifest shapes, `threads`,
// `blocks`, `block` and `shared_bytes` ("k*dims*4 + k*8").
//
//   Result<Expr> e = Expr::parse("k * dims + 1");
//   Result<int64_t> v = e->eval([](const std::string& n) -> std::optional<int64_t> {...});
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace lizard {

class Expr {
 public:
  using Lookup = std::function<std::optional<int64_t>(const std::string&)>;

  // Bounds on what parse() accepts: parentheses, signs and operators nest at
  // most kMaxDepth levels (parsing and evaluation recurse that deep), and
  // the text is at most kMaxLength characters.
  static constexpr int kMaxDepth = 64;
  static constexpr size_t kMaxLength = 4096;

  // Parses `text`; the error message says where parsing stopped, or
  // "expression nested deeper than 64" past the bounds.
  static Result<Expr> parse(const std::string& text);
  static Expr constant(int64_t v);

  // Evaluates with integer semantics (division truncates; division by zero
  // and unknown names are errors).
  Result<int64_t> eval(const Lookup& lookup) const;

  // Every name the expression mentions, in order of first appearance.
  std::vector<std::string> names() const;
  const std::string& text() const { return text_; }
  bool is_constant() const { return names().empty(); }

 private:
  struct Node {
    char op;  // 'n' number, 'v' variable, '+', '-', '*', '/', 'u' (unary minus), '<' min, '>' max
    int64_t value = 0;
    std::string name;
    int lhs = -1, rhs = -1;
    int height = 0;  // operators on the longest path from here down to a leaf
  };
  Result<int64_t> eval_node(int i, const Lookup& lookup) const;

  std::string text_;
  std::vector<Node> nodes_;
  int root_ = -1;
  friend class ExprParser;
};

}  // namespace lizard
