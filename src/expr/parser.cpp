#include "expr/parser.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "common/printable.hpp"
#include "expr/lexer.hpp"
#include "expr/operators.hpp"

namespace attnjit::expr {
namespace {

Precedence next_tighter(Precedence p) { return static_cast<Precedence>(static_cast<int>(p) + 1); }

class Parser;
using PrefixFn = NodePtr (Parser::*)();
using InfixFn = NodePtr (Parser::*)(NodePtr left);

struct Rule {
  PrefixFn prefix;
  InfixFn infix;
  Precedence precedence;
  BinaryOp op;  // for binary infix rules
};

std::string describe(const Token& token) {
  if (token.kind == TokenKind::end) return "end of input";
  return fmt::format("'{}'", token.text);
}

class Parser {
 public:
  Parser(std::string_view source, Diagnostics& diagnostics)
      : lexer_(source), diagnostics_(diagnostics) {
    advance();
  }

  // expression: conditional END
  NodePtr parse_all() {
    NodePtr root = expression();
    if (!fatal_ && current_.kind != TokenKind::end) expected("an operator or end of input");
    return root;
  }

  NodePtr expression() { return parse_precedence(Precedence::conditional); }

  // Prefix rules ---------------------------------------------------------------------------

  // grouping: '(' expression ')'
  NodePtr grouping() {
    const Token open = previous_;
    NodePtr inner = nested(Precedence::conditional);
    expect(TokenKind::rparen, fmt::format("')' to close the '(' at col {}", open.span.begin + 1));
    return inner;
  }

  // literal: INT | FLOAT | true | false | inf | nan
  NodePtr int_literal() { return int_from(previous_, false); }

  NodePtr float_literal() {
    const std::string text(previous_.text);
    const double value = std::strtod(text.c_str(), nullptr);
    const auto narrowed = static_cast<float>(value);
    if (std::isinf(narrowed)) {
      error_at(previous_, fmt::format("float literal '{}' is out of range for float32", text));
      return make_node(NodeKind::error, previous_.span);
    }
    return make_float(narrowed, previous_.span);
  }

  NodePtr identifier() {
    const Token& token = previous_;
    if (token.text == "true" || token.text == "false") return make_bool(token.text == "true", token.span);
    if (token.text == "inf") return make_float(HUGE_VALF, token.span);
    if (token.text == "nan") return make_float(std::numeric_limits<float>::quiet_NaN(), token.span);
    NodePtr node = make_node(NodeKind::name, token.span);
    node->text = std::string(token.text);
    return node;
  }

  // unary: ('-' | '!' | '~') unary
  NodePtr unary() {
    const Token op = previous_;
    // -2147483648 is the one int literal that only fits when negated.
    if (op.kind == TokenKind::minus && current_.kind == TokenKind::int_literal) {
      const Token literal = current_;
      advance();
      NodePtr operand = int_from(literal, true);
      if (operand->kind == NodeKind::constant && operand->int_value == INT32_MIN) {
        operand->span.begin = op.span.begin;
        return operand;
      }
      return make_unary(op, finish_postfix(std::move(operand)));
    }
    NodePtr operand = nested(Precedence::unary);
    return make_unary(op, std::move(operand));
  }

  NodePtr invalid() {
    const Token& token = previous_;
    const std::string_view reason = token.error;
    if (reason == "unexpected character") {
      error_at(token, fmt::format("unexpected character '{}'", printable(token.text)));
    } else if (reason == "malformed number") {
      error_at(token, fmt::format("malformed number '{}'", printable(token.text)));
    } else {
      error_at(token, std::string(reason));
    }
    return make_node(NodeKind::error, token.span);
  }

  // Infix rules ----------------------------------------------------------------------------

  // binary: left OP right, left-associative
  NodePtr binary(NodePtr left) {
    const Token op = previous_;
    const Rule& rule = rule_for(op.kind);
    NodePtr right = parse_precedence(next_tighter(rule.precedence));
    NodePtr node = make_node(NodeKind::binary, {left->span.begin, right->span.end});
    node->op = static_cast<int>(rule.op);
    node->op_span = op.span;
    node->children.push_back(std::move(left));
    node->children.push_back(std::move(right));
    return node;
  }

  // conditional: left '?' expression ':' conditional
  NodePtr conditional(NodePtr condition) {
    const Span question = previous_.span;
    NodePtr then_branch = nested(Precedence::conditional);
    expect(TokenKind::colon, "':' in the conditional expression");
    NodePtr else_branch = nested(Precedence::conditional);
    NodePtr node = make_node(NodeKind::conditional, {condition->span.begin, else_branch->span.end});
    node->op_span = question;
    node->children.push_back(std::move(condition));
    node->children.push_back(std::move(then_branch));
    node->children.push_back(std::move(else_branch));
    return node;
  }

