#include "expr/evaluate.hpp"

#include "expr/interpret.hpp"

namespace attnjit::expr {
namespace {

Frame make_frame(const ElementIndex& at, float raw_score) {
  Frame frame;
  frame.builtins[static_cast<int>(Builtin::b)].i = at.b;
  frame.builtins[static_cast<int>(Builtin::h)].i = at.h;
  frame.builtins[static_cast<int>(Builtin::q_idx)].i = at.q_idx;
  frame.builtins[static_cast<int>(Builtin::kv_idx)].i = at.kv_idx;
  frame.builtins[static_cast<int>(Builtin::q_len)].i = at.q_len;
  frame.builtins[static_cast<int>(Builtin::kv_len)].i = at.kv_len;
  frame.builtins[static_cast<int>(Builtin::num_heads)].i = at.num_heads;
  frame.builtins[static_cast<int>(Builtin::score)].f = raw_score;
  return frame;
}

}  // namespace

bool evaluate_mask(const Expression& mask, const VariantArgs& args, const ElementIndex& at) {
  return run_program(mask.program(), &args, make_frame(at, 0.0f)).i != 0;
}

float evaluate_score(const Expression& score, const VariantArgs& args, const ElementIndex& at,
                     float raw_score) {
  return run_program(score.program(), &args, make_frame(at, raw_score)).f;
}

}  // namespace attnjit::expr
