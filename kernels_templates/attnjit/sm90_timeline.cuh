// Where a block of the sm90 kernel spends its time (ATTNJIT_TUNE=sm90_timeline=1): the kernel
// stamps the SM's cycle counter at the phases of each block into a record of its own, which the
// host copies back after the call and writes to $ATTNJIT_TIMELINE (runtime/sm90_timeline.cpp;
// tools/bench/timeline_report.py reads it). It answers what counters cannot: how long a block
// takes to reach its first tile, how long its epilogue takes, and how long an SM waits between
// one block's end and the next one's start (the short rows' per-block cost, docs/PERFORMANCE.md).
// Plain blocks only (one work item each, so the record index is the block's). Only kernels with
// the feature bit kSm90FeatureTimeline stamp; the default kernels have no stamps.
// Shared by host and device so the layout agrees.
#pragma once

#include "attnjit/hd.cuh"

namespace attnjit {

// The stamps, in the order a block normally reaches them. Producer: its warp's first lane.
// Consumers: the first thread of consumer warpgroup 0, and of the last consumer warpgroup.
enum Sm90TimelineStamp : int {
  kStampBlockStart = 0,    // thread 0 enters the kernel (before the wait for earlier kernels)
  kStampSetupDone,         // thread 0, barriers initialised and the block synchronised
  kStampFirstKIssued,      // producer: the first kept tile found (after Q's load), its K load next
  kStampLastVIssued,       // producer: the last kept tile's V load issued
  kStampQReady,            // consumer 0: Q has landed
  kStampFirstKReady,       // consumer 0: the first kept tile's K has landed (overlap only: in
                           // the other kernels a stamp in the loop made ptxas spill)
  kStampLoopDone,          // consumer 0: its last tile's P V is complete
  kStampOutputDone,        // consumer 0: its rows (and LSE) are stored
  kStampLastConsumerDone,  // the last consumer: its rows are stored
  kSm90TimelineStamps
};

struct Sm90TimelineRecord {
  unsigned long long clock[kSm90TimelineStamps];  // %clock64 of the block's SM; 0: not reached
  unsigned long long start_ns;                    // %globaltimer at kStampBlockStart
  unsigned long long end_ns;                      // %globaltimer at kStampLastConsumerDone
  unsigned smid;
  unsigned tiles;   // kept key tiles the producer loaded
  unsigned q_tile;  // the block's work item: query tile, batch, head
  unsigned batch;
  unsigned head;
  unsigned written;  // 1 once the block started
};

#if ATTNJIT_DEVICE_COMPILE

ATTNJIT_DEVICE unsigned long long timeline_clock() {
  unsigned long long cycles;
  asm volatile("mov.u64 %0, %%clock64;\n" : "=l"(cycles)::"memory");
  return cycles;
}

ATTNJIT_DEVICE unsigned long long timeline_ns() {
  unsigned long long ns;
  asm volatile("mov.u64 %0, %%globaltimer;\n" : "=l"(ns)::"memory");
  return ns;
}

ATTNJIT_DEVICE unsigned timeline_smid() {
  unsigned smid;
  asm volatile("mov.u32 %0, %%smid;\n" : "=r"(smid));
  return smid;
}

#endif  // ATTNJIT_DEVICE_COMPILE (the SIMT emulator defines the same three for host runs)

}  // namespace attnjit
