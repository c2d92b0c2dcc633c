// A block's dynamic shared memory with the checks of compute-sanitizer's memcheck and racecheck,
// at 4-byte-word granularity:
//   - bounds and alignment of every access;
//   - reads of words no one wrote (the hardware would hand back garbage);
//   - reads of words a cp.async is still copying into (no cp.async.wait_group before the read);
//   - read-after-write, write-after-read and write-after-write between different threads with
//     neither a __syncthreads nor (within one warp) a __syncwarp in between, nor an mbarrier
//     phase that orders them (the earlier access's thread arrived after it, and the later one's
//     thread waited for that phase: release and acquire).
// cp.async copies land when the issuing thread waits for their group (the latest moment the
// hardware allows), so a missing wait reads stale or uninitialised data.
// Hopper's async proxy (hopper_*.hpp): a TMA load lands at once but its words stay tied to the
// mbarrier phase it completes on, and a reader must have seen that phase complete (the
// mbarrier's acquire); wgmma reads its operands through the async proxy, so words a thread wrote
// with st.shared need that thread's fence.proxy.async (and a barrier) before a wgmma reads them.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "attnjit_simt/scheduler.hpp"

namespace attnjit::simt {

class SharedMemory {
 public:
  // Shared-window address of byte 0: not 0, so mixing up generic pointers and shared addresses
  // shows.
  static constexpr unsigned kWindowBase = 0x400;

  SharedMemory(std::size_t bytes, int num_warps)
      : bytes_(bytes), num_warps_(num_warps), storage_(bytes + 128) {
    // Note: 128-byte aligned, like the kernels' extern __shared__ __align__(128) array.
    const auto address = reinterpret_cast<std::uintptr_t>(storage_.data());
    base_ = storage_.data() + ((128 - address % 128) % 128);
  }

  unsigned char* base() { return base_; }
  std::size_t size() const { return bytes_; }

  void reset() {
    // Note: 0xff bytes read as NaN in bf16, fp16 and fp32.
    std::memset(base_, 0xff, bytes_);
    words_.assign((bytes_ + 3) / 4, Word{});
    reads_.assign(words_.size() * static_cast<std::size_t>(num_warps_), ReadMark{});
  }

  // Offset of a shared-window address or of a pointer into the block's memory; fails when the
  // `size`-byte access at it is out of bounds or misaligned.
  std::size_t offset_of_address(unsigned address, std::size_t size, const char* what) {
    if (address < kWindowBase) fail("%s at shared address 0x%x, below the window", what, address);
    return checked(address - kWindowBase, size, what);
  }
  std::size_t offset_of_pointer(const void* pointer, std::size_t size, const char* what) {
    const auto p = reinterpret_cast<std::uintptr_t>(pointer);
    const auto b = reinterpret_cast<std::uintptr_t>(base_);
    if (p < b) fail("%s at a pointer %zu bytes before shared memory", what, b - p);
    return checked(p - b, size, what);
  }

  // A thread's (tid >= 0) or a whole warp's (tid < 0, for ldmatrix) read.
  void read(std::size_t offset, std::size_t size, int tid, int warp, const char* what) {
    Emulator& e = emulator();
    for (std::size_t w = offset / 4; w < (offset + size) / 4; ++w) {
      const Word& word = words_[w];
      check_landed(word, w, what);
      check_ordered_read(word, w, tid, warp, what);
      ReadMark& mark = reads_[w * num_warps_ + warp];
      const unsigned warp_epoch = e.warps[warp].sync_epoch;
      if (mark.block_epoch == e.block_epoch && mark.warp_epoch == warp_epoch) {
        if (mark.tid != tid) mark.tid = -1;
      } else {
        mark = ReadMark{e.block_epoch, warp_epoch, tid};
      }
      mark.clock = ++e.access_clock;
    }
  }

  // A warp's read through the async proxy (a wgmma operand). Not recorded for write-after-read
  // checks: the wgmma group tracking reports TMA writes into operands still being read.
  void read_async_proxy(std::size_t offset, std::size_t size, int warp, const char* what) {
    const Emulator& e = emulator();
    for (std::size_t w = offset / 4; w < (offset + size) / 4; ++w) {
      const Word& word = words_[w];
      check_landed(word, w, what);
      check_ordered_read(word, w, -1, warp, what);
      if (word.tma_barrier < 0 && word.writer >= 0 &&
          e.threads[word.writer].proxy_fences == word.writer_fences) {
        fail("%s reads shared byte %zu through the async proxy, but thread %d wrote it with "
             "st.shared and has not executed fence.proxy.async since",
             what, w * 4, word.writer);
      }
    }
  }

