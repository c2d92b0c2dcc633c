#include "expr/block_analysis.hpp"

#include <algorithm>
#include <vector>

#include "attnjit/expr_ops.cuh"
#include "common/error.hpp"
#include "expr/program.hpp"

namespace attnjit::expr {
namespace {

namespace ops = attnjit::ops;

// One stack slot of the interval interpreter; the field in use follows the instruction's type.
struct IvValue {
  ops::IntIv i;
  ops::FloatIv f;
  ops::Tri t;
};

constexpr int kInlineStack = 64;

IvValue int_value(ops::IntIv i) {
  IvValue v{};
  v.i = i;
  return v;
}
IvValue float_value(ops::FloatIv f) {
  IvValue v{};
  v.f = f;
  return v;
}
IvValue tri_value(ops::Tri t) {
  IvValue v{};
  v.t = t;
  return v;
}

ops::IntIv builtin_interval(Builtin builtin, const TileBounds& tile) {
  switch (builtin) {
    case Builtin::b: return ops::iv_int(tile.b);
    case Builtin::h: return ops::iv_int(tile.h);
    case Builtin::q_idx: return ops::iv_span(tile.q_begin, tile.q_end);
    case Builtin::kv_idx: return ops::iv_span(tile.kv_begin, tile.kv_end);
    case Builtin::q_len: return ops::iv_int(tile.q_len);
    case Builtin::kv_len: return ops::iv_int(tile.kv_len);
    case Builtin::num_heads: return ops::iv_int(tile.num_heads);
    case Builtin::score: break;
  }
  return ops::iv_int_full();
}

ops::Tri run_intervals(const Program& program, const VariantArgs& args, const TileBounds& tile,
                       IvValue* stack) {
  int sp = 0;
  for (std::size_t k = 0; k < program.code.size(); ++k) {
    const Instr& in = program.code[k];
    const ValueType type = program.types[k];
    IvValue* top = stack + sp;
    switch (in.op) {
      case Opcode::push:
        stack[sp++] = type == ValueType::floating ? float_value(ops::iv_float(in.imm.f))
                      : type == ValueType::boolean ? tri_value(ops::tri(in.imm.i != 0))
                                                   : int_value(ops::iv_int(in.imm.i));
        break;
      case Opcode::load_builtin:
        stack[sp++] = int_value(builtin_interval(static_cast<Builtin>(in.a), tile));
        break;
      case Opcode::load_param:
        stack[sp++] = type == ValueType::floating
                          ? float_value(ops::iv_float(ops::bits_to_float(args.scalars[in.a])))
                          : int_value(ops::iv_int(args.scalars[in.a]));
        break;
      case Opcode::read_i32_at_q:
        stack[sp++] = int_value(ops::iv_read_summary(args.tensors[in.a], args.tensors[in.a].q_summary,
                                                     ops::iv_span(tile.q_begin, tile.q_end)));
        break;
      case Opcode::read_i32_at_kv:
        stack[sp++] =
            int_value(ops::iv_read_summary(args.tensors[in.a], args.tensors[in.a].kv_summary,
                                           ops::iv_span(tile.kv_begin, tile.kv_end)));
        break;
      case Opcode::read_i32_1: top[-1] = int_value(ops::iv_read_i32_any()); break;
      case Opcode::read_f32_1: top[-1] = float_value(ops::iv_read_f32_any()); break;
      case Opcode::read_i32_2:
        top[-2] = int_value(ops::iv_read_i32_any());
        --sp;
        break;
      case Opcode::read_f32_2:
        top[-2] = float_value(ops::iv_read_f32_any());
        --sp;
        break;
      case Opcode::neg_i: top[-1].i = ops::iv_neg(top[-1].i); break;
      case Opcode::neg_f: top[-1].f = ops::iv_neg(top[-1].f); break;
      case Opcode::not_b: top[-1].t = ops::tri_not(top[-1].t); break;
      case Opcode::bitnot_i: top[-1].i = ops::iv_bitnot(top[-1].i); break;
#define ATTNJIT_BINARY(OPCODE, MAKE, EXPR)   \
  case Opcode::OPCODE: {                     \
    const IvValue a = top[-2], b = top[-1];  \
    top[-2] = MAKE(EXPR);                    \
    --sp;                                    \
    break;                                   \
  }
      ATTNJIT_BINARY(add_i, int_value, ops::iv_add(a.i, b.i))
      ATTNJIT_BINARY(sub_i, int_value, ops::iv_sub(a.i, b.i))
      ATTNJIT_BINARY(mul_i, int_value, ops::iv_mul(a.i, b.i))
      ATTNJIT_BINARY(div_i, int_value, ops::iv_div(a.i, b.i))
      ATTNJIT_BINARY(mod_i, int_value, ops::iv_mod(a.i, b.i))
      ATTNJIT_BINARY(add_f, float_value, ops::iv_add(a.f, b.f))
      ATTNJIT_BINARY(sub_f, float_value, ops::iv_sub(a.f, b.f))
      ATTNJIT_BINARY(mul_f, float_value, ops::iv_mul(a.f, b.f))
      ATTNJIT_BINARY(div_f, float_value, ops::iv_div(a.f, b.f))
      ATTNJIT_BINARY(lt_i, tri_value, ops::iv_lt(a.i, b.i))
      ATTNJIT_BINARY(le_i, tri_value, ops::iv_le(a.i, b.i))
      ATTNJIT_BINARY(gt_i, tri_value, ops::iv_gt(a.i, b.i))
      ATTNJIT_BINARY(ge_i, tri_value, ops::iv_ge(a.i, b.i))
      ATTNJIT_BINARY(eq_i, tri_value, ops::iv_eq(a.i, b.i))
      ATTNJIT_BINARY(ne_i, tri_value, ops::iv_ne(a.i, b.i))
      ATTNJIT_BINARY(lt_f, tri_value, ops::iv_lt(a.f, b.f))
      ATTNJIT_BINARY(le_f, tri_value, ops::iv_le(a.f, b.f))
      ATTNJIT_BINARY(gt_f, tri_value, ops::iv_gt(a.f, b.f))
      ATTNJIT_BINARY(ge_f, tri_value, ops::iv_ge(a.f, b.f))
      ATTNJIT_BINARY(eq_f, tri_value, ops::iv_eq(a.f, b.f))
      ATTNJIT_BINARY(ne_f, tri_value, ops::iv_ne(a.f, b.f))
      ATTNJIT_BINARY(and_b, tri_value, ops::tri_and(a.t, b.t))
      ATTNJIT_BINARY(or_b, tri_value, ops::tri_or(a.t, b.t))
      ATTNJIT_BINARY(eq_b, tri_value, ops::tri_eq(a.t, b.t))
      ATTNJIT_BINARY(ne_b, tri_value, ops::tri_ne(a.t, b.t))
      ATTNJIT_BINARY(bitand_i, int_value, ops::iv_bitand(a.i, b.i))
      ATTNJIT_BINARY(bitor_i, int_value, ops::iv_bitor(a.i, b.i))
      ATTNJIT_BINARY(bitxor_i, int_value, ops::iv_bitxor(a.i, b.i))
      ATTNJIT_BINARY(shl_i, int_value, ops::iv_shl(a.i, b.i))
      ATTNJIT_BINARY(shr_i, int_value, ops::iv_shr(a.i, b.i))
      ATTNJIT_BINARY(min_i, int_value, ops::iv_min(a.i, b.i))
      ATTNJIT_BINARY(min_f, float_value, ops::iv_min(a.f, b.f))
      ATTNJIT_BINARY(max_i, int_value, ops::iv_max(a.i, b.i))
      ATTNJIT_BINARY(max_f, float_value, ops::iv_max(a.f, b.f))
      ATTNJIT_BINARY(pow_f, float_value, ops::iv_pow(a.f, b.f))
#undef ATTNJIT_BINARY
      case Opcode::select: {
        const ops::Tri c = top[-3].t;
        if (type == ValueType::floating) {
          top[-3] = float_value(ops::iv_select(c, top[-2].f, top[-1].f));
        } else if (type == ValueType::boolean) {
          top[-3] = tri_value(ops::iv_select(c, top[-2].t, top[-1].t));
        } else {
          top[-3] = int_value(ops::iv_select(c, top[-2].i, top[-1].i));
        }
        sp -= 2;
        break;
      }
      case Opcode::clamp_i:
        top[-3] = int_value(ops::iv_clamp(top[-3].i, top[-2].i, top[-1].i));
        sp -= 2;
        break;
      case Opcode::clamp_f:
        top[-3] = float_value(ops::iv_clamp(top[-3].f, top[-2].f, top[-1].f));
        sp -= 2;
        break;
      case Opcode::abs_i: top[-1].i = ops::iv_abs(top[-1].i); break;
      case Opcode::abs_f: top[-1].f = ops::iv_abs(top[-1].f); break;
      case Opcode::exp_f: top[-1].f = ops::iv_exp(top[-1].f); break;
      case Opcode::exp2_f: top[-1].f = ops::iv_exp2(top[-1].f); break;
      case Opcode::log_f: top[-1].f = ops::iv_log(top[-1].f); break;
      case Opcode::log2_f: top[-1].f = ops::iv_log2(top[-1].f); break;
      case Opcode::sqrt_f: top[-1].f = ops::iv_sqrt(top[-1].f); break;
      case Opcode::rsqrt_f: top[-1].f = ops::iv_rsqrt(top[-1].f); break;
      case Opcode::tanh_f: top[-1].f = ops::iv_tanh(top[-1].f); break;
      case Opcode::sigmoid_f: top[-1].f = ops::iv_sigmoid(top[-1].f); break;
      case Opcode::floor_f: top[-1].f = ops::iv_floor(top[-1].f); break;
      case Opcode::ceil_f: top[-1].f = ops::iv_ceil(top[-1].f); break;
      case Opcode::f2i: top[-1] = int_value(ops::iv_f2i(top[-1].f)); break;
      case Opcode::i2f: top[-1] = float_value(ops::iv_i2f(top[-1].i)); break;
      case Opcode::b2f: top[-1] = float_value(ops::iv_tri_to_float(top[-1].t)); break;
      case Opcode::b2i: top[-1] = int_value(ops::iv_tri_to_int(top[-1].t)); break;
      case Opcode::nop: break;
    }
  }
  return stack[0].t;
}

}  // namespace

TileClass classify_tile(const Expression& mask, const VariantArgs& args, const TileBounds& tile) {
  if (tile.q_end <= tile.q_begin || tile.kv_end <= tile.kv_begin) return kTileEmpty;
  const Program& program = mask.program();
  ops::Tri result;
  if (program.max_stack <= kInlineStack) {
    IvValue stack[kInlineStack];
    result = run_intervals(program, args, tile, stack);
  } else {
    std::vector<IvValue> stack(static_cast<std::size_t>(program.max_stack));
    result = run_intervals(program, args, tile, stack.data());
  }
  return ops::tile_class(result);
}

std::vector<SummaryRequest> summary_requests(const Expression& mask) {
  std::vector<SummaryRequest> requests;
  for (const Instr& in : mask.program().code) {
    if (in.op != Opcode::read_i32_at_q && in.op != Opcode::read_i32_at_kv) continue;
    const SummaryRequest request{in.a, in.op == Opcode::read_i32_at_q ? SummaryAxis::q : SummaryAxis::kv};
    const bool seen = std::any_of(requests.begin(), requests.end(), [&](const SummaryRequest& r) {
      return r.tensor == request.tensor && r.axis == request.axis;
    });
    if (!seen) requests.push_back(request);
  }
  std::sort(requests.begin(), requests.end(), [](const SummaryRequest& a, const SummaryRequest& b) {
    return a.tensor != b.tensor ? a.tensor < b.tensor : a.axis < b.axis;
  });
  return requests;
}

HostSummary build_summary(const TensorArg& tensor, int granularity, int index_len) {
  if (granularity <= 0) {
    throw_error(Status::invalid_argument, "summary granularity must be positive, got {}", granularity);
  }
  if (tensor.elem != kTensorInt32 || tensor.rank != 1) {
    throw_error(Status::invalid_argument, "summaries are built for rank-1 int32 tensors only");
  }
  HostSummary summary;
  summary.granularity = granularity;
  const long long len = std::max(index_len, 0);
  const auto num_blocks = static_cast<std::size_t>((len + granularity - 1) / granularity);
  summary.min.resize(num_blocks);
  summary.max.resize(num_blocks);
  for (std::size_t block = 0; block < num_blocks; ++block) {
    // Note: the whole block is summarised, including indices past index_len or the tensor's end
    // (which read 0), so the summary is sound for any index a tile may cover.
    const int begin = static_cast<int>(block) * granularity;
    int lo = ops::read_i32(tensor, begin), hi = lo;
    for (int i = begin + 1; i < begin + granularity; ++i) {
      const int v = ops::read_i32(tensor, i);
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    summary.min[block] = lo;
    summary.max[block] = hi;
  }
  return summary;
}

}  // namespace attnjit::expr
