// What ptxas reports for one kernel entry (parsed from the -Xptxas=-v log).
#pragma once

namespace attnjit {

struct ResourceUsage {
  int registers = 0;
  int shared_bytes = 0;  // static shared memory
  int stack_frame_bytes = 0;
  int spill_store_bytes = 0;
  int spill_load_bytes = 0;
};

}  // namespace attnjit
