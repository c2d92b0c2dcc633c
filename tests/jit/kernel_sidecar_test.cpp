#include "jit/kernel_sidecar.hpp"

#include <catch2/catch.hpp>

using namespace attnjit;

namespace {

codegen::KernelConfig config() {
  codegen::KernelConfig config;
  config.block_m = 128;
  config.block_n = 64;
  config.num_warps = 8;
  config.num_stages = 2;
  config.smem_bytes = 65536;
  return config;
}

nlohmann::json variant() {
  return {{"name", "causal"},         {"mask", "q_idx>=kv_idx"}, {"mask_canonical", "q_idx >= kv_idx"},
          {"score_canonical", "score"}, {"params", nlohmann::json::array()},
          {"tensors", nlohmann::json::array()}, {"dtype", "bf16"}, {"head_dim", 128}};
}

// A cubin's report: the forward entry's resources.
nlohmann::json forward_report() { return {{"attnjit_fwd", to_json(ResourceUsage{})}}; }

nlohmann::json sidecar() {
  return {{"variant", variant()}, {"config", to_json(config())}, {"resources", forward_report()}};
}

}  // namespace

TEST_CASE("a stored kernel fits a request with its variant's identity and configuration",
          "[jit][sidecar]") {
  CHECK(check_kernel_sidecar(sidecar(), variant(), config(), false).empty());
  // Name and spelling are for operators: another name or spelling shares the kernel.
  nlohmann::json renamed = variant();
  renamed["name"] = "other";
  renamed["mask"] = "q_idx >= kv_idx";
  CHECK(check_kernel_sidecar(sidecar(), renamed, config(), false).empty());

  for (const char* field : kVariantIdentityFields) {
    INFO(field);
    nlohmann::json other = variant();
    other[field] = "something else";
    CHECK_THAT(check_kernel_sidecar(sidecar(), other, config(), false),
               Catch::Contains(std::string("records variant ") + field));
  }
  codegen::KernelConfig smaller = config();
  smaller.smem_bytes = 1024;
  CHECK_THAT(check_kernel_sidecar(sidecar(), variant(), smaller, false),
             Catch::Contains("is not the variant's"));
  nlohmann::json no_config = sidecar();
  no_config.erase("config");
  CHECK(check_kernel_sidecar(no_config, variant(), config(), false) == "sidecar lacks 'config'");
  nlohmann::json huge = sidecar();
  huge["resources"]["attnjit_fwd"]["registers"] = 1e300;
  CHECK_THAT(check_kernel_sidecar(huge, variant(), config(), false),
             Catch::Contains("'registers' is not an int"));
  // Sidecars written before every entry's report was stored had only the forward entry's:
  // refused (the kernel is compiled again and its entry rewritten), never read as zeros.
  nlohmann::json old = sidecar();
  old.erase("resources");
  old["forward_resources"] = to_json(ResourceUsage{});
  CHECK(check_kernel_sidecar(old, variant(), config(), false) == "sidecar lacks 'resources'");
  // A cubin's report must name its forward entry; PTX has no report to name it.
  nlohmann::json unnamed = sidecar();
  unnamed["resources"] = nlohmann::json::object();
  CHECK(check_kernel_sidecar(unnamed, variant(), config(), false) ==
        "sidecar's 'resources' lacks 'attnjit_fwd' (it lists [])");
  CHECK(check_kernel_sidecar(unnamed, variant(), config(), true).empty());
  // The refusal names what the report did list, which is what tells a lost report (nothing, or
  // another module's entries) from an old one.
  nlohmann::json summary_only = sidecar();
  summary_only["resources"] = {{"attnjit_tensor_summary", to_json(ResourceUsage{})}};
  CHECK(check_kernel_sidecar(summary_only, variant(), config(), false) ==
        "sidecar's 'resources' lacks 'attnjit_fwd' (it lists [attnjit_tensor_summary])");
}

TEST_CASE("a fresh report's missing entries are the ones the cache would refuse",
          "[jit][sidecar]") {
  std::map<std::string, ResourceUsage, std::less<>> report;
  CHECK(missing_report_entry(report, config()) == "attnjit_fwd");
  report["attnjit_tensor_summary"] = {};
  CHECK(missing_report_entry(report, config()) == "attnjit_fwd");
  report["attnjit_fwd"] = {};
  CHECK(missing_report_entry(report, config()).empty());
  codegen::KernelConfig with_decode = config();
  with_decode.decode_block_n = 64;
  CHECK(missing_report_entry(report, with_decode) == "attnjit_fwd_decode");
  report["attnjit_fwd_decode"] = {};
  CHECK(missing_report_entry(report, with_decode).empty());
}

