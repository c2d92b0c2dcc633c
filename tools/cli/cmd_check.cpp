// attnjit check: parse and type-check a variant's expressions and print the lowered CUDA
// (attnjit_expressions_lower), or every expression's error.
#include <fmt/core.h>

#include "attnjit/attnjit.hpp"
#include "commands.hpp"
#include "variant_options.hpp"

namespace attnjit::cli {

void add_check_command(CLI::App& app) {
  auto* command = app.add_subcommand(
      "check", "Parse and type-check expressions; print the lowered CUDA or the error");
  auto options = std::make_shared<VariantOptions>();
  command->add_option("--mask", options->mask, "mask expression (default: true)");
  command->add_option("--score", options->score, "score expression (default: score)");
  command->add_option("--param", options->params, "parameter declaration NAME:int|float");
  command->add_option("--tensor", options->tensors, "tensor declaration NAME:int32|float32[RANK]");
  command->callback([options] {
    const c::SignaturePtr signature = options->signature();
    const attnjit_variant_desc desc = options->desc(*signature);
    attnjit_lowered_expressions* raw = nullptr;
    const attnjit_status status = attnjit_expressions_lower(&raw, &desc);
    // Both expressions are checked before anything is printed, so one run reports both errors.
    if (status == ATTNJIT_ERROR_PARSE) {
      fmt::print(stderr, "{}\n", attnjit_last_error());
      throw CLI::RuntimeError(1);
    }
    c::check(status);
    const c::LoweredExpressionsPtr lowered(raw);
    fmt::print("mask:  {}\n", lowered->canonical_mask);
    fmt::print("       {}\n", lowered->mask_reads_tensors
                                  ? "reads tensors: tiles classified with per-tile summaries"
                                  : "index-only: tiles classified with no precomputed block mask");
    fmt::print("score: {}\n\n", lowered->canonical_score);
    fmt::print("// mask(args, b, h, q_idx, kv_idx, q_len, kv_len, num_heads) -> bool\n{}\n",
               lowered->mask_body);
    fmt::print(
        "// score(args, score, b, h, q_idx, kv_idx, q_len, kv_len, num_heads) -> float\n{}\n",
        lowered->score_body);
    fmt::print("// classify(args, tile) -> TileClass\n{}\n", lowered->classify_body);
  });
}

}  // namespace attnjit::cli
