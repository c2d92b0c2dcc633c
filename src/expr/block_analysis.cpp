#include "expr/block_analysis.hpp"

#include <algorithm>
#include <vector>

#include "attnjit/expr_ops.cuh"
#include "common/error.hpp"
#include "expr/evaluator.hpp"

namespace attnjit::expr {
namespace {

namespace ops = attnjit::ops;

constexpr int kInlineStack = 64;

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

// Values as the generated classify code holds them: every value an interval over the tile (bools
// as a three-valued Tri), each computed by the same attnjit::ops functions.
class IntervalDomain {
 public:
  // The field in use follows the instruction's type.
  struct Slot {
    ops::IntIv i;
    ops::FloatIv f;
    ops::Tri t;
  };

  IntervalDomain(const VariantArgs& args, const TileBounds& tile) : args_(args), tile_(tile) {}

  static ops::IntIv get_int(const Slot& s) { return s.i; }
  static ops::FloatIv get_float(const Slot& s) { return s.f; }
  static ops::Tri get_bool(const Slot& s) { return s.t; }
  static void put(Slot& s, ops::IntIv v) { s.i = v; }
  static void put(Slot& s, ops::FloatIv v) { s.f = v; }
  static void put(Slot& s, ops::Tri v) { s.t = v; }
  template <class Row, class... A>
  static auto apply(A... a) {
    return Row::interval(a...);
  }

  Slot constant(const Instr& in) const {
    Slot s{};
    if (in.type == ValueType::floating) {
      s.f = ops::iv_float(in.imm.f);
    } else if (in.type == ValueType::boolean) {
      s.t = ops::tri(in.imm.i != 0);
    } else {
      s.i = ops::iv_int(in.imm.i);
    }
    return s;
  }
  Slot builtin(Builtin builtin) const {
    Slot s{};
    s.i = builtin_interval(builtin, tile_);
    return s;
  }
  Slot param(const Instr& in) const {
    Slot s{};
    if (in.type == ValueType::floating) {
      s.f = ops::iv_float(ops::bits_to_float(args_.scalars[in.a]));
    } else {
      s.i = ops::iv_int(args_.scalars[in.a]);
    }
    return s;
  }
  Slot read_at(int tensor, SummaryAxis axis) const {
    const TensorArg& arg = args_.tensors[tensor];
    Slot s{};
    s.i = axis == SummaryAxis::q
              ? ops::iv_read_summary(arg, arg.q_summary, ops::iv_span(tile_.q_begin, tile_.q_end))
              : ops::iv_read_summary(arg, arg.kv_summary, ops::iv_span(tile_.kv_begin, tile_.kv_end));
    return s;
  }
  // The element itself where every index is one value over the tile, else any element.
  Slot read(const Instr& in, const Slot* indices) const {
    const TensorArg& arg = args_.tensors[in.a];
    const bool rank2 = in.op == Opcode::read_2;
    Slot s{};
    if (in.type == ValueType::integer) {
      s.i = rank2 ? ops::iv_read_i32(arg, indices[0].i, indices[1].i)
                  : ops::iv_read_i32(arg, indices[0].i);
    } else {
      s.f = rank2 ? ops::iv_read_f32(arg, indices[0].i, indices[1].i)
                  : ops::iv_read_f32(arg, indices[0].i);
    }
    return s;
  }
  Slot select(ValueType type, const Slot& c, const Slot& a, const Slot& b) const {
    Slot s{};
    if (type == ValueType::floating) {
      s.f = ops::iv_select(c.t, a.f, b.f);
    } else if (type == ValueType::boolean) {
      s.t = ops::iv_select(c.t, a.t, b.t);
    } else {
      s.i = ops::iv_select(c.t, a.i, b.i);
    }
    return s;
  }

 private:
  const VariantArgs& args_;
  const TileBounds& tile_;
};

}  // namespace

TileClass classify_tile(const Expression& mask, const VariantArgs& args, const TileBounds& tile) {
  if (tile.q_end <= tile.q_begin || tile.kv_end <= tile.kv_begin) return kTileEmpty;
  const Program& program = mask.program();
  const IntervalDomain domain(args, tile);
  IntervalDomain::Slot result;
  if (program.max_stack <= kInlineStack) {
    IntervalDomain::Slot stack[kInlineStack];
    result = evaluate(program, domain, stack);
  } else {
    std::vector<IntervalDomain::Slot> stack(static_cast<std::size_t>(program.max_stack));
    result = evaluate(program, domain, stack.data());
  }
  return ops::tile_class(result.t);
}

const std::vector<SummaryRequest>& summary_requests(const Expression& mask) {
  return mask.program().summary_requests;
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
