// Lowered element and classify bodies compile with NVRTC against the real kernel headers
// (src/codegen/lower_expr.cpp + kernels_templates/attnjit/expr_ops.cuh). Needs no GPU.
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <nvrtc.h>

#include "codegen/deepest_expressions.hpp"
#include "codegen/lower_expr.hpp"
#include "codegen/lower_hooks.hpp"
#include "expr/random_expr.hpp"
#include "expr/test_support.hpp"

using namespace attnjit;

namespace {

std::string read_template(const std::string& name) {
  const std::string path = std::string(ATTNJIT_SOURCE_DIR) + "/kernels_templates/" + name;
  std::ifstream file(path);
  REQUIRE(file.good());
  std::stringstream contents;
  contents << file.rdbuf();
  return contents.str();
}

// One namespace per variant holding its lowered functions, and a kernel that calls them all.
std::string wrap(const std::vector<expr::Expression>& masks, const std::vector<expr::Expression>& scores) {
  std::string source = "#include \"attnjit/expr_ops.cuh\"\n\n";
  std::string calls;
  for (std::size_t i = 0; i < masks.size(); ++i) {
    source += fmt::format(
        "namespace mask{0} {{\n"
        "__device__ bool element(const attnjit::VariantArgs& args, int b, int h, int q_idx, int kv_idx,\n"
        "                        int q_len, int kv_len, int num_heads) {{\n{1}}}\n"
        "__device__ attnjit::TileClass classify(const attnjit::VariantArgs& args,\n"
        "                                       const attnjit::TileBounds& tile) {{\n{2}}}\n"
        "}}  // namespace mask{0}\n",
        i, codegen::lower_element_body(masks[i]), codegen::lower_classify_body(masks[i]));
    calls += fmt::format(
        "  out[{0}] = mask{1}::element(args, 0, 1, 2, 3, 4, 5, 6) ? 1 : 0;\n"
        "  out[{0} + 1] = mask{1}::classify(args, tile);\n",
        2 * i, i);
  }
  for (std::size_t i = 0; i < scores.size(); ++i) {
    source += fmt::format(
        "namespace score{0} {{\n"
        "__device__ float element(const attnjit::VariantArgs& args, int b, int h, int q_idx, int kv_idx,\n"
        "                         int q_len, int kv_len, int num_heads, float score) {{\n{1}}}\n"
        "}}  // namespace score{0}\n",
        i, codegen::lower_element_body(scores[i]));
    calls += fmt::format("  fout[{}] = score{}::element(args, 0, 1, 2, 3, 4, 5, 6, 0.5f);\n", i, i);
  }
  source +=
      "\nextern \"C\" __global__ void probe(attnjit::VariantArgs args, attnjit::TileBounds tile, int* out,\n"
      "                                   float* fout) {\n" +
      calls + "}\n";
  return source;
}

// One struct per (mask, score) pair holding its hooks as codegen/lower_hooks.hpp writes them
// (hoisted values, fast math in the score), and a kernel that calls every hook the way the
// forward kernel does.
std::string wrap_hooks(const std::vector<expr::Expression>& masks,
                       const std::vector<expr::Expression>& scores) {
  std::string source = "#include \"attnjit/expr_ops.cuh\"\n\n";
  std::string calls;
  for (std::size_t i = 0; i < masks.size(); ++i) {
    const expr::Expression& score = scores[i % scores.size()];
    source += fmt::format("struct Hooks{} {{\n{}}};\n", i,
                          codegen::lower_element_hooks(masks[i], score));
    calls += fmt::format(
        "  {{\n"
        "    const Hooks{0}::Block block = Hooks{0}::block(args, 0, 1, 4, 5, 6);\n"
        "    const Hooks{0}::Row row = Hooks{0}::row(block, args, 0, 1, 2, 4, 5, 6);\n"
        "    const Hooks{0}::Col col = Hooks{0}::col(block, args, 0, 1, 3, 4, 5, 6);\n"
        "    out[{0}] = Hooks{0}::mask(block, row, col, args, 0, 1, 2, 3, 4, 5, 6) ? 1 : 0;\n"
        "    const Hooks{0}::ScoreConstants constants =\n"
        "        Hooks{0}::score_constants(block, args, 0.125f, 0, 1, 4, 5, 6);\n"
        "    fout[{0}] = constants.factor *\n"
        "                Hooks{0}::score_core(constants, block, row, col, args, 0.5f, 0, 1, 2, 3, 4, 5, 6);\n"
        "  }}\n",
        i);
  }
  source +=
      "\nextern \"C\" __global__ void probe(attnjit::VariantArgs args, int* out, float* fout) {\n" +
      calls + "}\n";
  return source;
}

// Compiles for sm_80; fails with the log.
void compile(const std::string& source) {
  static const char* kHeaders[] = {"attnjit/hd.cuh",           "attnjit/bit_cast.cuh",
                                   "attnjit/numeric.cuh",      "attnjit/tile.cuh",
                                   "attnjit/variant_args.cuh", "attnjit/grid_dependency.cuh",
                                   "attnjit/expr_ops.cuh"};
  constexpr int kNumHeaders = static_cast<int>(sizeof kHeaders / sizeof kHeaders[0]);
  std::vector<std::string> contents;
  for (const char* name : kHeaders) contents.push_back(read_template(name));
  std::vector<const char*> header_texts;
  for (const auto& text : contents) header_texts.push_back(text.c_str());
  nvrtcProgram program;
  REQUIRE(nvrtcCreateProgram(&program, source.c_str(), "lowered.cu", kNumHeaders, header_texts.data(),
                             kHeaders) ==
          NVRTC_SUCCESS);
  const char* options[] = {"--gpu-architecture=sm_80", "-std=c++17"};
  const nvrtcResult result = nvrtcCompileProgram(program, 2, options);
  std::size_t log_size = 0;
  nvrtcGetProgramLogSize(program, &log_size);
  std::string log(log_size, '\0');
  nvrtcGetProgramLog(program, log.data());
  nvrtcDestroyProgram(&program);
  if (result != NVRTC_SUCCESS) {
    FAIL(fmt::format("NVRTC: {}\n{}\n--- source ---\n{}", nvrtcGetErrorString(result),
                     log.substr(0, 20000), source.substr(0, 20000)));
  }
}

}  // namespace

