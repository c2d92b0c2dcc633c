#include "testkit/example_inputs.hpp"

#include <catch2/catch.hpp>
#include <cstring>
#include <string>

#include "attnjit/attnjit.hpp"

using namespace attnjit::testkit;

namespace {

// The standard manifest's variant `name`; the manifest outlives the test.
const attnjit_manifest_variant& standard_variant(const std::string& name) {
  static const attnjit::c::ManifestPtr manifest = [] {
    attnjit_manifest* raw = nullptr;
    attnjit::c::check(attnjit_manifest_load(&raw, nullptr));
    return attnjit::c::ManifestPtr(raw);
  }();
  for (std::size_t i = 0; i < attnjit_manifest_count(manifest.get()); ++i) {
    const attnjit_manifest_variant* variant = attnjit_manifest_variant_at(manifest.get(), i);
    if (variant->name == name) return *variant;
  }
  FAIL("no standard variant " << name);
  throw;
}

}  // namespace

TEST_CASE("example inputs take a parameter's value from the manifest's example") {
  const attnjit_manifest_variant& window = standard_variant("sliding_window");
  const ExampleInputs inputs = example_inputs(window, 256, 2);
  REQUIRE(inputs.params.size() == 1);
  CHECK(std::string(window.example_json).find(std::to_string(inputs.params[0].i)) !=
        std::string::npos);
  CHECK(inputs.tensors.empty());
}

TEST_CASE("a rank-1 example tensor holds sorted ids of equal documents") {
  attnjit_manifest_variant variant{};
  const attnjit_tensor_decl doc{"doc", ATTNJIT_TENSOR_INT32, 1};
  variant.tensors = &doc;
  variant.num_tensors = 1;
  variant.example_json = R"({"tensors": {"doc": {"documents": 3}}})";
  const ExampleInputs inputs = example_inputs(variant, 9, 4);
  REQUIRE(inputs.tensors.size() == 1);
  CHECK(inputs.tensors[0].dims[0] == 9);
  CHECK(inputs.tensors[0].data == inputs.tensor_data[0].data());
  CHECK(inputs.tensor_data[0] == std::vector<std::int32_t>{0, 0, 0, 1, 1, 1, 2, 2, 2});
}

TEST_CASE("a rank-1 example tensor holds lengths filled to the example's fractions") {
  attnjit_manifest_variant variant{};
  const attnjit_tensor_decl len{"len", ATTNJIT_TENSOR_INT32, 1};
  variant.tensors = &len;
  variant.num_tensors = 1;
  variant.example_json = R"({"tensors": {"len": {"fill": [1.0, 0.25, 0, 0.5]}}})";
  const ExampleInputs inputs = example_inputs(variant, 6, 4);
  CHECK(inputs.tensors[0].dims[0] == 6);
  CHECK(inputs.tensor_data[0] == std::vector<std::int32_t>{6, 2, 0, 3, 6, 2});
  for (const char* bad :
       {R"({"tensors": {"len": {"fill": []}}})", R"({"tensors": {"len": {"fill": [0.5, 1.5]}}})",
        R"({"tensors": {"len": {"fill": "half"}}})"}) {
    variant.example_json = bad;
    CHECK_THROWS_WITH(example_inputs(variant, 6, 4),
                      Catch::Contains("example tensor 'len'") && Catch::Contains("[0, 1]"));
  }
}

TEST_CASE("without an example, parameters and tensors get the defaults") {
  attnjit_manifest_variant variant{};
  const attnjit_param_decl params[] = {{"W", ATTNJIT_PARAM_INT}, {"cap", ATTNJIT_PARAM_FLOAT}};
  const attnjit_tensor_decl tensors[] = {{"doc", ATTNJIT_TENSOR_INT32, 1},
                                         {"bias", ATTNJIT_TENSOR_FLOAT32, 2}};
  variant.params = params;
  variant.num_params = 2;
  variant.tensors = tensors;
  variant.num_tensors = 2;
  variant.example_json = "{}";
  const ExampleInputs inputs = example_inputs(variant, 8, 3);
  CHECK(inputs.params[0].i == 1024);
  CHECK(inputs.params[1].f == 30.0f);
  CHECK(inputs.tensor_data[0] == std::vector<std::int32_t>{0, 0, 1, 1, 2, 2, 3, 3});  // 4 docs
  CHECK(inputs.tensors[1].dims[0] == 3);
  CHECK(inputs.tensors[1].dims[1] == 8);
  float bias_at_2 = 0.0f;
  std::memcpy(&bias_at_2, &inputs.tensor_data[1][2], sizeof bias_at_2);
  CHECK(bias_at_2 == 0.2f);
}