  // call: left '(' (expression (',' expression)*)? ')'
  NodePtr call(NodePtr callee) { return bracketed(NodeKind::call, std::move(callee), TokenKind::rparen); }

  // index: left '[' expression (',' expression)* ']'
  NodePtr index(NodePtr target) {
    return bracketed(NodeKind::index, std::move(target), TokenKind::rbracket);
  }

 private:
  static const Rule& rule_for(TokenKind kind);

  void advance() {
    previous_ = current_;
    current_ = lexer_.next();
  }

  void error_at(const Token& token, std::string message) {
    if (panic_ || fatal_) return;
    panic_ = true;
    diagnostics_.report(token.kind == TokenKind::end ? Span{token.span.begin, token.span.begin + 1}
                                                     : token.span,
                        std::move(message));
  }

  // Reports a lexical error for an invalid token, or "expected X, found Y".
  void expected(std::string_view what) {
    if (current_.kind == TokenKind::invalid) {
      advance();
      invalid();
      return;
    }
    error_at(current_, fmt::format("expected {}, found {}", what, describe(current_)));
  }

  void expect(TokenKind kind, std::string_view what) {
    if (current_.kind == kind) {
      advance();
      panic_ = false;  // resynchronised
      return;
    }
    expected(what);
  }

  NodePtr int_from(const Token& token, bool negated) {
    std::uint64_t value = 0;
    for (char c : token.text) {
      value = value * 10 + static_cast<std::uint64_t>(c - '0');
      if (value > (1ull << 32)) break;
    }
    const std::uint64_t limit = negated ? (1ull << 31) : (1ull << 31) - 1;
    if (value > limit && !(value == (1ull << 31) && negated)) {
      error_at(token, fmt::format("integer literal '{}' does not fit in int32", token.text));
      return make_node(NodeKind::error, token.span);
    }
    if (value == (1ull << 31)) {
      if (!negated) {
        error_at(token, fmt::format("integer literal '{}' does not fit in int32", token.text));
        return make_node(NodeKind::error, token.span);
      }
      return make_int(INT32_MIN, token.span);
    }
    return make_int(static_cast<std::int32_t>(value), token.span);
  }

  NodePtr make_unary(const Token& op, NodePtr operand) {
    NodePtr node = make_node(NodeKind::unary, {op.span.begin, operand->span.end});
    node->op_span = op.span;
    for (const UnaryInfo& info : unary_operators()) {
      if (info.token == op.kind) node->op = static_cast<int>(info.op);
    }
    node->children.push_back(std::move(operand));
    return node;
  }

  // Applies any postfix operators following an operand parsed outside parse_precedence.
  NodePtr finish_postfix(NodePtr left) {
    while (!fatal_ && rule_for(current_.kind).precedence >= Precedence::postfix) {
      advance();
      left = (this->*rule_for(previous_.kind).infix)(std::move(left));
    }
    return left;
  }

  NodePtr bracketed(NodeKind kind, NodePtr head, TokenKind close) {
    const Token open = previous_;
    NodePtr node = make_node(kind, head->span);
    node->op_span = open.span;
    node->children.push_back(std::move(head));
    if (current_.kind != close) {
      while (true) {
        node->children.push_back(nested(Precedence::conditional));
        if (fatal_ || current_.kind != TokenKind::comma) break;
        advance();
        panic_ = false;  // resynchronised
      }
    }
    if (kind == NodeKind::index && node->children.size() == 1) {
      error_at(current_, "expected an index");
      node->children.push_back(make_node(NodeKind::error, current_.span));
    }
    expect(close, fmt::format("'{}' to close the '{}' at col {}", close == TokenKind::rparen ? ")" : "]",
                              open.text, open.span.begin + 1));
    node->span.end = previous_.span.end;
    return node;
  }

  // Note: only these nested constructs recurse without bound (a left-associative chain is a
  // loop), so counting them bounds the parser's stack.
  NodePtr nested(Precedence precedence) {
    if (fatal_) return make_node(NodeKind::error, current_.span);
    if (depth_ >= kMaxNestingDepth) {
      error_at(previous_, fmt::format("expression nests too deeply (more than {} levels)",
                                     kMaxNestingDepth));
      fatal_ = true;
      return make_node(NodeKind::error, current_.span);
    }
    ++depth_;
    NodePtr node = parse_precedence(precedence);
    --depth_;
    return node;
  }