TEST_CASE("configurations and resources round-trip through JSON", "[jit][sidecar]") {
  const codegen::KernelConfig parsed = config_from_json(to_json(config()));
  CHECK(parsed.block_m == 128);
  CHECK(parsed.smem_bytes == 65536);
  ResourceUsage usage;
  usage.registers = 96;
  usage.spill_load_bytes = 4;
  const ResourceUsage back = resources_from_json(to_json(usage));
  CHECK(back.registers == 96);
  CHECK(back.spill_load_bytes == 4);
}

TEST_CASE("the kernel family is part of a stored kernel's configuration", "[jit][sidecar]") {
  codegen::KernelConfig sm90 = config();
  sm90.family = codegen::KernelFamily::sm90;
  CHECK(to_json(sm90)["family"] == "sm90");
  CHECK(config_from_json(to_json(sm90)).family == codegen::KernelFamily::sm90);
  // A stored sm80 kernel does not serve a request for the sm90 kernel of the same shape.
  CHECK_THAT(check_kernel_sidecar(sidecar(), variant(), sm90, false),
             Catch::Contains("is not the variant's"));
  // Entries written before the family existed are sm80 kernels; an unknown family is refused.
  nlohmann::json old = to_json(config());
  old.erase("family");
  CHECK(config_from_json(old).family == codegen::KernelFamily::sm80);
  nlohmann::json unknown = to_json(config());
  unknown["family"] = "sm100";
  CHECK_THROWS_WITH(config_from_json(unknown), Catch::Contains("not sm80 or sm90"));
}

TEST_CASE("the sm90 schedule options are part of a stored kernel's configuration",
          "[jit][sidecar]") {
  codegen::KernelConfig tuned = config();
  tuned.family = codegen::KernelFamily::sm90;
  tuned.overlap = true;
  tuned.persistent = true;
  tuned.p_in_smem = true;
  const codegen::KernelConfig back = config_from_json(to_json(tuned));
  CHECK(back.overlap);
  CHECK(back.persistent);
  CHECK(back.p_in_smem);
  // A persistent kernel launches another grid: it never serves a request for the other one.
  codegen::KernelConfig plain = tuned;
  plain.persistent = false;
  const nlohmann::json stored = {
      {"variant", variant()}, {"config", to_json(tuned)}, {"resources", forward_report()}};
  CHECK_THAT(check_kernel_sidecar(stored, variant(), plain, false),
             Catch::Contains("is not the variant's"));
  // Entries written before the options existed have neither; a non-boolean is refused.
  nlohmann::json old = to_json(tuned);
  old.erase("overlap");
  old.erase("persistent");
  old.erase("p_in_smem");
  CHECK_FALSE(config_from_json(old).overlap);
  CHECK_FALSE(config_from_json(old).persistent);
  CHECK_FALSE(config_from_json(old).p_in_smem);
  nlohmann::json odd = to_json(tuned);
  odd["persistent"] = 1;
  CHECK_THROWS_WITH(config_from_json(odd), Catch::Contains("'persistent' is not a boolean"));
}

// The options added for measurement (the tile handoff, exponentials on the FMA pipe, the scale
// folded in three-consumer blocks, two blocks per SM): stored only when on, so that the default
// kernels' sidecars stay what they were, and each one's kernel never serves a request for the
// other.
TEST_CASE("the sm90 measurement options are part of a stored kernel's configuration when on",
          "[jit][sidecar]") {
  codegen::KernelConfig plain = config();
  plain.family = codegen::KernelFamily::sm90;
  for (const char* field : {"tile_handoff", "poly_exp2", "fold_m192", "blocks_per_sm"}) {
    CHECK_FALSE(to_json(plain).contains(field));
  }
  const nlohmann::json stored_plain = {
      {"variant", variant()}, {"config", to_json(plain)}, {"resources", forward_report()}};
  codegen::KernelConfig handoff = plain;
  handoff.tile_handoff = true;
  codegen::KernelConfig poly = plain;
  poly.poly_exp2 = 3;
  codegen::KernelConfig folded = plain;
  folded.fold_m192 = true;
  codegen::KernelConfig two_per_sm = plain;
  two_per_sm.blocks_per_sm = 2;
  for (const codegen::KernelConfig& tuned : {handoff, poly, folded, two_per_sm}) {
    const codegen::KernelConfig back = config_from_json(to_json(tuned));
    CHECK(back.tile_handoff == tuned.tile_handoff);
    CHECK(back.poly_exp2 == tuned.poly_exp2);
    CHECK(back.fold_m192 == tuned.fold_m192);
    CHECK(back.blocks_per_sm == tuned.blocks_per_sm);
    const nlohmann::json stored = {
        {"variant", variant()}, {"config", to_json(tuned)}, {"resources", forward_report()}};
    CHECK_THAT(check_kernel_sidecar(stored, variant(), plain, false),
               Catch::Contains("is not the variant's"));
    CHECK_THAT(check_kernel_sidecar(stored_plain, variant(), tuned, false),
               Catch::Contains("is not the variant's"));
  }
  nlohmann::json odd = to_json(poly);
  odd["poly_exp2"] = -2;
  CHECK_THROWS_WITH(config_from_json(odd), Catch::Contains("'poly_exp2' is not an int >= 0"));
}