  // A TMA load's bytes: they complete on the mbarrier at shared offset `barrier` in its phase
  // number `phase`, and only threads that saw that phase complete may read them.
  void land_tma(std::size_t offset, const void* data, std::size_t size, unsigned barrier,
                unsigned phase) {
    for (std::size_t w = offset / 4; w < (offset + size) / 4; ++w) {
      if (words_[w].pending > 0) {
        fail("TMA load: write-after-write race on shared byte %zu with a cp.async in flight",
             w * 4);
      }
    }
    std::memcpy(base_ + offset, data, size);
    for (std::size_t w = offset / 4; w < (offset + size) / 4; ++w) {
      Word& word = words_[w];
      word = Word{};
      word.written = true;
      word.writer = kTmaWriter;
      word.tma_barrier = static_cast<int>(barrier);
      word.tma_phase = phase;
    }
  }

  // A thread's write; `landing` for a cp.async whose group is being waited for.
  void write(std::size_t offset, const void* data, std::size_t size, int tid, int warp,
             const char* what) {
    check_write(offset, size, tid, warp, what);
    std::memcpy(base_ + offset, data, size);
    mark_written(offset, size, tid, warp);
  }

  // cp.async: checked as a write when issued (it may land at once), pending until it lands.
  void issue_async(std::size_t offset, int tid, int warp) {
    check_write(offset, 16, tid, warp, "cp.async");
    for (std::size_t w = offset / 4; w < (offset + 16) / 4; ++w) ++words_[w].pending;
  }
  void land_async(std::size_t offset, const void* data, int tid, int warp) {
    for (std::size_t w = offset / 4; w < (offset + 16) / 4; ++w) --words_[w].pending;
    std::memcpy(base_ + offset, data, 16);
    mark_written(offset, 16, tid, warp);
  }

 private:
  static constexpr int kTmaWriter = -2;
  struct Word {
    bool written = false;
    int pending = 0;  // cp.async copies in flight into this word
    int writer = -1;
    int writer_warp = -1;
    unsigned block_epoch = 0, warp_epoch = 0;
    unsigned writer_fences = 0;  // the writer's fence.proxy.async count at the write
    unsigned writer_writes = 0;  // the writer's st.shared count, this write included
    int tma_barrier = -1;        // written by a TMA load completing on this mbarrier, or -1
    unsigned tma_phase = 0;      // in this phase number of it
  };

  void check_landed(const Word& word, std::size_t w, const char* what) {
    if (word.pending > 0) {
      fail("%s reads shared byte %zu while a cp.async into it is in flight (missing "
           "cp.async.wait_group)",
           what, w * 4);
    }
    if (!word.written) fail("%s reads shared byte %zu, which nothing wrote", what, w * 4);
  }

  // A TMA-written word needs its phase seen by the reader; any other a barrier since the write.
  void check_ordered_read(const Word& word, std::size_t w, int tid, int warp, const char* what) {
    if (word.tma_barrier >= 0) {
      check_tma_observed(word, w, tid, warp, what);
    } else if (!ordered(word.writer, word.writer_warp, word.block_epoch, word.warp_epoch, tid,
                        warp) &&
               !released_to(word, tid, warp)) {
      fail("%s: read-after-write race on shared byte %zu, written by thread %d without a "
           "barrier in between",
           what, w * 4, word.writer);
    }
  }

  // Whether the writer arrived on an mbarrier after the write (release) in a phase that the
  // reader (a thread, or every lane of `warp` when tid < 0) has seen complete (acquire).
  static bool released_to(const Word& word, int tid, int warp) {
    const Emulator& e = emulator();
    if (word.writer < 0) return false;
    const int first = tid >= 0 ? tid : warp * 32;
    const int last = tid >= 0 ? tid : warp * 32 + 31;
    for (const Release& release : e.threads[word.writer].releases) {
      if (release.writes < word.writer_writes) continue;  // arrived before the write
      bool seen = true;
      for (int reader = first; reader <= last && seen; ++reader) {
        seen = saw_phase(e.threads[reader], release.barrier, release.phase);
      }
      if (seen) return true;
    }
    return false;
  }

  static bool saw_phase(const ThreadState& t, unsigned barrier, unsigned phase) {
    for (const ObservedPhases& seen : t.observed_phases) {
      if (seen.barrier == barrier) return seen.phases > phase;
    }
    return false;
  }

