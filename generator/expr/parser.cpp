#include "expr/parser.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>

namespace mfagen::expr {

namespace {

enum class Tok { end, integer, real, identifier, symbol };

struct Token {
  Tok kind = Tok::end;
  std::string text;
  int column = 1;
};

class Lexer {
 public:
  explicit Lexer(std::string_view s) : s_(s) {}

  Token next() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    Token t;
    t.column = int(pos_) + 1;
    if (pos_ >= s_.size()) return t;
    const char c = s_[pos_];
    if (std::isdigit(static_cast<unsigned char>(c)) || (c == '.' && pos_ + 1 < s_.size() &&
                                                         std::isdigit(static_cast<unsigned char>(s_[pos_ + 1]))))
      return number(t);
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t end = pos_;
      while (end < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[end])) || s_[end] == '_')) ++end;
      t.kind = Tok::identifier;
      t.text = std::string(s_.substr(pos_, end - pos_));
      pos_ = end;
      return t;
    }
    static constexpr std::string_view kTwo[] = {"<=", ">=", "==", "!=", "&&", "||", "//"};
    for (std::string_view two : kTwo) {
      if (s_.substr(pos_, 2) == two) {
        t.kind = Tok::symbol;
        t.text = std::string(two);
        pos_ += 2;
        return t;
      }
    }
    if (std::string_view("+-*/%<>!()[],").find(c) != std::string_view::npos) {
      t.kind = Tok::symbol;
      t.text = std::string(1, c);
      ++pos_;
      return t;
    }
    if (c == '=') throw ExpressionError(t.column, "'=' is not an operator here; compare with '=='");
    if (c == '&') throw ExpressionError(t.column, "'&' is not an operator here; use '&&' for 'and'");
    if (c == '|') throw ExpressionError(t.column, "'|' is not an operator here; use '||' for 'or'");
    if (c == '?' || c == ':')
      throw ExpressionError(t.column, "'?:' is not supported; write select(condition, if_true, if_false)");
    throw ExpressionError(t.column, fmt::format("unexpected character '{}'", c));
  }

 private:
  Token number(Token t) {
    size_t end = pos_;
    bool real = false;
    while (end < s_.size() && std::isdigit(static_cast<unsigned char>(s_[end]))) ++end;
    if (end < s_.size() && s_[end] == '.') {
      real = true;
      ++end;
      while (end < s_.size() && std::isdigit(static_cast<unsigned char>(s_[end]))) ++end;
    }
    if (end < s_.size() && (s_[end] == 'e' || s_[end] == 'E')) {
      size_t e = end + 1;
      if (e < s_.size() && (s_[e] == '+' || s_[e] == '-')) ++e;
      if (e < s_.size() && std::isdigit(static_cast<unsigned char>(s_[e]))) {
        real = true;
        end = e;
        while (end < s_.size() && std::isdigit(static_cast<unsigned char>(s_[end]))) ++end;
      }
    }
    if (end < s_.size() && (std::isalpha(static_cast<unsigned char>(s_[end])) || s_[end] == '_'))
      throw ExpressionError(int(end) + 1, fmt::format("unexpected '{}' after the number {}", s_[end],
                                                      s_.substr(pos_, end - pos_)));
    t.kind = real ? Tok::real : Tok::integer;
    t.text = std::string(s_.substr(pos_, end - pos_));
    pos_ = end;
    return t;
  }

  std::string_view s_;
  size_t pos_ = 0;
};

constexpr std::pair<std::string_view, Op> kCompare[] = {
    {"<", Op::less},         {"<=", Op::less_equal}, {">", Op::greater},
    {">=", Op::greater_equal}, {"==", Op::equal},    {"!=", Op::not_equal}};

class Parser {
 public:
  explicit Parser(std::string_view text) : lexer_(text) { advance(); }

  NodePtr whole() {
    NodePtr n = parse_or();
    if (tok_.kind == Tok::identifier && (tok_.text == "and" || tok_.text == "or" || tok_.text == "not"))
      throw ExpressionError(tok_.column, fmt::format("'{}' is not an operator here; write && for and, || for or, ! for not",
                                                     tok_.text));
    if (tok_.kind != Tok::end) throw ExpressionError(tok_.column, fmt::format("unexpected '{}'", tok_.text));
    return n;
  }

 private:
  void advance() { tok_ = lexer_.next(); }
  bool at(std::string_view symbol) const { return tok_.kind == Tok::symbol && tok_.text == symbol; }

  void expect(std::string_view symbol, std::string_view what) {
    if (!at(symbol)) {
      const std::string found = tok_.kind == Tok::end ? "the end of the expression" : "'" + tok_.text + "'";
      throw ExpressionError(tok_.column, fmt::format("expected '{}' {}, found {}", symbol, what, found));
    }
    advance();
  }

  static NodePtr binary(Op op, NodePtr a, NodePtr b, int column) {
    auto n = std::make_shared<Node>();
    n->op = op;
    n->column = a->column;  // a binary expression starts where its left operand does
    (void)column;
    n->args = {std::move(a), std::move(b)};
    return n;
  }

  struct Depth {
    explicit Depth(Parser& p, int column) : p(p) {
      if (++p.depth_ > kMaxNesting)
        throw ExpressionError(column, fmt::format("nested more than {} levels deep", kMaxNesting));
    }
    ~Depth() { --p.depth_; }
    Parser& p;
  };

