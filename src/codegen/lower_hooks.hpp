// The element hooks of a variant struct (mask and score), with their loop-invariant work hoisted.
//
// The kernel evaluates the mask and the score once per (query, key) element, in its innermost
// loop. Sub-expressions that do not depend on both indices are computed less often:
//   Block  values of (b, h, parameters, lengths): once per thread block (ALiBi's slope);
//   Row    values that also read q_idx:            once per query row a thread holds (doc[q_idx]);
//   Col    values that also read kv_idx:           once per key column of a tile (doc[kv_idx]).
// Identical sub-expressions of one level (in the mask and the score alike) share one value.
// Note: every operation of the language is total (no traps; out-of-range reads give 0), so a
// sub-expression evaluated eagerly, even where the element code would have skipped it (the
// other arm of a conditional, the right side of `&&`), changes nothing.
#pragma once

#include <string>

#include "expr/expression.hpp"

namespace attnjit::codegen {

// Names of the hook parameters that carry the hoisted values (reserved in the expression language).
constexpr const char* kBlockValues = "block_values";
constexpr const char* kRowValues = "row_values";
constexpr const char* kColValues = "col_values";

// Member declarations of the variant struct, indented for a struct body: the Block, Row and Col
// structs, the static functions block(), row(), col() that compute them, mask(), and the score in
// its factored form: ScoreConstants, score_constants() and score_core() (codegen/factor_score.hpp).
// Deterministic text. The score uses the fast transcendental functions (ElementOptions).
// `row_shift`: the score's row shift where it has one (codegen/factor_score.hpp), declared by
// kScoreRowShift, score_key_slope() and score_row_shift().
std::string lower_element_hooks(const expr::Expression& mask, const expr::Expression& score,
                                bool row_shift = false);

// Indents every non-empty line of a body written for namespace scope by two more spaces, as the
// body of a member function.
std::string indent_member_body(const std::string& body);

}  // namespace attnjit::codegen