  // The reader (a thread, or every lane of `warp` when tid < 0) must have waited for the phase.
  void check_tma_observed(const Word& word, std::size_t w, int tid, int warp, const char* what) {
    const Emulator& e = emulator();
    const auto barrier = static_cast<unsigned>(word.tma_barrier);
    const int first = tid >= 0 ? tid : warp * 32;
    const int last = tid >= 0 ? tid : warp * 32 + 31;
    for (int reader = first; reader <= last; ++reader) {
      if (!saw_phase(e.threads[reader], barrier, word.tma_phase)) {
        fail("%s reads shared byte %zu, written by a TMA load that completes phase %u of the "
             "mbarrier at shared byte %u, before thread %d waited for that phase",
             what, w * 4, word.tma_phase, barrier, reader);
      }
    }
  }
  // The last reads of a word by one warp: epochs, the reading thread (-1: several, or the
  // whole warp), and the access clock at the latest of them.
  struct ReadMark {
    unsigned block_epoch = ~0u;
    unsigned warp_epoch = 0;
    int tid = -2;
    unsigned long long clock = 0;
  };

  // Whether the reads `mark` records (of warp `reader`) are ordered before a write by thread
  // `tid` through an mbarrier: each reading thread (every lane when several read) arrived after
  // the warp's latest read of the word, in a phase the writer has seen complete.
  static bool acquired_after_reads(const ReadMark& mark, int reader, int tid) {
    const Emulator& e = emulator();
    if (tid < 0) return false;
    const int first = mark.tid >= 0 ? mark.tid : reader * 32;
    const int last = mark.tid >= 0 ? mark.tid : reader * 32 + 31;
    for (int t = first; t <= last; ++t) {
      bool released = false;
      for (const Release& release : e.threads[t].releases) {
        if (release.clock > mark.clock &&
            saw_phase(e.threads[tid], release.barrier, release.phase)) {
          released = true;
          break;
        }
      }
      if (!released) return false;
    }
    return true;
  }

  std::size_t checked(std::size_t offset, std::size_t size, const char* what) {
    if (offset + size > bytes_) {
      fail("%s of %zu bytes at shared byte %zu is past the %zu bytes of the block", what, size,
           offset, bytes_);
    }
    if (offset % size != 0) fail("%s of %zu bytes at shared byte %zu is misaligned", what, size,
                                 offset);
    return offset;
  }

  // Whether an access by (tid, warp) now is ordered after an earlier one by (prev_tid, prev_warp)
  // at the given epochs: same thread, a block barrier since, or a __syncwarp of the same warp.
  static bool ordered(int prev_tid, int prev_warp, unsigned prev_block_epoch,
                      unsigned prev_warp_epoch, int tid, int warp) {
    const Emulator& e = emulator();
    if (prev_tid >= 0 && prev_tid == tid) return true;
    if (e.block_epoch != prev_block_epoch) return true;
    return prev_warp == warp && e.warps[warp].sync_epoch != prev_warp_epoch;
  }

  void check_write(std::size_t offset, std::size_t size, int tid, int warp, const char* what) {
    const Emulator& e = emulator();
    for (std::size_t w = offset / 4; w < (offset + size) / 4; ++w) {
      const Word& word = words_[w];
      if (word.pending > 0) {
        fail("%s: write-after-write race on shared byte %zu with a cp.async in flight", what,
             w * 4);
      }
      if (word.written &&
          !ordered(word.writer, word.writer_warp, word.block_epoch, word.warp_epoch, tid, warp)) {
        fail("%s: write-after-write race on shared byte %zu, written by thread %d without a "
             "barrier in between",
             what, w * 4, word.writer);
      }
      for (int reader = 0; reader < num_warps_; ++reader) {
        const ReadMark& mark = reads_[w * num_warps_ + reader];
        if (mark.block_epoch != e.block_epoch) continue;
        if (!ordered(mark.tid, reader, mark.block_epoch, mark.warp_epoch, tid, warp) &&
            !acquired_after_reads(mark, reader, tid)) {
          fail("%s: write-after-read race on shared byte %zu, read by warp %d without a barrier "
               "in between",
               what, w * 4, reader);
        }
      }
    }
  }

  void mark_written(std::size_t offset, std::size_t size, int tid, int warp) {
    Emulator& e = emulator();
    if (tid >= 0) ++e.threads[tid].shared_writes;
    for (std::size_t w = offset / 4; w < (offset + size) / 4; ++w) {
      Word& word = words_[w];
      word.written = true;
      word.writer = tid;
      word.writer_warp = warp;
      word.block_epoch = e.block_epoch;
      word.warp_epoch = e.warps[warp].sync_epoch;
      word.writer_fences = tid >= 0 ? e.threads[tid].proxy_fences : 0;
      word.writer_writes = tid >= 0 ? e.threads[tid].shared_writes : 0;
      word.tma_barrier = -1;
    }
  }

  std::size_t bytes_;
  int num_warps_;
  std::vector<unsigned char> storage_;
  unsigned char* base_ = nullptr;
  std::vector<Word> words_;
  std::vector<ReadMark> reads_;
};

}  // namespace attnjit::simt
