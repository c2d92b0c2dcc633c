#include "codegen/kernel_tuning.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>

#include "attnjit/fwd_config.cuh"
#include "attnjit/sm90_fwd_config.cuh"
#include "codegen/residency.hpp"
#include "codegen/variant_source.hpp"
#include "common/error.hpp"
#include "expr/test_support.hpp"
#include "support/scoped_env.hpp"

using namespace attnjit;
using codegen::parse_kernel_tuning;

TEST_CASE("ATTNJIT_TUNE's items override only what they name", "[codegen][tuning]") {
  const auto none = parse_kernel_tuning("");
  CHECK_FALSE(none.sm90_block_n.has_value());
  CHECK_FALSE(none.sm90_stages.has_value());
  CHECK_FALSE(none.sm90_overlap.has_value());
  CHECK_FALSE(none.sm90_persistent.has_value());

  const auto some =
      parse_kernel_tuning("sm90_block_n=192,sm90_stages=3,,sm90_overlap=0,sm90_persistent=1");
  CHECK(some.sm90_block_n == 192);
  CHECK(some.sm90_stages == 3);
  CHECK(some.sm90_overlap == false);
  CHECK(some.sm90_persistent == true);
  // FlashAttention-3's key tiles for head dims 128 and 256 are not multiples of 64.
  CHECK(parse_kernel_tuning("sm90_block_n=176").sm90_block_n == 176);
  CHECK(parse_kernel_tuning("sm90_block_n=80").sm90_block_n == 80);
}

TEST_CASE("ATTNJIT_TUNE's sm80 items reshape the SM80 kernel's tiles", "[codegen][tuning]") {
  const auto tuning =
      parse_kernel_tuning("sm80_block_m=64,sm80_warps=4,sm80_blocks_per_sm=2,sm80_stages=2");
  const auto config = codegen::choose_kernel_config(90, DType::bf16, 128, tuning);
  CHECK(config.block_m == 64);
  CHECK(config.num_warps == 4);
  CHECK(config.blocks_per_sm == 2);
  CHECK(config.num_stages == 2);
  CHECK(config.block_n == codegen::choose_kernel_config(90, DType::bf16, 128).block_n);
  CHECK(config.smem_bytes == attnjit::forward_smem_bytes(128, 64, config.block_n, 2));
  // The defaults promise two blocks per SM only at head dim 32.
  CHECK(codegen::choose_kernel_config(90, DType::bf16, 32).blocks_per_sm == 2);
  CHECK(codegen::choose_kernel_config(90, DType::bf16, 64).blocks_per_sm == 1);
  // Two blocks per SM without sm80_stages: the stages two blocks' shared memory allows, 3 on an
  // H100 (2 x 115 KB of 228), 2 on an A100 (164 KB); an explicit count that does not fit twice is
  // refused.
  const auto two = parse_kernel_tuning("sm80_block_m=64,sm80_warps=4,sm80_blocks_per_sm=2");
  CHECK(codegen::choose_kernel_config(90, DType::bf16, 128, two).num_stages == 3);
  CHECK(codegen::choose_kernel_config(80, DType::bf16, 128, two).num_stages == 2);
  CHECK_THROWS_WITH(
      codegen::choose_kernel_config(
          80, DType::bf16, 128,
          parse_kernel_tuning("sm80_block_m=64,sm80_warps=4,sm80_blocks_per_sm=2,sm80_stages=3")),
      Catch::Contains("sm80_blocks_per_sm=2 needs shared memory for 2 blocks"));

  CHECK_THROWS_WITH(codegen::choose_kernel_config(
                        90, DType::bf16, 128, parse_kernel_tuning("sm80_block_m=48,sm80_warps=4")),
                    Catch::Contains("sm80_block_m 48 is not a whole number of 16-row tiles"));
  CHECK_THROWS_WITH(
      codegen::choose_kernel_config(86, DType::bf16, 256,
                                    parse_kernel_tuning("sm80_block_n=256,sm80_stages=4")),
      Catch::Contains("sm_86 allows"));
  CHECK_THROWS_WITH(parse_kernel_tuning("sm80_block_n=24"),
                    Catch::Contains("not a multiple of 16"));
  CHECK_THROWS_WITH(parse_kernel_tuning("sm80_warps=32"), Catch::Contains("[1, 16]"));
}

