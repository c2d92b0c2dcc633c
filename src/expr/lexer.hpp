// Splits an expression into tokens. Never fails: bad input becomes an `invalid` token whose
// message the parser reports.
#pragma once

#include <string_view>

#include "expr/ast.hpp"

namespace attnjit::expr {

enum class TokenKind {
  end, identifier, int_literal, float_literal,
  lparen, rparen, lbracket, rbracket, comma, question, colon,
  plus, minus, star, slash, percent,
  lt, le, gt, ge, eq, ne,
  and_and, or_or, bang,
  amp, pipe, caret, shl, shr, tilde,
  invalid,
};
constexpr int kNumTokenKinds = static_cast<int>(TokenKind::invalid) + 1;

struct Token {
  TokenKind kind = TokenKind::end;
  Span span;
  std::string_view text;
  const char* error = nullptr;  // reason, for invalid tokens
};

class Lexer {
 public:
  explicit Lexer(std::string_view source) : source_(source) {}
  Token next();

 private:
  Token make(TokenKind kind, int begin);
  Token number(int begin);
  char peek(int ahead = 0) const;

  std::string_view source_;
  int pos_ = 0;
};

}  // namespace attnjit::expr
