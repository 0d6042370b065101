#include "program/expr.h"

#include <algorithm>
#include <cctype>
#include <limits>

namespace lizard {

class ExprParser {
 public:
  ExprParser(const std::string& text, Expr* out) : s_(text), out_(out) {}

  // Parsing stops at the depth bound, so it is linear in the text and
  // bounded in stack whatever the length; the length bound comes after, so
  // that a deep expression is reported as deep.
  Status run() {
    skip();
    if (pos_ >= s_.size()) return invalid_argument("empty expression");
    auto r = parse_sum();
    if (!r.ok()) return r.status();
    skip();
    if (pos_ != s_.size()) return error("unexpected '" + std::string(1, s_[pos_]) + "'");
    if (s_.size() > Expr::kMaxLength)
      return invalid_argument("expression longer than " + std::to_string(Expr::kMaxLength) +
                              " characters");
    out_->root_ = r.value();
    return Status::Ok();
  }

 private:
  Status error(const std::string& what) const {
    // Long texts are cut short: the message quotes the text, not all of it.
    const std::string shown = s_.size() <= 40 ? s_ : s_.substr(0, 40) + "...";
    return invalid_argument("bad expression \"" + shown + "\" at column " +
                            std::to_string(pos_ + 1) + ": " + what);
  }
  Status too_deep() const {
    return invalid_argument("expression nested deeper than " + std::to_string(Expr::kMaxDepth));
  }
  // Counts one level of the parser's recursion (a parenthesis or a sign);
  // false past the bound.
  struct Level {
    explicit Level(int* d) : depth(d) { ++*depth; }
    ~Level() { --*depth; }
    bool ok() const { return *depth <= Expr::kMaxDepth; }
    int* depth;
  };
  // Every node records its height, so evaluation (which recurses over the
  // tree) is as bounded as parsing.
  Result<int> add_checked(char op, int lhs, int rhs) {
    int h = 1 + std::max(lhs < 0 ? 0 : out_->nodes_[lhs].height,
                         rhs < 0 ? 0 : out_->nodes_[rhs].height);
    if (h > Expr::kMaxDepth) return too_deep();
    return add({op, 0, "", lhs, rhs, h});
  }
  void skip() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  int add(Expr::Node n) {
    out_->nodes_.push_back(std::move(n));
    return static_cast<int>(out_->nodes_.size()) - 1;
  }
  Result<int> parse_sum() {
    auto lhs = parse_product();
    if (!lhs.ok()) return lhs;
    int l = lhs.value();
    for (;;) {
      skip();
      if (pos_ >= s_.size() || (s_[pos_] != '+' && s_[pos_] != '-')) return l;
      char op = s_[pos_++];
      auto rhs = parse_product();
      if (!rhs.ok()) return rhs;
      auto node = add_checked(op, l, rhs.value());
      if (!node.ok()) return node;
      l = node.value();
    }
  }
  Result<int> parse_product() {
    auto lhs = parse_unary();
    if (!lhs.ok()) return lhs;
    int l = lhs.value();
    for (;;) {
      skip();
      if (pos_ >= s_.size() || (s_[pos_] != '*' && s_[pos_] != '/')) return l;
      char op = s_[pos_++];
      auto rhs = parse_unary();
      if (!rhs.ok()) return rhs;
      auto node = add_checked(op, l, rhs.value());
      if (!node.ok()) return node;
      l = node.value();
    }
  }
  Result<int> parse_unary() {
    skip();
    if (pos_ >= s_.size() || (s_[pos_] != '-' && s_[pos_] != '+')) return parse_atom();
    Level level(&depth_);
    if (!level.ok()) return too_deep();
    if (s_[pos_] == '-') {
      ++pos_;
      auto r = parse_unary();
      if (!r.ok()) return r;
      return add_checked('u', r.value(), -1);
    }
    ++pos_;  // '+'
    return parse_unary();
  }
  Result<int> parse_atom() {
    skip();
    if (pos_ >= s_.size()) return error("expected a number, a name or '('");
    char c = s_[pos_];
    if (c == '(') {
      Level level(&depth_);
      if (!level.ok()) return too_deep();
      ++pos_;
      auto r = parse_sum();
      if (!r.ok()) return r;
      skip();
      if (pos_ >= s_.size() || s_[pos_] != ')') return error("expected ')'");
      ++pos_;
      return r;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      int64_t v = 0;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
        int d = s_[pos_] - '0';
        if (v > (std::numeric_limits<int64_t>::max() - d) / 10) return error("number too large");
        v = v * 10 + d;
        ++pos_;
      }
      return add({'n', v, "", -1, -1, 0});
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t start = pos_;
      while (pos_ < s_.size() &&
             (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_'))
        ++pos_;
      std::string name = s_.substr(start, pos_ - start);
      skip();
      if ((name == "min" || name == "max") && pos_ < s_.size() && s_[pos_] == '(')
        return parse_call(name == "min" ? '<' : '>');
      return add({'v', 0, std::move(name), -1, -1, 0});
    }
    return error("unexpected '" + std::string(1, c) + "'");
  }

  // min(a, b) or max(a, b), from its '(' on.
  Result<int> parse_call(char op) {
    Level level(&depth_);
    if (!level.ok()) return too_deep();
    ++pos_;  // '('
    auto a = parse_sum();
    if (!a.ok()) return a;
    skip();
    if (pos_ >= s_.size() || s_[pos_] != ',') return error("expected ','");
    ++pos_;
    auto b = parse_sum();
    if (!b.ok()) return b;
    skip();
    if (pos_ >= s_.size() || s_[pos_] != ')') return error("expected ')'");
    ++pos_;
    return add_checked(op, a.value(), b.value());
  }

  const std::string& s_;
  Expr* out_;
  size_t pos_ = 0;
  int depth_ = 0;  // levels of parentheses and signs open at pos_
};

Result<Expr> Expr::parse(const std::string& text) {
  Expr e;
  e.text_ = text;
  ExprParser p(text, &e);
  Status st = p.run();
  if (!st.ok()) return st;
  return e;
}

Expr Expr::constant(int64_t v) {
  Expr e;
  e.text_ = std::to_string(v);
  e.nodes_.push_back({'n', v, "", -1, -1, 0});
  e.root_ = 0;
  return e;
}

std::vector<std::string> Expr::names() const {
  std::vector<std::string> out;
  for (const auto& n : nodes_) {
    if (n.op != 'v') continue;
    bool seen = false;
    for (const auto& o : out) seen = seen || o == n.name;
    if (!seen) out.push_back(n.name);
  }
  return out;
}

Result<int64_t> Expr::eval(const Lookup& lookup) const {
  if (root_ < 0) return invalid_argument("empty expression");
  return eval_node(root_, lookup);
}

Result<int64_t> Expr::eval_node(int i, const Lookup& lookup) const {
  const Node& n = nodes_[i];
  switch (n.op) {
    case 'n':
      return n.value;
    case 'v': {
      auto v = lookup(n.name);
      if (!v) return invalid_argument("unknown name '" + n.name + "' in \"" + text_ + "\"");
      return *v;
    }
    case 'u': {
      auto v = eval_node(n.lhs, lookup);
      if (!v.ok()) return v;
      if (v.value() == std::numeric_limits<int64_t>::min())
        return invalid_argument("overflow in \"" + text_ + "\"");
      return -v.value();
    }
    default:
      break;
  }
  auto a = eval_node(n.lhs, lookup);
  if (!a.ok()) return a;
  auto b = eval_node(n.rhs, lookup);
  if (!b.ok()) return b;
  int64_t x = a.value(), y = b.value(), r = 0;
  switch (n.op) {
    case '+':
      if (__builtin_add_overflow(x, y, &r))
        return invalid_argument("overflow in \"" + text_ + "\"");
      return r;
    case '-':
      if (__builtin_sub_overflow(x, y, &r))
        return invalid_argument("overflow in \"" + text_ + "\"");
      return r;
    case '*':
      if (__builtin_mul_overflow(x, y, &r))
        return invalid_argument("overflow in \"" + text_ + "\"");
      return r;
    case '<':
      return std::min(x, y);
    case '>':
      return std::max(x, y);
    case '/':
      if (y == 0) return invalid_argument("division by zero in \"" + text_ + "\"");
      if (x == std::numeric_limits<int64_t>::min() && y == -1)  // the one quotient past int64
        return invalid_argument("overflow in \"" + text_ + "\"");
      return x / y;
  }
  return internal_error("bad expression node");
}

}  // namespace lizard