TEST_CASE("ATTNJIT_TUNE's decode items reshape the decoding entry's tiles, in its source too",
          "[codegen][tuning]") {
  const auto tuning = parse_kernel_tuning("decode_block_n=32,decode_stages=4");
  const auto config = codegen::choose_kernel_config(90, DType::bf16, 128, tuning);
  CHECK(config.decode_block_n == 32);
  CHECK(config.decode_stages == 4);
  CHECK(config.decode_smem_bytes == forward_smem_bytes(128, kDecodeBlockM, 32, 4));
  CHECK(config.decode_blocks_per_sm == 3);  // 82 KB each on a 228 KB SM
  // The forward entry's tiles stay the defaults.
  const auto defaults = codegen::choose_kernel_config(90, DType::bf16, 128);
  CHECK(config.block_n == defaults.block_n);
  CHECK(config.num_stages == defaults.num_stages);
  const auto mask = test::parse_mask("q_idx >= kv_idx");
  const auto score = test::parse_score("score");
  const std::string source =
      codegen::generate_kernel_source(mask, score, DType::bf16, 128, codegen::Target(90),
                                      codegen::FamilyRequest::sm80, tuning)
          .source;
  CHECK_THAT(source, Catch::Contains("__launch_bounds__(64, 3)\nattnjit_fwd_decode("));
  CHECK_THAT(source,
             Catch::Contains("attention_forward_decode<AttnjitVariant, attnjit::bf16_t, 128, 32, 4>"));

  CHECK_THROWS_WITH(parse_kernel_tuning("decode_block_n=144"),
                    Catch::Contains("decode_block_n=144 is not an integer in [16, 128]"));
  CHECK_THROWS_WITH(parse_kernel_tuning("decode_block_n=40"),
                    Catch::Contains("not a multiple of 16"));
  CHECK_THROWS_WITH(parse_kernel_tuning("decode_stages=5"), Catch::Contains("[2, 4]"));
  CHECK_THROWS_WITH(
      codegen::choose_kernel_config(86, DType::bf16, 256,
                                    parse_kernel_tuning("decode_block_n=128,decode_stages=4")),
      Catch::Contains("decode_block_n=128 and decode_stages=4 needs"));
}

TEST_CASE("a malformed ATTNJIT_TUNE names the item and the reason", "[codegen][tuning]") {
  CHECK_THROWS_WITH(parse_kernel_tuning("sm90_stages"),
                    Catch::Contains("'sm90_stages' is not key=value"));
  CHECK_THROWS_WITH(parse_kernel_tuning("block_n=64"), Catch::Contains("unknown key 'block_n'"));
  CHECK_THROWS_WITH(parse_kernel_tuning("sm90_stages=9"),
                    Catch::Contains("sm90_stages=9 is not an integer in [2, 8]"));
  CHECK_THROWS_WITH(parse_kernel_tuning("sm90_overlap=yes"), Catch::Contains("sm90_overlap=yes"));
  CHECK_THROWS_WITH(parse_kernel_tuning("sm90_block_n=88"),
                    Catch::Contains("sm90_block_n=88 is not a multiple of 16"));
  CHECK_THROWS_WITH(parse_kernel_tuning("sm90_block_n=48"),
                    Catch::Contains("sm90_block_n=48 is not an integer in [64, 256]"));
  try {
    parse_kernel_tuning("sm90_overlap=2");
    FAIL("no error");
  } catch (const Error& error) {
    CHECK(error.status() == Status::invalid_argument);
  }
}

TEST_CASE("tuning overrides the sm90 configuration and refuses what does not fit",
          "[codegen][tuning]") {
  codegen::KernelTuning tuning;
  tuning.sm90_block_n = 64;
  tuning.sm90_stages = 4;
  tuning.sm90_overlap = true;
  const auto config = codegen::sm90_kernel_config(128, tuning);
  CHECK(config.block_n == 64);
  CHECK(config.num_stages == 4);
  CHECK(config.overlap);
  CHECK_FALSE(config.persistent);
  CHECK(config.smem_bytes == attnjit::sm90_forward_smem_bytes(128, 128, 64, 4, false));

  // 128 x 176 fits at head dim 128, but leaves no room to stage a persistent kernel's output
  // apart from Q; 80 is the largest key tile that fits at head dim 256.
  tuning = codegen::KernelTuning{};
  tuning.sm90_block_n = 176;
  tuning.sm90_persistent = true;
  const auto wide = codegen::sm90_kernel_config(128, tuning);
  CHECK(wide.block_n == 176);
  CHECK_FALSE(attnjit::sm90_output_staged_apart(128, 128, 176, 2, true));
  CHECK(wide.smem_bytes == attnjit::sm90_forward_smem_bytes(128, 128, 176, 2, true));
  tuning.sm90_block_n = 80;
  CHECK(codegen::sm90_kernel_config(256, tuning).block_n == 80);
  tuning.sm90_block_n = 96;
  CHECK_THROWS_WITH(codegen::sm90_kernel_config(256, tuning), Catch::Contains("sm90_block_n=96"));

  tuning = codegen::KernelTuning{};
  tuning.sm90_block_n = 256;
  CHECK_THROWS_WITH(codegen::sm90_kernel_config(256, tuning),
                    Catch::Contains("needs") && Catch::Contains("sm90_persistent=0") &&
                        Catch::Contains("sm_90a allows 232448"));
}

