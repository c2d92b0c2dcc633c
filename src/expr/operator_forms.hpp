// The forms of expr/operators.def as host code, for the evaluators: every row becomes a struct
// whose element() computes what the generated element code computes and whose interval() what
// the generated classify code computes, by calling the very attnjit::ops functions the lowering
// names (or the row's C operator where the form is `infix`).
#pragma once

#include <cstdint>
#include <type_traits>

#include "attnjit/expr_ops.cuh"
#include "expr/operators.hpp"

namespace attnjit::expr::forms {

// A `none` form is never called: the row's OperandRule excludes those operands.
template <class... T>
void none(T...) = delete;

template <class T>
constexpr bool is_int = std::is_same_v<T, std::int32_t>;
template <class T>
constexpr bool is_float = std::is_same_v<T, float>;
template <class T>
constexpr bool is_tri = std::is_same_v<T, ops::Tri>;

// `(a ? 1 : 0)` in the target type: the element form `select` of conversions from bool.
template <ValueType TO>
auto select_to(bool a) {
  if constexpr (TO == ValueType::integer) {
    return a ? 1 : 0;
  } else {
    return a ? 1.0f : 0.0f;
  }
}

// Note: each row's forms are looked up in a namespace of their own, which sees attnjit::ops
// (named forms), the row's `infix` (its C operator) and `none`.
#define ATTNJIT_UNARY(ID, TOKEN, OP, RULE, INT_FORM, FLOAT_FORM, IV_FORM, TRI_FORM) \
  namespace ID##_forms {                                                           \
  using namespace attnjit::ops;                                                    \
  using forms::none;                                                               \
  template <class T>                                                               \
  auto infix(T a) {                                                                \
    return OP a;                                                                   \
  }                                                                                \
  }                                                                                \
  struct ID##_row {                                                                \
    static constexpr OperandRule rule = OperandRule::RULE;                         \
    template <class T>                                                             \
    static auto element(T a) {                                                     \
      if constexpr (is_int<T>) {                                                   \
        return ID##_forms::INT_FORM(a);                                            \
      } else if constexpr (is_float<T>) {                                          \
        return ID##_forms::FLOAT_FORM(a);                                          \
      } else {                                                                     \
        return ID##_forms::infix(a);                                               \
      }                                                                            \
    }                                                                              \
    template <class T>                                                             \
    static auto interval(T a) {                                                    \
      if constexpr (is_tri<T>) {                                                   \
        return ID##_forms::TRI_FORM(a);                                            \
      } else {                                                                     \
        return ID##_forms::IV_FORM(a);                                             \
      }                                                                            \
    }                                                                              \
  };
#define ATTNJIT_BINARY(ID, TOKEN, OP, PRECEDENCE, RULE, INT_FORM, FLOAT_FORM, IV_FORM, TRI_FORM, \
                       SCORE_FORM)                                                            \
  namespace ID##_forms {                                                                         \
  using namespace attnjit::ops;                                                                  \
  using forms::none;                                                                             \
  template <class T>                                                                             \
  auto infix(T a, T b) {                                                                         \
    return a OP b;                                                                               \
  }                                                                                              \
  }                                                                                              \
  struct ID##_row {                                                                              \
    static constexpr OperandRule rule = OperandRule::RULE;                                       \
    template <class T>                                                                           \
    static auto element(T a, T b) {                                                              \
      if constexpr (is_int<T>) {                                                                 \
        return ID##_forms::INT_FORM(a, b);                                                       \
      } else if constexpr (is_float<T>) {                                                        \
        return ID##_forms::FLOAT_FORM(a, b);                                                     \
      } else {                                                                                   \
        return ID##_forms::infix(a, b);                                                          \
      }                                                                                          \
    }                                                                                            \
    template <class T>                                                                           \
    static auto interval(T a, T b) {                                                             \
      if constexpr (is_tri<T>) {                                                                 \
        return ID##_forms::TRI_FORM(a, b);                                                       \
      } else {                                                                                   \
        return ID##_forms::IV_FORM(a, b);                                                        \
      }                                                                                          \
    }                                                                                            \
  };
#define ATTNJIT_FUNCTION(ID, SPELLING, ARITY, RULE, INT_FORM, FLOAT_FORM, IV_FORM, \
                         SCORE_FORM, MUFU)                                         \
  namespace ID##_forms {                                                           \
  using namespace attnjit::ops;                                                    \
  using forms::none;                                                               \
  }                                                                                \
  struct ID##_row {                                                                \
    static constexpr OperandRule rule = OperandRule::RULE;                         \
    template <class T, class... Rest>                                              \
    static auto element(T a, Rest... rest) {                                       \
      if constexpr (is_int<T>) {                                                   \
        return ID##_forms::INT_FORM(a, rest...);                                   \
      } else {                                                                     \
        return ID##_forms::FLOAT_FORM(a, rest...);                                 \
      }                                                                            \
    }                                                                              \
    template <class... T>                                                          \
    static auto interval(T... a) {                                                 \
      return ID##_forms::IV_FORM(a...);                                            \
    }                                                                              \
  };
#define ATTNJIT_CONVERSION(FROM, TO, ELEMENT_FORM, IV_FORM)       \
  namespace FROM##_to_##TO##_forms {                              \
  using namespace attnjit::ops;                                   \
  inline auto select(bool a) { return select_to<ValueType::TO>(a); } \
  }                                                               \
  struct FROM##_to_##TO##_row {                                   \
    template <class T>                                            \
    static auto element(T a) {                                    \
      return FROM##_to_##TO##_forms::ELEMENT_FORM(a);             \
    }                                                             \
    template <class T>                                            \
    static auto interval(T a) {                                   \
      return FROM##_to_##TO##_forms::IV_FORM(a);                  \
    }                                                             \
  };
#include "expr/operators.def"

}  // namespace attnjit::expr::forms