  NodePtr parse_or() {
    NodePtr n = parse_and();
    while (at("||")) {
      const int c = tok_.column;
      advance();
      n = binary(Op::logical_or, n, parse_and(), c);
    }
    return n;
  }

  NodePtr parse_and() {
    NodePtr n = parse_compare();
    while (at("&&")) {
      const int c = tok_.column;
      advance();
      n = binary(Op::logical_and, n, parse_compare(), c);
    }
    return n;
  }

  NodePtr parse_compare() {
    NodePtr n = parse_sum();
    for (auto [text, op] : kCompare) {
      if (!at(text)) continue;
      const int c = tok_.column;
      advance();
      n = binary(op, n, parse_sum(), c);
      for (auto [again, unused] : kCompare)
        if (at(again))
          throw ExpressionError(tok_.column, "comparisons do not chain; join them with '&&'");
      break;
    }
    return n;
  }

  NodePtr parse_sum() {
    NodePtr n = parse_product();
    while (at("+") || at("-")) {
      const Op op = at("+") ? Op::add : Op::subtract;
      const int c = tok_.column;
      advance();
      n = binary(op, n, parse_product(), c);
    }
    return n;
  }

  NodePtr parse_product() {
    NodePtr n = parse_unary();
    while (at("*") || at("/") || at("//") || at("%")) {
      const Op op = at("*") ? Op::multiply : at("/") ? Op::divide : at("//") ? Op::floor_divide : Op::modulo;
      const int c = tok_.column;
      advance();
      n = binary(op, n, parse_unary(), c);
    }
    return n;
  }

  NodePtr parse_unary() {
    if (at("-") || at("!")) {
      auto n = std::make_shared<Node>();
      n->op = at("-") ? Op::negate : Op::logical_not;
      n->column = tok_.column;
      Depth d(*this, tok_.column);
      advance();
      n->args = {parse_unary()};
      return n;
    }
    return parse_primary();
  }

  std::vector<NodePtr> arguments(std::string_view close, std::string_view what) {
    std::vector<NodePtr> args;
    if (!at(close)) {
      args.push_back(parse_or());
      while (at(",")) {
        advance();
        args.push_back(parse_or());
      }
    }
    expect(close, what);
    return args;
  }

  NodePtr parse_primary() {
    auto n = std::make_shared<Node>();
    n->column = tok_.column;
    switch (tok_.kind) {
      case Tok::integer: {
        int64_t v = 0;
        const auto [ptr, ec] = std::from_chars(tok_.text.data(), tok_.text.data() + tok_.text.size(), v);
        if (ec != std::errc() || v > std::numeric_limits<int32_t>::max())
          throw ExpressionError(tok_.column, fmt::format("the integer {} does not fit int32", tok_.text));
        n->op = Op::int_literal;
        n->type = Type::integer;
        n->int_value = v;
        advance();
        return n;
      }
      case Tok::real: {
        const double v = std::strtod(tok_.text.c_str(), nullptr);
        if (!std::isfinite(v) || std::fabs(v) > std::numeric_limits<float>::max())
          throw ExpressionError(tok_.column, fmt::format("the number {} does not fit float32", tok_.text));
        n->op = Op::float_literal;
        n->type = Type::real;
        n->float_value = v;
        advance();
        return n;
      }
      case Tok::identifier: {
        n->name = tok_.text;
        advance();
        if (n->name == "true" || n->name == "false") {
          n->op = Op::bool_literal;
          n->type = Type::boolean;
          n->bool_value = n->name == "true";
          return n;
        }
        if (at("(") || at("[")) {
          Depth d(*this, n->column);
          const bool call = at("(");
          advance();
          n->op = call ? Op::call : Op::read;
          n->args = arguments(call ? ")" : "]", call ? "to close the call" : "to close the index");
          if (n->args.empty())
            throw ExpressionError(n->column, call ? fmt::format("{}() needs arguments", n->name)
                                                  : fmt::format("{}[] needs an index", n->name));
          return n;
        }
        n->op = Op::name;
        return n;
      }
      case Tok::symbol:
        if (at("(")) {
          Depth d(*this, tok_.column);
          advance();
          NodePtr inner = parse_or();
          expect(")", "to close the parenthesis");
          return inner;
        }
        throw ExpressionError(tok_.column, fmt::format("expected a value, found '{}'", tok_.text));
      case Tok::end:
        throw ExpressionError(tok_.column, "expected a value, found the end of the expression");
    }
    throw ExpressionError(tok_.column, "expected a value");
  }

  Lexer lexer_;
  Token tok_;
  int depth_ = 0;
};

}  // namespace

NodePtr parse_expression(std::string_view text) {
  if (text.size() > kMaxExpressionLength)
    throw ExpressionError(int(kMaxExpressionLength) + 1,
                          fmt::format("expressions are limited to {} characters", kMaxExpressionLength));
  // Printable ASCII only: the text is also pasted into a comment of the
  // generated kernel, where a line break would turn the rest into code.
  for (size_t i = 0; i < text.size(); ++i)
    if (static_cast<unsigned char>(text[i]) >= 0x7f || static_cast<unsigned char>(text[i]) < 0x20)
      throw ExpressionError(int(i) + 1, "expected printable ASCII text on one line (operators, names, numbers)");
  return Parser(text).whole();
}

}  // namespace mfagen::expr