TEST_CASE("sm90_block_m=192 gives the sm90 kernel three consumer warpgroups, 512 threads",
          "[codegen][tuning]") {
  CHECK_FALSE(parse_kernel_tuning("").sm90_block_m.has_value());
  CHECK(parse_kernel_tuning("sm90_block_m=192").sm90_block_m == 192);
  CHECK(parse_kernel_tuning("sm90_block_m=128").sm90_block_m == 128);
  CHECK_THROWS_WITH(parse_kernel_tuning("sm90_block_m=160"),
                    Catch::Contains("sm90_block_m=160 is not 64, 128 or 192"));
  CHECK_THROWS_WITH(parse_kernel_tuning("sm90_block_m=256"), Catch::Contains("sm90_block_m=256"));

  codegen::KernelTuning tuning;
  tuning.sm90_block_m = 192;
  const auto config = codegen::sm90_kernel_config(64, tuning);
  CHECK(config.block_m == 192);
  CHECK(config.num_warps == 16);
  CHECK(config.block_n == codegen::sm90_kernel_config(64).block_n);
  CHECK(config.smem_bytes == attnjit::sm90_forward_smem_bytes(64, 192, config.block_n, 2, false));
  CHECK(codegen::sm90_kernel_config(64).block_m == 128);  // the default is unchanged

  const auto mask = test::parse_mask("q_idx >= kv_idx");
  const auto score = test::parse_score("");
  const auto generate = [&](const codegen::KernelTuning& t) {
    return codegen::generate_kernel_source(mask, score, DType::bf16, 64, codegen::Target(90, true),
                                           codegen::FamilyRequest::sm90, t);
  };
  const auto wide = generate(tuning);
  CHECK(wide.source.find("__launch_bounds__(512, 1)") != std::string::npos);
  // The overlap is on by default at head dim 64; tuned tiles take the tile handoff only when
  // asked, and a masked 192-row block does not fold the scale (it would spill).
  CHECK(wide.source.find("attnjit::bf16_t, 64, 192, 128, 2, attnjit::kSm90FeatureOverlap | 0u>"
                         "(params)") != std::string::npos);
  // Another text, hence another cache key than the default kernel's.
  CHECK(wide.source != generate(codegen::KernelTuning{}).source);
}

TEST_CASE(
    "sm90_block_m=192 is refused above head dim 64 (at 128 unless P is in shared memory) and "
    "where it does not fit, naming the items",
    "[codegen][tuning]") {
  codegen::KernelTuning tuning;
  tuning.sm90_block_m = 192;
  for (const int head_dim : {128, 256}) {
    CHECK_THROWS_WITH(codegen::sm90_kernel_config(head_dim, tuning),
                      Catch::Contains("sm90_block_m=192 is for head dim 64, or 128 with "
                                      "sm90_p_smem=1"));
  }
  // 192 x 128 with P in shared memory: Q, two 128-key stages and P fill 230,664 of the bytes.
  tuning.sm90_p_smem = true;
  CHECK(codegen::sm90_kernel_config(128, tuning).smem_bytes == 230664);
  CHECK_THROWS_WITH(codegen::sm90_kernel_config(256, tuning),
                    Catch::Contains("at head dim 256 the consumers"));
  tuning.sm90_p_smem.reset();
  // Head dim 64: 192 x 64 Q and 6 stages of 128-key K and V fit; 7 stages need 255,112 bytes.
  tuning.sm90_stages = 6;
  CHECK(codegen::sm90_kernel_config(64, tuning).smem_bytes <= 227 * 1024);
  tuning.sm90_stages = 7;
  CHECK_THROWS_WITH(codegen::sm90_kernel_config(64, tuning),
                    Catch::Contains("sm90_block_m=192") && Catch::Contains("sm90_stages=7") &&
                        Catch::Contains("needs 255240 bytes") &&
                        Catch::Contains("sm_90a allows 232448"));
}

TEST_CASE("the environment's tuning reaches the generated sm90 source, not the sm80 one",
          "[codegen][tuning]") {
  const auto mask = test::parse_mask("q_idx >= kv_idx");
  const auto score = test::parse_score("");
  const auto generate = [&](const char* tune, codegen::FamilyRequest family) {
    const test::ScopedEnv scope("ATTNJIT_TUNE", tune);
    return codegen::generate_kernel_source(mask, score, DType::bf16, 64, codegen::Target(90, true),
                                           family);
  };
  const auto sm90 = generate("sm90_overlap=1,sm90_stages=4", codegen::FamilyRequest::sm90);
  const auto sm80 = generate("sm90_overlap=1,sm90_stages=4", codegen::FamilyRequest::sm80);
  CHECK_THROWS_WITH(generate("sm90_stages=1", codegen::FamilyRequest::sm90),
                    Catch::Contains("sm90_stages=1"));
  CHECK(sm90.config.overlap);
  CHECK(sm90.config.num_stages == 4);
  CHECK(sm90.source.find("attnjit::kSm90FeatureOverlap | 0u>(params)") != std::string::npos);
  CHECK(sm90.source.find("intra-warpgroup overlap on") != std::string::npos);
  CHECK_FALSE(sm80.config.overlap);
  CHECK(sm80.config.num_stages != 4);  // sm80 kernels have at most 3
  // The sm80 items reach the sm80 source (launch bounds: threads and blocks per SM).
  const auto tuned =
      generate("sm80_block_m=64,sm80_warps=4,sm80_blocks_per_sm=2", codegen::FamilyRequest::sm80);
  CHECK(tuned.source.find("__launch_bounds__(128, 2)") != std::string::npos);
  CHECK(tuned.source.find("attnjit::bf16_t, 64, 64, 64, 4,") != std::string::npos);
}