TEST_CASE("the sm90 mbarrier watchdog is part of a stored kernel's configuration only when on",
          "[jit][sidecar]") {
  codegen::KernelConfig watched = config();
  watched.family = codegen::KernelFamily::sm90;
  watched.watchdog_ms = 5000;
  CHECK(config_from_json(to_json(watched)).watchdog_ms == 5000);
  // A kernel that traps on a long wait never serves a request for the plain one, nor the reverse.
  codegen::KernelConfig plain = watched;
  plain.watchdog_ms = 0;
  const nlohmann::json stored = {
      {"variant", variant()}, {"config", to_json(watched)}, {"resources", forward_report()}};
  CHECK_THAT(check_kernel_sidecar(stored, variant(), plain, false),
             Catch::Contains("is not the variant's"));
  // Off, the sidecar has no such field (the default kernels' sidecars did not change).
  CHECK_FALSE(to_json(plain).contains("watchdog_ms"));
  CHECK(config_from_json(to_json(plain)).watchdog_ms == 0);
  nlohmann::json odd = to_json(watched);
  odd["watchdog_ms"] = -1;
  CHECK_THROWS_WITH(config_from_json(odd), Catch::Contains("'watchdog_ms' is not an int >= 0"));
}

TEST_CASE("the sm90 timeline is part of a stored kernel's configuration only when on",
          "[jit][sidecar]") {
  codegen::KernelConfig stamped = config();
  stamped.family = codegen::KernelFamily::sm90;
  stamped.timeline = true;
  CHECK(config_from_json(to_json(stamped)).timeline);
  // A kernel that stamps its phases never serves a request for the plain one, nor the reverse.
  codegen::KernelConfig plain = stamped;
  plain.timeline = false;
  const nlohmann::json stored = {
      {"variant", variant()}, {"config", to_json(stamped)}, {"resources", forward_report()}};
  CHECK_THAT(check_kernel_sidecar(stored, variant(), plain, false),
             Catch::Contains("is not the variant's"));
  CHECK_FALSE(to_json(plain).contains("timeline"));
  CHECK_FALSE(config_from_json(to_json(plain)).timeline);
}

TEST_CASE("the decoding entry's tiles are part of a stored kernel's configuration",
          "[jit][sidecar]") {
  codegen::KernelConfig with_decode = config();
  with_decode.decode_block_n = 64;
  with_decode.decode_stages = 2;
  with_decode.decode_blocks_per_sm = 3;
  with_decode.decode_smem_bytes = 73856;
  const codegen::KernelConfig back = config_from_json(to_json(with_decode));
  CHECK(back.decode_block_n == 64);
  CHECK(back.decode_stages == 2);
  CHECK(back.decode_blocks_per_sm == 3);
  CHECK(back.decode_smem_bytes == 73856);
  // A module with other decoding tiles (or none) never serves the request.
  codegen::KernelConfig other = with_decode;
  other.decode_block_n = 32;
  const nlohmann::json stored = {
      {"variant", variant()}, {"config", to_json(with_decode)}, {"resources", forward_report()}};
  CHECK_THAT(check_kernel_sidecar(stored, variant(), other, false),
             Catch::Contains("is not the variant's"));
  CHECK_THAT(check_kernel_sidecar(stored, variant(), config(), false),
             Catch::Contains("is not the variant's"));
  // The decoding entry's resources are stored beside the forward entry's, and required of a
  // cubin (PTX has no report).
  CHECK_THAT(check_kernel_sidecar(stored, variant(), with_decode, false),
             Catch::Contains("'resources' lacks 'attnjit_fwd_decode'"));
  CHECK(check_kernel_sidecar(stored, variant(), with_decode, true).empty());
  nlohmann::json complete = stored;
  complete["resources"]["attnjit_fwd_decode"] = to_json(ResourceUsage{});
  CHECK(check_kernel_sidecar(complete, variant(), with_decode, false).empty());
  // Without a decoding entry the sidecar has no such field.
  CHECK_FALSE(to_json(config()).contains("decode"));
  CHECK(config_from_json(to_json(config())).decode_block_n == 0);
}

TEST_CASE("a variant summary is one line for cache list", "[jit][sidecar]") {
  CHECK(variant_summary(variant()) == "causal: mask='q_idx>=kv_idx' score='' bf16 d128");
  nlohmann::json with_params = variant();
  with_params["params"] = {"W:int"};
  with_params["head_dim"] = "big";
  CHECK(variant_summary(with_params) == "causal: mask='q_idx>=kv_idx' score='' params=[W:int] bf16 d0");
  CHECK(variant_summary(nlohmann::json()) == "(no variant description)");
}
