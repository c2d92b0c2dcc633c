#include "expr/lexer.hpp"

namespace attnjit::expr {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }

}  // namespace

char Lexer::peek(int ahead) const {
  const auto at = static_cast<std::size_t>(pos_ + ahead);
  return at < source_.size() ? source_[at] : '\0';
}

Token Lexer::make(TokenKind kind, int begin) {
  Token token;
  token.kind = kind;
  token.span = {begin, pos_};
  token.text = source_.substr(static_cast<std::size_t>(begin), static_cast<std::size_t>(pos_ - begin));
  return token;
}

// number: digits ('.' digits?)? exponent? | '.' digits exponent?
// exponent: ('e' | 'E') ('+' | '-')? digits
Token Lexer::number(int begin) {
  bool is_float = false;
  bool ok = true;
  while (is_digit(peek())) ++pos_;
  if (peek() == '.') {
    is_float = true;
    ++pos_;
    while (is_digit(peek())) ++pos_;
  }
  if (peek() == 'e' || peek() == 'E') {
    is_float = true;
    ++pos_;
    if (peek() == '+' || peek() == '-') ++pos_;
    if (!is_digit(peek())) ok = false;
    while (is_digit(peek())) ++pos_;
  }
  // A letter, digit or dot glued to a number (3x, 1.2.3, 2f) makes it malformed.
  while (is_ident_char(peek()) || peek() == '.') {
    ok = false;
    ++pos_;
  }
  Token token = make(is_float ? TokenKind::float_literal : TokenKind::int_literal, begin);
  if (!ok) {
    token.kind = TokenKind::invalid;
    token.error = "malformed number";
  }
  return token;
}

Token Lexer::next() {
  while (pos_ < static_cast<int>(source_.size())) {
    const char c = peek();
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
    ++pos_;
  }
  const int begin = pos_;
  if (pos_ >= static_cast<int>(source_.size())) return make(TokenKind::end, begin);
  const char c = peek();
  if (is_ident_start(c)) {
    while (is_ident_char(peek())) ++pos_;
    return make(TokenKind::identifier, begin);
  }
  if (is_digit(c) || (c == '.' && is_digit(peek(1)))) return number(begin);
  ++pos_;
  auto two = [&](char second, TokenKind both, TokenKind one) {
    if (peek() == second) {
      ++pos_;
      return make(both, begin);
    }
    return make(one, begin);
  };
  switch (c) {
    case '(': return make(TokenKind::lparen, begin);
    case ')': return make(TokenKind::rparen, begin);
    case '[': return make(TokenKind::lbracket, begin);
    case ']': return make(TokenKind::rbracket, begin);
    case ',': return make(TokenKind::comma, begin);
    case '?': return make(TokenKind::question, begin);
    case ':': return make(TokenKind::colon, begin);
    case '+': return make(TokenKind::plus, begin);
    case '-': return make(TokenKind::minus, begin);
    case '*': return make(TokenKind::star, begin);
    case '/': return make(TokenKind::slash, begin);
    case '%': return make(TokenKind::percent, begin);
    case '^': return make(TokenKind::caret, begin);
    case '~': return make(TokenKind::tilde, begin);
    case '!': return two('=', TokenKind::ne, TokenKind::bang);
    case '&': return two('&', TokenKind::and_and, TokenKind::amp);
    case '|': return two('|', TokenKind::or_or, TokenKind::pipe);
    case '<':
      if (peek() == '<') {
        ++pos_;
        return make(TokenKind::shl, begin);
      }
      return two('=', TokenKind::le, TokenKind::lt);
    case '>':
      if (peek() == '>') {
        ++pos_;
        return make(TokenKind::shr, begin);
      }
      return two('=', TokenKind::ge, TokenKind::gt);
    case '=': {
      if (peek() == '=') {
        ++pos_;
        return make(TokenKind::eq, begin);
      }
      Token token = make(TokenKind::invalid, begin);
      token.error = "unexpected '=' (did you mean '=='?)";
      return token;
    }
    default: {
      // Swallow a whole UTF-8 sequence so that one character gives one error.
      if (static_cast<unsigned char>(c) >= 0xc0) {
        while ((static_cast<unsigned char>(peek()) & 0xc0) == 0x80) ++pos_;
      }
      Token token = make(TokenKind::invalid, begin);
      token.error = "unexpected character";
      return token;
    }
  }
}

}  // namespace attnjit::expr