TEST_CASE("sm90_handoff=1: its template bit and schedule line, the same shared memory, its limits",
          "[codegen][tuning]") {
  CHECK_FALSE(parse_kernel_tuning("").sm90_handoff.has_value());
  CHECK(parse_kernel_tuning("sm90_handoff=1").sm90_handoff == true);
  CHECK_THROWS_WITH(parse_kernel_tuning("sm90_handoff=2"), Catch::Contains("sm90_handoff=2"));
  codegen::KernelTuning tuning;
  tuning.sm90_handoff = true;
  const auto config = codegen::sm90_kernel_config(128, tuning);
  CHECK(config.tile_handoff);
  // The words use barrier slots the stages leave free: no more shared memory.
  CHECK(config.smem_bytes == codegen::sm90_kernel_config(128).smem_bytes);
  const auto mask = test::parse_mask("doc[q_idx] == doc[kv_idx]");
  const auto source = codegen::generate_kernel_source(mask, test::parse_score(""), DType::bf16,
                                                      128, codegen::Target(90, true),
                                                      codegen::FamilyRequest::sm90, tuning)
                          .source;
  CHECK(source.find("attnjit::kSm90FeatureTileHandoff>(params);") != std::string::npos);
  CHECK(source.find(", tile handoff\n") != std::string::npos);
  // The default for masked kernels; sm90_handoff=0 turns it off, and unmasked kernels have
  // nothing to hand over.
  const auto handoff_in = [](const auto& m, const codegen::KernelTuning& t) {
    return codegen::generate_kernel_source(m, test::parse_score(""), DType::bf16, 128,
                                           codegen::Target(90, true), codegen::FamilyRequest::sm90,
                                           t)
               .source.find("TileHandoff") != std::string::npos;
  };
  CHECK(handoff_in(mask, codegen::KernelTuning{}));
  CHECK(codegen::sm90_kernel_config(128).tile_handoff);
  CHECK_FALSE(codegen::sm90_kernel_config(128, {}, false).tile_handoff);
  codegen::KernelTuning off;
  off.sm90_handoff = false;
  CHECK_FALSE(handoff_in(mask, off));
  CHECK_FALSE(handoff_in(test::parse_mask("true"), codegen::KernelTuning{}));
  // Tuned tiles (here the persistent grid, where it cannot be) take it only when asked; an
  // explicit sm90_handoff=1 that cannot be is refused.
  codegen::KernelTuning persistent;
  persistent.sm90_persistent = true;
  CHECK_FALSE(codegen::sm90_kernel_config(128, persistent).tile_handoff);
  codegen::KernelTuning narrow_tiles;
  narrow_tiles.sm90_block_n = 64;
  CHECK_FALSE(codegen::sm90_kernel_config(128, narrow_tiles).tile_handoff);
  // Not with the persistent grid, nor with more stages than leave slots free.
  tuning.sm90_persistent = true;
  CHECK_THROWS_WITH(codegen::sm90_kernel_config(128, tuning),
                    Catch::Contains("sm90_handoff=1 needs plain blocks"));
  tuning.sm90_persistent.reset();
  tuning.sm90_stages = 5;
  tuning.sm90_block_n = 64;
  CHECK_THROWS_WITH(codegen::sm90_kernel_config(64, tuning), Catch::Contains("sm90_stages=5"));
}

TEST_CASE("sm90_poly_exp2=N: its template bits and schedule line, the same tiles, its range",
          "[codegen][tuning]") {
  CHECK_FALSE(parse_kernel_tuning("").sm90_poly_exp2.has_value());
  CHECK(parse_kernel_tuning("sm90_poly_exp2=3").sm90_poly_exp2 == 3);
  CHECK(parse_kernel_tuning("sm90_poly_exp2=0").sm90_poly_exp2 == 0);
  CHECK_THROWS_WITH(parse_kernel_tuning("sm90_poly_exp2=9"), Catch::Contains("sm90_poly_exp2=9"));
  codegen::KernelTuning tuning;
  tuning.sm90_poly_exp2 = 3;
  // Not a tile option: the variant class's default tiles stay.
  const auto config = codegen::sm90_kernel_config(128, tuning, /*masked=*/false);
  const auto plain = codegen::sm90_kernel_config(128, codegen::KernelTuning{}, false);
  CHECK(config.poly_exp2 == 3);
  CHECK(plain.poly_exp2 == 0);
  CHECK(config.block_n == plain.block_n);
  CHECK(config.smem_bytes == plain.smem_bytes);
  const auto score = test::parse_score("30.0 * tanh(score / 30.0)");
  const auto source = codegen::generate_kernel_source(test::parse_mask(""), score, DType::bf16,
                                                      128, codegen::Target(90, true),
                                                      codegen::FamilyRequest::sm90, tuning)
                          .source;
  CHECK(source.find(" | attnjit::sm90_poly_exp2_feature(3)>(params);") != std::string::npos);
  CHECK(source.find(", 3 of 8 exponentials on the FMA pipe\n") != std::string::npos);
  CHECK(codegen::generate_kernel_source(test::parse_mask(""), score, DType::bf16, 128,
                                        codegen::Target(90, true), codegen::FamilyRequest::sm90,
                                        codegen::KernelTuning{})
            .source.find("poly_exp2") == std::string::npos);
  // The template's decoding of the bits is the encoding's inverse.
  for (int eighths = 0; eighths <= 8; ++eighths) {
    CHECK(attnjit::sm90_poly_exp2_eighths(attnjit::sm90_poly_exp2_feature(eighths) |
                                          attnjit::kSm90FeatureTileHandoff) == eighths);
  }
}