TEST_CASE("lowered standard variants compile with NVRTC", "[nvrtc]") {
  std::vector<expr::Expression> masks, scores;
  for (const char* source : {"", "q_idx >= kv_idx", "q_idx >= kv_idx && q_idx - kv_idx < W",
                             "kv_idx < prefix || q_idx >= kv_idx", "doc[q_idx] == doc[kv_idx]",
                             "bias[h, kv_idx - q_idx + 4096] > cap"}) {
    masks.push_back(test::parse_mask(source));
  }
  for (const char* source : {"", "score + exp2(-8.0 * float(h + 1) / float(num_heads)) * float(kv_idx - q_idx)",
                             "cap * tanh(score / cap)", "score + 0.0 / 0.0 + inf - inf * -1.0"}) {
    scores.push_back(test::parse_score(source));
  }
  compile(wrap(masks, scores));
}

TEST_CASE("hundreds of random lowered expressions compile with NVRTC", "[nvrtc]") {
  const expr::Signature signature = test::random_signature();
  test::RandomExpr generator(4242);
  std::vector<expr::Expression> masks, scores;
  for (int i = 0; i < 300; ++i) {
    masks.push_back(expr::parse_expression(expr::ExprKind::mask, generator.mask(4), signature));
  }
  for (int i = 0; i < 100; ++i) {
    scores.push_back(expr::parse_expression(expr::ExprKind::score, generator.score(4), signature));
  }
  compile(wrap(masks, scores));
}

TEST_CASE("element hooks of random masks and scores compile with NVRTC", "[nvrtc]") {
  const expr::Signature signature = test::random_signature();
  test::RandomExpr generator(777);
  std::vector<expr::Expression> masks, scores;
  for (int i = 0; i < 120; ++i) {
    masks.push_back(expr::parse_expression(expr::ExprKind::mask, generator.mask(4), signature));
  }
  for (int i = 0; i < 60; ++i) {
    scores.push_back(expr::parse_expression(expr::ExprKind::score, generator.score(4), signature));
  }
  compile(wrap_hooks(masks, scores));
}

TEST_CASE("the deepest accepted expressions compile with NVRTC", "[nvrtc]") {
  std::vector<expr::Expression> masks, scores;
  for (const auto& deep : test::deepest_sources()) {
    if (!deep.mask.empty()) masks.push_back(expr::parse_expression(expr::ExprKind::mask, deep.mask, {}));
    if (!deep.score.empty()) {
      scores.push_back(expr::parse_expression(expr::ExprKind::score, deep.score, {}));
    }
  }
  compile(wrap(masks, scores));
}