  NodePtr parse_precedence(Precedence precedence) {
    if (fatal_) return make_node(NodeKind::error, current_.span);
    NodePtr left;
    const Rule& rule = rule_for(current_.kind);
    if (rule.prefix == nullptr) {
      error_at(current_, fmt::format("expected an expression, found {}", describe(current_)));
      // Note: closing tokens stay for the enclosing rule to match; anything else is skipped so
      // that parsing always moves forward.
      const Span span = current_.span;
      switch (current_.kind) {
        case TokenKind::end:
        case TokenKind::rparen:
        case TokenKind::rbracket:
        case TokenKind::comma:
        case TokenKind::colon:
          break;
        default:
          advance();
      }
      left = make_node(NodeKind::error, span);
    } else {
      advance();
      left = (this->*rule.prefix)();
    }
    while (!fatal_ && precedence <= rule_for(current_.kind).precedence) {
      advance();
      left = (this->*rule_for(previous_.kind).infix)(std::move(left));
    }
    return left;
  }

  Lexer lexer_;
  Diagnostics& diagnostics_;
  Token current_;
  Token previous_;
  int depth_ = 0;
  bool panic_ = false;  // an error was reported; quiet until resynchronised
  bool fatal_ = false;  // nesting limit hit; unwind
};

constexpr Rule kNoRule{nullptr, nullptr, Precedence::none, BinaryOp::add};

std::array<Rule, kNumTokenKinds> make_rules() {
  std::array<Rule, kNumTokenKinds> rules;
  rules.fill(kNoRule);
  auto rule = [&rules](TokenKind kind) -> Rule& { return rules[static_cast<std::size_t>(kind)]; };
  rule(TokenKind::identifier).prefix = &Parser::identifier;
  rule(TokenKind::int_literal).prefix = &Parser::int_literal;
  rule(TokenKind::float_literal).prefix = &Parser::float_literal;
  rule(TokenKind::invalid).prefix = &Parser::invalid;
  rule(TokenKind::lparen) = {&Parser::grouping, &Parser::call, Precedence::postfix, BinaryOp::add};
  rule(TokenKind::lbracket) = {nullptr, &Parser::index, Precedence::postfix, BinaryOp::add};
  rule(TokenKind::question) = {nullptr, &Parser::conditional, Precedence::conditional, BinaryOp::add};
  for (const UnaryInfo& info : unary_operators()) rule(info.token).prefix = &Parser::unary;
  for (const BinaryInfo& info : binary_operators()) {
    Rule& r = rule(info.token);
    r.infix = &Parser::binary;
    r.precedence = info.precedence;
    r.op = info.op;
  }
  return rules;
}

const Rule& Parser::rule_for(TokenKind kind) {
  static const std::array<Rule, kNumTokenKinds> rules = make_rules();
  return rules[static_cast<std::size_t>(kind)];
}

struct TreeDepth {
  int depth = 0;  // of the whole tree, the root being 1
  // The leftmost node at level kMaxTreeDepth that has children: its operator is where the tree
  // passes the limit.
  const Node* at_limit = nullptr;
};

// Iterative: the tree may be far deeper than a recursive walk could take.
TreeDepth measure_depth(const Node& root) {
  TreeDepth result;
  std::vector<std::pair<const Node*, int>> pending{{&root, 1}};
  while (!pending.empty()) {
    const auto [node, depth] = pending.back();
    pending.pop_back();
    result.depth = std::max(result.depth, depth);
    if (depth == kMaxTreeDepth && !node->children.empty() && result.at_limit == nullptr) {
      result.at_limit = node;
    }
    // Note: pushed right to left, so the leftmost child is visited first.
    for (auto child = node->children.rbegin(); child != node->children.rend(); ++child) {
      pending.emplace_back(child->get(), depth + 1);
    }
  }
  return result;
}

}  // namespace

NodePtr parse(std::string_view source, Diagnostics& diagnostics) {
  Parser parser(source, diagnostics);
  NodePtr root = parser.parse_all();
  const TreeDepth measured = measure_depth(*root);
  if (measured.at_limit == nullptr) return root;
  diagnostics.report(measured.at_limit->op_span,
                     fmt::format("expression is too deep: {} levels of operations, at most {} "
                                 "(each operator of a chain like a + b + c is a level; group "
                                 "long chains with parentheses)",
                                 measured.depth, kMaxTreeDepth));
  return make_node(NodeKind::error, root->span);
}

}  // namespace attnjit::expr