TEST_CASE("sm90_fold_m192=1 reaches three-consumer kernels only", "[codegen][tuning]") {
  CHECK(parse_kernel_tuning("sm90_fold_m192=1").sm90_fold_m192 == true);
  CHECK_THROWS_WITH(parse_kernel_tuning("sm90_fold_m192=on"), Catch::Contains("sm90_fold_m192"));
  codegen::KernelTuning tuning;
  tuning.sm90_fold_m192 = true;
  // Unmasked at head dim 64: 192 rows by default, so the option applies.
  CHECK(codegen::sm90_kernel_config(64, tuning, /*masked=*/false).fold_m192);
  const auto source = codegen::generate_kernel_source(test::parse_mask(""), test::parse_score(""),
                                                      DType::bf16, 64, codegen::Target(90, true),
                                                      codegen::FamilyRequest::sm90, tuning)
                          .source;
  CHECK(source.find(" | attnjit::kSm90FeatureFoldM192>(params);") != std::string::npos);
  CHECK(source.find(", scale folded into the exponent\n") != std::string::npos);
  // Two-consumer blocks fold it anyway: their kernel (and cache key) is the default one.
  CHECK_FALSE(codegen::sm90_kernel_config(64, tuning, /*masked=*/true).fold_m192);
  CHECK_FALSE(codegen::sm90_kernel_config(128, tuning, /*masked=*/false).fold_m192);
  // The default: on without a mask, unless the score calls special functions (soft-capping's
  // tanh); an explicit 0 or 1 wins either way.
  const codegen::KernelTuning defaults;
  CHECK(codegen::sm90_kernel_config(64, defaults, false).fold_m192);
  codegen::KernelTuning wide_masked;
  wide_masked.sm90_block_m = 192;
  CHECK_FALSE(codegen::sm90_kernel_config(64, wide_masked, true).fold_m192);
  CHECK_FALSE(codegen::sm90_kernel_config(64, defaults, false, /*special_score=*/true).fold_m192);
  CHECK(codegen::sm90_kernel_config(64, tuning, false, /*special_score=*/true).fold_m192);
  codegen::KernelTuning off;
  off.sm90_fold_m192 = false;
  CHECK_FALSE(codegen::sm90_kernel_config(64, off, false).fold_m192);
  const auto folded = [&](const char* score) {
    return codegen::generate_kernel_source(test::parse_mask(""), test::parse_score(score),
                                           DType::bf16, 64, codegen::Target(90, true),
                                           codegen::FamilyRequest::sm90, defaults)
               .source.find("kSm90FeatureFoldM192") != std::string::npos;
  };
  CHECK(folded(""));
  CHECK(folded("score + cap * (kv_idx - q_idx)"));
  CHECK_FALSE(folded("cap * tanh(score / cap)"));
}

TEST_CASE("sm90_blocks_per_sm=2: its launch bounds and template bit, its defaults, its limits",
          "[codegen][tuning]") {
  CHECK(parse_kernel_tuning("sm90_blocks_per_sm=2").sm90_blocks_per_sm == 2);
  CHECK_THROWS_WITH(parse_kernel_tuning("sm90_blocks_per_sm=3"),
                    Catch::Contains("sm90_blocks_per_sm=3"));
  codegen::KernelTuning tuning;
  tuning.sm90_blocks_per_sm = 2;
  // 64-key stages and no overlap unless asked for: what 104-register consumers hold.
  const auto config = codegen::sm90_kernel_config(64, tuning, /*masked=*/true);
  CHECK(config.blocks_per_sm == 2);
  CHECK(config.block_m == 128);
  CHECK(config.block_n == 64);
  CHECK_FALSE(config.overlap);
  CHECK(codegen::blocks_by_shared_memory(90, config.smem_bytes) >= 2);
  CHECK(codegen::sm90_kernel_config(64, codegen::KernelTuning{}, true).blocks_per_sm == 1);
  const auto mask = test::parse_mask("q_idx >= kv_idx && q_idx - kv_idx < 1024");
  const auto source = codegen::generate_kernel_source(mask, test::parse_score(""), DType::bf16,
                                                      64, codegen::Target(90, true),
                                                      codegen::FamilyRequest::sm90, tuning)
                          .source;
  CHECK(source.find("__launch_bounds__(384, 2)") != std::string::npos);
  CHECK(source.find(" | attnjit::kSm90FeatureTwoBlocksPerSm>(params);") != std::string::npos);
  CHECK(source.find(", two blocks per SM\n") != std::string::npos);
  const auto plain = codegen::generate_kernel_source(mask, test::parse_score(""), DType::bf16, 64,
                                                     codegen::Target(90, true),
                                                     codegen::FamilyRequest::sm90,
                                                     codegen::KernelTuning{})
                         .source;
  CHECK(plain.find("__launch_bounds__(384, 1)") != std::string::npos);
  CHECK(plain.find("TwoBlocksPerSm") == std::string::npos);
  // Head dim 64 and 64-key stages of two consumers, plain blocks: each other choice is refused.
  CHECK_THROWS_WITH(codegen::sm90_kernel_config(128, tuning), Catch::Contains("got head dim 128"));
  tuning.sm90_block_n = 128;
  CHECK_THROWS_WITH(codegen::sm90_kernel_config(64, tuning),
                    Catch::Contains("sm90_block_n=128"));
  tuning.sm90_block_n.reset();
  tuning.sm90_persistent = true;
  CHECK_THROWS_WITH(codegen::sm90_kernel_config(64, tuning),
                    Catch::Contains("sm90_persistent=1"));
  tuning.sm90_persistent.reset();
  tuning.sm90_block_m = 192;
  CHECK_THROWS_WITH(codegen::sm90_kernel_config(64, tuning), Catch::Contains("sm90_block_m=192"));
}

