// resident_blocks (src/codegen/residency.cpp): what one SM holds of a kernel, from ptxas's
// register count, its threads and its shared memory, with the limit that binds named.
#include "codegen/residency.hpp"

#include <catch2/catch.hpp>

using attnjit::codegen::resident_blocks;

TEST_CASE("resident blocks: registers per warp in units of 256, shared memory with 1 KB a block",
          "[codegen]") {
  // The sm90 kernel's two 64-row blocks per SM at head dim 128: 128 registers x 256 threads and
  // 83208 bytes each, two of both.
  auto r = resident_blocks(90, 256, 128, 83208);
  CHECK(r.by_registers == 2);
  CHECK(r.by_shared_memory == 2);
  CHECK(r.by_threads == 8);
  CHECK(r.blocks == 2);
  // One register more per thread and the file holds one block: 129 x 32 rounds up to 4352 a warp.
  CHECK(resident_blocks(90, 256, 129, 83208).blocks == 1);
  // The sm80 kernel's 128-row blocks: 214 registers (6912 a warp), 8 warps: one block.
  CHECK(resident_blocks(80, 256, 214, 82944).by_registers == 1);
  // The decoding entry on sm_90: 64 threads of 178 registers, 73856 bytes: three by shared memory.
  r = resident_blocks(90, 64, 178, 73856);
  CHECK(r.by_registers == 5);
  CHECK(r.by_shared_memory == 3);
  CHECK(r.blocks == 3);
  // The same block on an A100 (164 KB an SM) fits two, on an RTX part (100 KB) one.
  CHECK(resident_blocks(80, 64, 178, 73856).blocks == 2);
  CHECK(resident_blocks(86, 64, 178, 73856).blocks == 1);
  // 1536 threads an SM on sm_86 and sm_89, 2048 on sm_80 and sm_90; and the block limit.
  CHECK(resident_blocks(86, 512, 32, 0).by_threads == 3);
  CHECK(resident_blocks(80, 512, 32, 0).by_threads == 4);
  CHECK(resident_blocks(90, 32, 16, 0).blocks == 32);
  CHECK(resident_blocks(86, 32, 16, 0).blocks == 16);
  // More shared memory than a block may have: none.
  CHECK(resident_blocks(90, 128, 32, 228 * 1024).blocks == 0);
}
