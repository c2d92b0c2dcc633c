// attnjit check: parse and type-check a variant's expressions and print the lowered CUDA.
#include <fmt/core.h>

#include <optional>

#include "codegen/lower_expr.hpp"
#include "common/error.hpp"
#include "commands.hpp"
#include "expr/expression.hpp"
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
    const VariantSpec spec = options->spec();
    // Both expressions are checked before anything is printed, so one run reports both errors.
    std::string errors;
    std::optional<expr::Expression> mask, score;
    try {
      mask = expr::parse_expression(expr::ExprKind::mask, spec.mask, spec.signature);
    } catch (const Error& e) {
      if (e.status() != Status::parse) throw;
      errors += std::string(e.what()) + "\n";
    }
    try {
      score = expr::parse_expression(expr::ExprKind::score, spec.score, spec.signature);
    } catch (const Error& e) {
      if (e.status() != Status::parse) throw;
      errors += std::string(e.what()) + "\n";
    }
    if (!errors.empty()) {
      fmt::print(stderr, "{}", errors);
      throw CLI::RuntimeError(1);
    }
    fmt::print("mask:  {}\n", mask->canonical());
    fmt::print("       {}\n", mask->reads_tensors()
                                  ? "reads tensors: tiles classified with per-tile summaries"
                                  : "index-only: tiles classified with no precomputed block mask");
    fmt::print("score: {}\n\n", score->canonical());
    fmt::print("// mask(args, b, h, q_idx, kv_idx, q_len, kv_len, num_heads) -> bool\n{}\n",
               codegen::lower_element_body(*mask));
    fmt::print("// score(args, score, b, h, q_idx, kv_idx, q_len, kv_len, num_heads) -> float\n{}\n",
               codegen::lower_element_body(*score));
    fmt::print("// classify(args, tile) -> TileClass\n{}\n", codegen::lower_classify_body(*mask));
  });
}

}  // namespace attnjit::cli