TEST_CASE("sm90_block_m=64: one consumer warpgroup, two blocks per SM at head dims 64 and 128",
          "[codegen][tuning]") {
  CHECK(parse_kernel_tuning("sm90_block_m=64").sm90_block_m == 64);
  CHECK_THROWS_WITH(parse_kernel_tuning("sm90_block_m=96"), Catch::Contains("not 64, 128 or 192"));
  codegen::KernelTuning tuning = parse_kernel_tuning("sm90_block_m=64,sm90_blocks_per_sm=2");
  // 256 threads (a producer and one consumer), the overlap kept, stages that fit twice on an SM:
  // 128 keys at head dim 64, 64 at 128.
  for (const auto& [head_dim, block_n] : {std::pair{64, 128}, std::pair{128, 64}}) {
    INFO("head dim " << head_dim);
    const auto config = codegen::sm90_kernel_config(head_dim, tuning, /*masked=*/true);
    CHECK(config.block_m == 64);
    CHECK(config.num_warps == 8);
    CHECK(config.blocks_per_sm == 2);
    CHECK(config.block_n == block_n);
    CHECK(config.overlap);
    CHECK(codegen::blocks_by_shared_memory(90, config.smem_bytes) >= 2);
  }
  const auto mask = test::parse_mask("q_idx >= kv_idx && q_idx - kv_idx < 1024");
  const auto source = codegen::generate_kernel_source(mask, test::parse_score(""), DType::bf16,
                                                      128, codegen::Target(90, true),
                                                      codegen::FamilyRequest::sm90, tuning)
                          .source;
  CHECK(source.find("__launch_bounds__(256, 2)") != std::string::npos);
  CHECK(source.find(", 128, 64, 64, 2, attnjit::kSm90FeatureOverlap | 0u | "
                    "attnjit::kSm90FeatureTwoBlocksPerSm>(params);") != std::string::npos);
  // One block per SM is a valid kernel too; head dim 256, P in shared memory, a persistent grid
  // and stages that do not fit twice are refused.
  CHECK(codegen::sm90_kernel_config(64, parse_kernel_tuning("sm90_block_m=64"), true).block_n ==
        128);
  CHECK_THROWS_WITH(codegen::sm90_kernel_config(256, tuning), Catch::Contains("head dim 256"));
  CHECK_THROWS_WITH(
      codegen::sm90_kernel_config(128, parse_kernel_tuning("sm90_block_m=64,sm90_p_smem=1")),
      Catch::Contains("sm90_p_smem=1"));
  CHECK_THROWS_WITH(
      codegen::sm90_kernel_config(64, parse_kernel_tuning("sm90_block_m=64,sm90_persistent=1")),
      Catch::Contains("sm90_persistent=1"));
  tuning.sm90_block_n = 128;
  CHECK_THROWS_WITH(codegen::sm90_kernel_config(128, tuning),
                    Catch::Contains("shared memory for two"));
}

TEST_CASE("sm90_p_smem=1 puts P in shared memory: its space, its template bit, its limits",
          "[codegen][tuning]") {
  CHECK_FALSE(parse_kernel_tuning("").sm90_p_smem.has_value());
  CHECK(parse_kernel_tuning("sm90_p_smem=1").sm90_p_smem == true);
  CHECK_THROWS_WITH(parse_kernel_tuning("sm90_p_smem=2"), Catch::Contains("sm90_p_smem=2"));

  codegen::KernelTuning tuning;
  tuning.sm90_p_smem = true;
  const auto config = codegen::sm90_kernel_config(128, tuning);
  CHECK(config.p_in_smem);
  // 128 rows x 128 keys of 16-bit P beside the default kernel's tiles.
  CHECK(config.smem_bytes == codegen::sm90_kernel_config(128).smem_bytes + 2 * 128 * 128);
  CHECK(config.smem_bytes == attnjit::sm90_forward_smem_bytes(128, 128, 128, 2, false, true));
  // P is stored in 64-key boxes; and at head dim 256 the 64 KB of 128 x 256 P do not fit.
  tuning.sm90_block_n = 176;
  CHECK_THROWS_WITH(codegen::sm90_kernel_config(128, tuning),
                    Catch::Contains("sm90_p_smem=1 needs sm90_block_n a multiple of 64"));
  tuning.sm90_block_n = 64;
  CHECK(codegen::sm90_kernel_config(256, tuning).p_in_smem);
  tuning.sm90_block_n = 128;
  CHECK_THROWS_WITH(codegen::sm90_kernel_config(256, tuning), Catch::Contains("sm90_p_smem=1"));

  const auto mask = test::parse_mask("q_idx >= kv_idx");
  const auto score = test::parse_score("");
  const auto generate = [&](const codegen::KernelTuning& t) {
    return codegen::generate_kernel_source(mask, score, DType::bf16, 64, codegen::Target(90, true),
                                           codegen::FamilyRequest::sm90, t);
  };
  codegen::KernelTuning on;
  on.sm90_p_smem = true;
  const auto with_p = generate(on);
  const auto plain = generate({});
  CHECK(with_p.source.find("attnjit::kSm90FeatureOverlap | 0u | attnjit::kSm90FeaturePInSmem>"
                           "(params)") != std::string::npos);
  CHECK(with_p.source.find("P in shared memory") != std::string::npos);
  // The default kernel's text has no trace of the option (its cache key did not change).
  CHECK(plain.source.find("PInSmem") == std::string::npos);
}

