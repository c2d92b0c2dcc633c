#include "codegen/short_rows.hpp"

#include "attnjit/sm90_fwd_config.cuh"

namespace attnjit::codegen {

KernelTuning short_rows_tuning(const KernelTuning& base) {
  KernelTuning tuning = base;
  tuning.sm90_blocks_per_sm = 2;
  tuning.sm90_handoff = true;
  return tuning;
}

bool has_short_rows_schedule(const KernelConfig& standard, int head_dim,
                             const expr::Expression& mask) {
  return standard.family == KernelFamily::sm90 && head_dim == 64 &&
         standard.block_m == kSm90BlockM && standard.block_n == 128 &&
         standard.blocks_per_sm == 1 && !standard.persistent && !mask.is_constant_true() &&
         !mask.reads_tensors();
}

}  // namespace attnjit::codegen
