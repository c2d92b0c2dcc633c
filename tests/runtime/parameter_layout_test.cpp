// The rule of the kernel parameter check (runtime/parameter_layout.hpp): sizes and distances must
// agree, the first parameter's offset is the driver's.
#include <catch2/catch.hpp>

#include "runtime/parameter_layout.hpp"

using attnjit::ParamSlot;
using attnjit::parameter_layout_mismatch;

TEST_CASE("a parameter layout agrees when sizes and distances do, wherever parameter 0 starts",
          "[runtime]") {
  const ParamSlot forward[] = {{0, 1216}};
  // As driver 580 reports the sm90 kernel's 64-byte-aligned parameter block on an H200.
  const ParamSlot padded[] = {{48, 1216}};
  CHECK_FALSE(parameter_layout_mismatch(forward, forward));
  CHECK_FALSE(parameter_layout_mismatch(forward, padded));
  const ParamSlot summary[] = {{0, 8}, {8, 4}, {12, 4}, {16, 4}, {24, 8}, {32, 8}};
  const ParamSlot summary_shifted[] = {{16, 8}, {24, 4}, {28, 4}, {32, 4}, {40, 8}, {48, 8}};
  CHECK_FALSE(parameter_layout_mismatch(summary, summary_shifted));
}

TEST_CASE("a parameter layout that differs in a size, a distance or a count is refused, named",
          "[runtime]") {
  const ParamSlot forward[] = {{0, 1216}};
  const ParamSlot smaller[] = {{0, 832}};  // the sm80 kernel's FwdParams where sm90's is passed
  const auto size = parameter_layout_mismatch(forward, smaller);
  REQUIRE(size);
  CHECK(*size == "parameter 0 is 832 bytes at offset 0 (relative to parameter 0) but the host "
                 "passes 1216 bytes at offset 0");

  const ParamSlot summary[] = {{0, 8}, {8, 4}, {12, 4}, {16, 4}, {24, 8}, {32, 8}};
  // The fifth pointer without its padding: 4 bytes closer than the host puts it.
  const ParamSlot packed[] = {{0, 8}, {8, 4}, {12, 4}, {16, 4}, {20, 8}, {28, 8}};
  const auto distance = parameter_layout_mismatch(summary, packed);
  REQUIRE(distance);
  CHECK(*distance == "parameter 4 is 8 bytes at offset 20 (relative to parameter 0) but the host "
                     "passes 8 bytes at offset 24");

  const ParamSlot backwards[] = {{16, 8}, {8, 4}, {12, 4}, {16, 4}, {24, 8}, {32, 8}};
  const auto order = parameter_layout_mismatch(summary, backwards);
  REQUIRE(order);
  CHECK(*order == "parameter 1 is at offset 8, before parameter 0 (at 16)");

  const auto count = parameter_layout_mismatch(summary, std::span(summary).first(5));
  REQUIRE(count);
  CHECK(*count == "the kernel reports 5 parameter(s) where the host passes 6");
}