TEST_CASE("sm90_timeline is a flag of plain sm90 blocks that only the timeline kernels define",
          "[codegen][tuning]") {
  CHECK_FALSE(parse_kernel_tuning("").sm90_timeline.has_value());
  CHECK(parse_kernel_tuning("sm90_timeline=1").sm90_timeline == true);
  CHECK(parse_kernel_tuning("sm90_timeline=0").sm90_timeline == false);
  CHECK_THROWS_AS(parse_kernel_tuning("sm90_timeline=2"), Error);
  CHECK(codegen::sm90_kernel_config(64, parse_kernel_tuning("sm90_timeline=1")).timeline);
  CHECK_FALSE(codegen::sm90_kernel_config(64, {}).timeline);
  CHECK_THROWS_WITH(
      codegen::sm90_kernel_config(128, parse_kernel_tuning("sm90_timeline=1,sm90_persistent=1")),
      Catch::Contains("plain blocks"));
}

TEST_CASE("sm90_watchdog_ms parses as milliseconds up to ten minutes, 0 meaning off",
          "[codegen][tuning]") {
  CHECK_FALSE(parse_kernel_tuning("").sm90_watchdog_ms.has_value());
  CHECK(parse_kernel_tuning("sm90_watchdog_ms=5000").sm90_watchdog_ms == 5000);
  CHECK(parse_kernel_tuning("sm90_watchdog_ms=1").sm90_watchdog_ms == 1);
  CHECK(parse_kernel_tuning("sm90_watchdog_ms=600000").sm90_watchdog_ms == 600000);
  CHECK(parse_kernel_tuning("sm90_watchdog_ms=0").sm90_watchdog_ms == 0);
  for (const char* bad : {"sm90_watchdog_ms=600001", "sm90_watchdog_ms=-1", "sm90_watchdog_ms=5s",
                          "sm90_watchdog_ms=", "sm90_watchdog_ms=1e3"}) {
    INFO(bad);
    CHECK_THROWS_WITH(parse_kernel_tuning(bad),
                      Catch::Contains("is not an integer in [0, 600000]"));
  }
  CHECK_THROWS_WITH(parse_kernel_tuning("watchdog_ms=5"), Catch::Contains("sm90_watchdog_ms"));
  CHECK(codegen::sm90_kernel_config(128, parse_kernel_tuning("sm90_watchdog_ms=250")).watchdog_ms ==
        250);
  CHECK(codegen::sm90_kernel_config(128).watchdog_ms == 0);
}

TEST_CASE("the sm90 watchdog defines its limit in the sm90 source only, and only when on",
          "[codegen][tuning]") {
  const auto mask = test::parse_mask("q_idx >= kv_idx");
  const auto score = test::parse_score("");
  const auto generate = [&](const char* tune, codegen::FamilyRequest family) {
    return codegen::generate_kernel_source(mask, score, DType::bf16, 128,
                                           codegen::Target(90, true), family,
                                           parse_kernel_tuning(tune));
  };
  const auto watched = generate("sm90_watchdog_ms=5000", codegen::FamilyRequest::sm90);
  CHECK(watched.config.watchdog_ms == 5000);
  CHECK(watched.source.find("#define ATTNJIT_SM90_WATCHDOG_NS 5000000000ull\n") !=
        std::string::npos);
  CHECK(watched.source.find(", mbarrier watchdog 5000 ms\n") != std::string::npos);
  // Defined before the templates are included, which is where sm90_barrier.cuh reads it.
  CHECK(watched.source.find("#define ATTNJIT_SM90_WATCHDOG_NS") <
        watched.source.find("#include \"attnjit/attention_fwd_sm90.cuh\""));
  // Another limit is another source, hence another cache key.
  CHECK(generate("sm90_watchdog_ms=60000", codegen::FamilyRequest::sm90).source !=
        watched.source);
  // Off (0 or absent) the source is the default kernel's, byte for byte.
  const auto plain = generate("", codegen::FamilyRequest::sm90);
  CHECK(generate("sm90_watchdog_ms=0", codegen::FamilyRequest::sm90).source == plain.source);
  CHECK(plain.source.find("WATCHDOG") == std::string::npos);
  CHECK(plain.source.find("watchdog") == std::string::npos);
  // The sm80 kernel has no mbarrier waits: the key changes nothing there.
  const auto sm80 = generate("sm90_watchdog_ms=5000", codegen::FamilyRequest::sm80);
  CHECK(sm80.config.watchdog_ms == 0);
  CHECK(sm80.source == generate("", codegen::FamilyRequest::sm80).source);
}

TEST_CASE("score_row_shift: on by default in both families, 0 writes the unshifted score",
          "[codegen][tuning]") {
  CHECK(parse_kernel_tuning("score_row_shift=0").score_row_shift == false);
  CHECK(parse_kernel_tuning("score_row_shift=1").score_row_shift == true);
  CHECK_THROWS_WITH(parse_kernel_tuning("score_row_shift=2"), Catch::Contains("score_row_shift"));
  const char* alibi = "score + exp2(-8.0 * float(h + 1) / float(num_heads)) * float(kv_idx - q_idx)";
  for (const auto family : {codegen::FamilyRequest::sm80, codegen::FamilyRequest::sm90}) {
    const auto source = [&](const codegen::KernelTuning& tuning) {
      return codegen::generate_kernel_source(test::parse_mask("q_idx >= kv_idx"),
                                             test::parse_score(alibi), DType::bf16, 128,
                                             codegen::Target(90, true), family, tuning);
    };
    const codegen::GeneratedKernel shifted = source(codegen::KernelTuning{});
    CHECK(shifted.config.score_row_shift);
    CHECK(shifted.source.find("kScoreRowShift = true") != std::string::npos);
    codegen::KernelTuning off;
    off.score_row_shift = false;
    const codegen::GeneratedKernel unshifted = source(off);
    CHECK_FALSE(unshifted.config.score_row_shift);
    CHECK(unshifted.source.find("kScoreRowShift") == std::string::npos);
    CHECK(unshifted.source.find("(col_values.v0 - row_values.v0)") != std::string::npos);
  }
}

TEST_CASE("sm80_safe_sources: the sm80 kernel's earlier zero-fill addresses, only when asked for",
          "[codegen][tuning]") {
  CHECK(parse_kernel_tuning("sm80_safe_sources=1").sm80_safe_sources == true);
  CHECK(parse_kernel_tuning("sm80_safe_sources=0").sm80_safe_sources == false);
  CHECK_THROWS_WITH(parse_kernel_tuning("sm80_safe_sources=2"),
                    Catch::Contains("sm80_safe_sources"));
  const auto source = [](const codegen::KernelTuning& tuning, codegen::FamilyRequest family) {
    return codegen::generate_kernel_source(test::parse_mask("q_idx >= kv_idx"),
                                           test::parse_score(""), DType::bf16, 128,
                                           codegen::Target(90, true), family, tuning);
  };
  codegen::KernelTuning safe;
  safe.sm80_safe_sources = true;
  const codegen::GeneratedKernel plain = source({}, codegen::FamilyRequest::sm80);
  const codegen::GeneratedKernel tuned = source(safe, codegen::FamilyRequest::sm80);
  CHECK_FALSE(plain.config.sm80_safe_sources);
  CHECK(plain.source.find("ATTNJIT_SM80_SAFE_SOURCES") == std::string::npos);
  CHECK(tuned.config.sm80_safe_sources);
  // Before the kernel template, which reads it; another text, hence another cache key.
  const std::size_t define = tuned.source.find("#define ATTNJIT_SM80_SAFE_SOURCES 1\n");
  REQUIRE(define != std::string::npos);
  CHECK(define < tuned.source.find("#include \"attnjit/attention_fwd.cuh\""));
  // The sm90 kernel has no such copies: the key leaves its source alone.
  const codegen::GeneratedKernel sm90 = source(safe, codegen::FamilyRequest::sm90);
  CHECK_FALSE(sm90.config.sm80_safe_sources);
  CHECK(sm90.source == source({}, codegen::FamilyRequest::sm90).source);
}

// Every key the parser knows (as its error for an unknown one lists them, the table's order)
// changes the schedule, so that a tuning turns the short-rows rule off, except the watchdog and
// the timeline, aids that both kernels take.
TEST_CASE("every ATTNJIT_TUNE key but the watchdog and the timeline changes the schedule",
          "[codegen][tuning]") {
  std::string listed;
  try {
    parse_kernel_tuning("no_such_key=1");
    FAIL("an unknown key was accepted");
  } catch (const Error& e) {
    const std::string what = e.what();
    const auto at = what.find("keys: ");
    REQUIRE(at != std::string::npos);
    listed = what.substr(at + 6);
  }
  CHECK(listed == fmt::format("{}", fmt::join(codegen::tuning_key_names(), ", ")));
  CHECK_FALSE(codegen::changes_schedule(parse_kernel_tuning("")));
  for (const std::string_view name : codegen::tuning_key_names()) {
    const std::string key(name);
    INFO(key);
    // The first of these values the key accepts.
    std::optional<codegen::KernelTuning> tuning;
    for (const char* value : {"1", "2", "64", "128"}) {
      try {
        tuning = parse_kernel_tuning(key + "=" + value);
        break;
      } catch (const Error&) {
      }
    }
    REQUIRE(tuning.has_value());
    CHECK(codegen::changes_schedule(*tuning) ==
          (key != "sm90_watchdog_ms" && key != "sm90_timeline"));
  }
  CHECK(codegen::tuning_key_names().size() == 21);
}

// The users' list of the keys (docs/TUNING.md) names each one as a table row.
TEST_CASE("docs/TUNING.md lists every ATTNJIT_TUNE key", "[codegen][tuning]") {
  std::ifstream file(std::string(ATTNJIT_DOCS_DIR) + "/TUNING.md");
  REQUIRE(file.good());
  const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  for (const std::string_view name : codegen::tuning_key_names()) {
    INFO(name);
    CHECK(text.find(fmt::format("| `{}` |", name)) != std::string::npos);
  }
}
