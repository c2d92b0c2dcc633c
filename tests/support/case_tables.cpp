#include "case_tables.hpp"

#include <algorithm>
#include <limits>
#include <random>
#include <string>

namespace attnjit::kernel_test {

AttentionShape shape(int batch, int hq, int hkv, int lq, int lkv) {
  AttentionShape s;
  s.batch = batch;
  s.num_heads_q = hq;
  s.num_heads_kv = hkv;
  s.q_len = lq;
  s.kv_len = lkv;
  return s;
}

KernelCase with(KernelCase c, DType dtype, Layout layout, int head_dim) {
  c.dtype = dtype;
  c.layout = layout;
  c.head_dim = head_dim;
  return c;
}

// Document ids over `len` positions in `documents` runs, sorted or shuffled.
TensorInput document_ids(int len, int documents, bool sorted, std::uint64_t seed) {
  TensorInput t;
  t.decl = "doc:int32[1]";
  t.dims[0] = len;
  t.ints.resize(len);
  for (int i = 0; i < len; ++i)
    t.ints[i] = static_cast<int>(static_cast<long>(i) * documents / len);
  if (!sorted) {
    std::mt19937_64 rng(seed);
    std::shuffle(t.ints.begin(), t.ints.end(), rng);
  }
  return t;
}

// The standard variants at one shape.
std::vector<KernelCase> mask_families(const AttentionShape& s) {
  std::vector<KernelCase> cases;
  KernelCase base;
  base.shape = s;
  auto add = [&](KernelCase c) { cases.push_back(std::move(c)); };
  add(base);  // no mask
  {
    KernelCase c = base;
    c.mask = "q_idx >= kv_idx";
    add(c);
  }
  {
    KernelCase c = base;
    c.mask = "q_idx >= kv_idx && q_idx - kv_idx < W";
    c.params = {"W:int"};
    c.scalars = {37};
    add(c);
  }
  {
    KernelCase c = base;
    c.mask = "kv_idx < prefix || q_idx >= kv_idx";
    c.params = {"prefix:int"};
    c.scalars = {19};
    add(c);
  }
  {
    const int len = std::max(s.q_len, s.kv_len);
    for (const bool sorted : {true, false}) {
      KernelCase c = base;
      c.mask = "doc[q_idx] == doc[kv_idx]";
      c.tensors = {document_ids(len, 3, sorted, 7)};
      add(c);
    }
  }
  {
    KernelCase c = base;
    c.score = "score + exp2(-8.0 * float(h + 1) / float(num_heads)) * float(kv_idx - q_idx)";
    c.tolerance_factor = 2.0;
    add(c);
  }
  {
    KernelCase c = base;
    c.score = "cap * tanh(score / cap)";
    c.params = {"cap:float"};
    c.scalars = {float_bits(3.0f)};
    add(c);
  }
  {
    // A relative-position bias read from a 2-D tensor [num_heads, 64].
    KernelCase c = base;
    c.score = "score + bias[h, min(abs(q_idx - kv_idx), 63)]";
    TensorInput bias;
    bias.decl = "bias:float32[2]";
    bias.dims[0] = s.num_heads_q;
    bias.dims[1] = 64;
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> uniform(-2.0f, 2.0f);
    bias.floats.resize(static_cast<std::size_t>(bias.dims[0]) * 64);
    for (float& value : bias.floats) value = uniform(rng);
    c.tensors = {bias};
    add(c);
  }
  return cases;
}

KernelCase window_crossing_case() {
  KernelCase c;
  c.mask = "kv_idx < 70 || (kv_idx >= 16380 && kv_idx < 16420) || kv_idx >= 16950";
  c.shape = shape(1, 1, 1, 20, 17000);
  c.split_kv = 1;
  return c;
}

std::vector<KernelCase> empty_stretch_cases() {
  const auto make = [](const char* mask, int kv_len) {
    KernelCase c;
    c.mask = mask;
    c.shape = shape(1, 1, 1, 20, kv_len);
    c.split_kv = 1;
    return c;
  };
  // Document ids read through the tensor summaries: the queries' id (5) at keys 0..19, the next
  // id (6) only at keys 60000..60099 and 69990..69999, 1 elsewhere.
  KernelCase ids = make("doc[q_idx] + 1 == doc[kv_idx]", 70000);
  TensorInput doc;
  doc.decl = "doc:int32[1]";
  doc.dims[0] = 70000;
  doc.ints.assign(70000, 1);
  std::fill(doc.ints.begin(), doc.ints.begin() + 20, 5);
  std::fill(doc.ints.begin() + 60000, doc.ints.begin() + 60100, 6);
  std::fill(doc.ints.begin() + 69990, doc.ints.end(), 6);
  ids.tensors = {doc};
  return {make("kv_idx >= 140000 && kv_idx < 140100", 140200),
          make("kv_idx < 50 || (kv_idx >= 9000 && kv_idx < 9050) || kv_idx >= 70000", 70100),
          make("(kv_idx % 5000) >= 4990 && kv_idx > 40000", 50000),
          make("kv_idx >= q_idx + 59990 && kv_idx < q_idx + 60005", 60100),
          ids};
}

namespace {

// Appends a case of `mask` at `s` and `head_dim`, seeded by its place in `cases`, and returns it
// for further settings (valid until the next append).
KernelCase& add_case(std::vector<KernelCase>& cases, const char* mask, AttentionShape s,
                     int head_dim, std::uint64_t seed_base) {
  KernelCase c;
  c.mask = mask;
  c.shape = s;
  c.head_dim = head_dim;
  c.seed = seed_base + cases.size();
  cases.push_back(c);
  return cases.back();
}

// add_case with its keys and values in a paged cache of `page_size` rows.
KernelCase& add_paged_case(std::vector<KernelCase>& cases, const char* mask, AttentionShape s,
                           int head_dim, int page_size, std::uint64_t seed_base) {
  KernelCase& c = add_case(cases, mask, s, head_dim, seed_base);
  c.page_size = page_size;
  return c;
}

}  // namespace

std::vector<KernelCase> split_kv_cases() {
  std::vector<KernelCase> cases;
  const auto make = [&](const char* mask, AttentionShape s, int head_dim) -> KernelCase& {
    return add_case(cases, mask, s, head_dim, 7000);
  };
  // One query per sequence, 8 query heads over 2 key heads.
  make("true", shape(2, 8, 2, 1, 1000), 128);
  // Causal over a cache: query i is position P + i.
  KernelCase& causal = make("kv_idx <= q_idx + P", shape(1, 4, 4, 3, 700), 64);
  causal.params = {"P:int"};
  causal.scalars = {697};
  // A 50-key window at the end: most slices keep nothing (LSE -inf, weight 0).
  KernelCase& window = make("kv_idx <= q_idx + P && kv_idx + 50 > q_idx + P", shape(1, 2, 1, 4, 1200), 128);
  window.params = {"P:int"};
  window.scalars = {1196};
  // Document ids read through tensor summaries, split.
  KernelCase& doc = make("doc[q_idx] == doc[kv_idx]", shape(1, 2, 2, 5, 900), 64);
  doc.tensors = {document_ids(900, 4, true, 11)};
  // Row 0 is kept by no slice: zeros and -inf after the merge.
  make("q_idx > 0 && kv_idx < 150 * q_idx", shape(1, 1, 1, 6, 1100), 64);
  // A score (soft-capping) and fp16.
  KernelCase& softcap = make("true", shape(1, 3, 1, 2, 800), 64);
  softcap.score = "30.0 * tanh(score / 30.0)";
  softcap.dtype = DType::fp16;
  // NaN in one key: every row keeps it, so every row is NaN (output and LSE) after the merge.
  KernelCase& nan_key = make("true", shape(1, 1, 1, 2, 700), 64);
  nan_key.planted = {{'k', 0, 0, 333, 5, std::numeric_limits<float>::quiet_NaN()}};
  // Forced counts: 3 uneven slices, more slices than tiles (clamped), two query tiles, no LSE.
  KernelCase& uneven = make("true", shape(1, 1, 1, 7, 1000), 256);
  uneven.split_kv = 3;
  KernelCase& many = make("kv_idx % 3 != 0", shape(1, 1, 1, 2, 333), 64);
  many.split_kv = 1000;
  KernelCase& two_tiles = make("kv_idx <= q_idx + P", shape(1, 1, 1, 129, 600), 96);
  two_tiles.params = {"P:int"};
  two_tiles.scalars = {471};
  two_tiles.split_kv = 2;
  two_tiles.with_lse = false;
  two_tiles.layout = Layout::blhd;
  // 40 slices at head dim 256: more than the 32 a merge thread's first batch holds (4 groups of
  // 8), so the merge reads a second batch.
  KernelCase& deep = make("kv_idx % 11 != 4", shape(1, 1, 1, 1, 2560), 256);
  deep.split_kv = 40;
  // Caches of different fill in one batch, padded to the longest, two queries at the end of
  // each: `len[b]` is one element per block, so a sequence's keys past its length classify
  // empty and its slices past them keep nothing; the third cache is empty (zeros and -inf).
  KernelCase& ragged = make("kv_idx <= q_idx + len[b] - 2", shape(3, 4, 2, 2, 1000), 128);
  ragged.tensors = {TensorInput{"len:int32[1]", {1000, 230, 0}, {}, {3, 1}}};
  return cases;
}

std::vector<KernelCase> decode_entry_cases() {
  std::vector<KernelCase> cases;
  const auto make = [&](const char* mask, AttentionShape s, int head_dim) -> KernelCase& {
    return add_case(cases, mask, s, head_dim, 9000);
  };
  // 20 queries of a speculative step over a cache (MHA, not packed): both warps have rows, the
  // second only 4 of its 16.
  KernelCase& speculative = make("kv_idx <= q_idx + P", shape(2, 3, 3, 20, 500), 128);
  speculative.params = {"P:int"};
  speculative.scalars = {480};
  // A group of 32 query heads packed into one full block.
  make("true", shape(1, 32, 1, 1, 300), 64);
  // Exactly 32 rows, a modulo mask (partial tiles everywhere), fp16, head dim 96.
  KernelCase& rows32 = make("kv_idx % 5 != 1", shape(1, 1, 1, 32, 257), 96);
  rows32.dtype = DType::fp16;
  // Head dim 256 with a soft-capping score, 3 rows, blhd layout.
  KernelCase& wide = make("true", shape(1, 2, 1, 3, 400), 256);
  wide.score = "30.0 * tanh(score / 30.0)";
  wide.layout = Layout::blhd;
  // Too few keys to split: one unsplit block per (batch, head), sorted document ids.
  KernelCase& doc = make("doc[q_idx] == doc[kv_idx]", shape(3, 2, 2, 9, 90), 64);
  doc.tensors = {document_ids(90, 3, true, 17)};
  // A fully masked row (row 0) beside kept ones, split in 2.
  KernelCase& masked = make("q_idx > 0 && kv_idx < 40 * q_idx", shape(1, 1, 1, 6, 600), 128);
  masked.split_kv = 2;
  masked.with_lse = true;
  return cases;
}

std::vector<KernelCase> paged_kv_cases() {
  std::vector<KernelCase> cases;
  const auto make = [&](const char* mask, AttentionShape s, int head_dim,
                        int page_size) -> KernelCase& {
    return add_paged_case(cases, mask, s, head_dim, page_size, 8500);
  };
  KernelCase& decode = make("true", shape(2, 8, 2, 1, 300), 128, 16);
  decode.layout = Layout::blhd;  // vLLM's and FlashInfer's NHD pages
  // Rows 896..999 are -1 in the table, past every sequence's length: read as zeros (masked) in
  // pages of 16 (a lookup per row) and of 64 (one per tile).
  KernelCase& ragged = make("kv_idx < len[b]", shape(3, 4, 4, 1, 1000), 64, 16);
  ragged.tensors = {TensorInput{"len:int32[1]", {896, 500, 77}, {}, {3, 1}}};
  ragged.unmapped_tail_pages = 7;
  KernelCase& ragged_tiles = make("kv_idx < len[b]", shape(2, 4, 4, 1, 1000), 64, 64);
  ragged_tiles.tensors = {TensorInput{"len:int32[1]", {890, 130}, {}, {2, 1}}};
  ragged_tiles.unmapped_tail_pages = 2;
  KernelCase& tokens = make("kv_idx <= q_idx + kv_len - q_len", shape(1, 4, 2, 4, 70), 64, 1);
  tokens.layout = Layout::blhd;
  // Pages of any size: of 100 rows (some 64-key tiles cross a page's end: a lookup per row
  // there, one per tile elsewhere), of 24 (smaller than a tile), of 80 (larger; most tiles
  // cross).
  KernelCase& split = make("true", shape(1, 4, 1, 1, 700), 128, 100);
  split.split_kv = 3;
  KernelCase& prefill = make("q_idx >= kv_idx", shape(1, 2, 2, 200, 200), 64, 24);
  prefill.dtype = DType::fp16;
  KernelCase& chunk = make("kv_idx <= q_idx + kv_len - q_len", shape(1, 2, 1, 64, 320), 128, 80);
  chunk.layout = Layout::blhd;
  return cases;
}

std::vector<KernelCase> varlen_cases() {
  std::vector<KernelCase> cases;
  const auto make = [&](const char* mask, AttentionShape s, int head_dim,
                        SequenceOptions sequences) -> KernelCase& {
    KernelCase& c = add_case(cases, mask, s, head_dim, 8900);
    c.sequences = std::move(sequences);
    return c;
  };
  KernelCase& chunks =
      make("kv_idx <= q_idx + kv_len - q_len && kv_idx != skip[b]", shape(4, 4, 2, 130, 300), 64,
           {{130, 1, 0, 65}, {300, 17, 40, 0}, true, true, 5});
  chunks.tensors = {TensorInput{"skip:int32[1]", {5, 3, 0, 1}, {}, {4, 1}}};
  KernelCase& padded =
      make("true", shape(3, 2, 2, 100, 200), 128, {{40, 100, 7}, {200, 64, 129}, true, false, 0});
  padded.dtype = DType::fp16;
  padded.layout = Layout::blhd;
  KernelCase& paged = make("kv_idx <= q_idx + kv_len - q_len", shape(2, 2, 1, 90, 150), 64,
                           {{33, 90}, {150, 91}, true, false, 3});
  paged.page_size = 16;
  KernelCase& decode = make("true", shape(2, 8, 2, 1, 300), 128, {{1, 1}, {300, 45}, false});
  decode.page_size = 16;
  decode.split_kv = 3;
  KernelCase& speculative = make("kv_idx <= q_idx + kv_len - q_len", shape(3, 4, 1, 4, 250), 64,
                                 {{4, 4, 4}, {100, 250, 3}, false, true, 2});
  speculative.layout = Layout::blhd;
  make("q_idx >= kv_idx", shape(2, 2, 2, 70, 70), 32, {{70, 20}, {70, 50}, true, true, 0});
  make("true", shape(2, 1, 1, 50, 130), 256, {{20, 50}, {64, 130}, true, false, 1});
  return cases;
}

std::vector<KernelCase> balanced_split_cases() {
  std::vector<KernelCase> cases;
  const auto make = [&](const char* mask, AttentionShape s, int head_dim, SequenceOptions sequences,
                        int split) -> KernelCase& {
    KernelCase& c = add_case(cases, mask, s, head_dim, 9100);
    c.sequences = std::move(sequences);
    c.split_kv = split;
    return c;
  };
  make("true", shape(6, 8, 2, 1, 1100), 128,
       {{1, 1, 1, 1, 1, 1}, {1100, 0, 70, 900, 13, 640}, false}, 4);
  KernelCase& scored = make("true", shape(4, 4, 4, 1, 700), 64,
                            {{1, 1, 1, 1}, {700, 5, 333, 64}, false, true, 3}, 3);
  scored.score = "score - 0.05 * float(kv_len - 1 - kv_idx)";
  scored.dtype = DType::fp16;
  scored.layout = Layout::blhd;
  KernelCase& draft =
      make("true", shape(3, 8, 2, 3, 500), 64, {{3, 3, 3}, {500, 100, 257}, false}, 2);
  draft.page_size = 16;
  draft.with_lse = false;
  make("true", shape(2, 2, 2, 1, 300), 64, {{1, 1}, {0, 0}, false}, 3);
  make("kv_idx <= q_idx + kv_len - q_len", shape(4, 8, 2, 1, 800), 64,
       {{1, 1, 1, 1}, {800, 300, 0, 555}, false}, 3);
  // 40 sequences: the slot search scans their slice counts in two passes of 32.
  SequenceOptions many;
  for (int b = 0; b < 40; ++b) {
    many.q_lens.push_back(1);
    many.kv_lens.push_back(b % 7 == 3 ? 0 : (b * 37) % 300 + 1);
  }
  many.pack_queries = false;
  make("true", shape(40, 1, 1, 1, 300), 64, many, 2);
  return cases;
}

std::vector<KernelCase> sm90_paged_kv_cases() {
  std::vector<KernelCase> cases;
  const auto make = [&](const char* mask, AttentionShape s, int head_dim,
                        int page_size) -> KernelCase& {
    return add_paged_case(cases, mask, s, head_dim, page_size, 8700);
  };
  make("kv_idx <= q_idx + kv_len - q_len", shape(2, 2, 1, 130, 333), 64, 16);
  KernelCase& large = make("true", shape(1, 2, 2, 100, 300), 128, 256);
  large.layout = Layout::blhd;
  // Pages of 24 rows: boxes of 8 (3 a page); rows 168.. unmapped, past every length.
  KernelCase& ragged = make("kv_idx < len[b]", shape(3, 2, 2, 70, 200), 64, 24);
  ragged.tensors = {TensorInput{"len:int32[1]", {150, 100, 37}, {}, {3, 1}}};
  ragged.unmapped_tail_pages = 2;
  // Pages of 48 rows under 80-key tiles: boxes of 16, a tile's boxes in two or three pages.
  KernelCase& wide = make("true", shape(1, 2, 2, 64, 250), 256, 48);
  wide.dtype = DType::fp16;
  KernelCase& three = make("true", shape(1, 2, 1, 200, 180), 64, 64);  // 192-row blocks
  three.layout = Layout::blhd;
  return cases;
}

std::vector<KernelCase> gqa_decoding_cases() {
  std::vector<KernelCase> cases;
  const auto make = [&](const char* mask, AttentionShape s, int head_dim) -> KernelCase& {
    return add_case(cases, mask, s, head_dim, 8000);
  };
  KernelCase& causal = make("kv_idx <= q_idx + P", shape(2, 8, 2, 1, 900), 128);
  causal.params = {"P:int"};
  causal.scalars = {700};  // keys 701.. are the cache's unused tail
  KernelCase& doc = make("doc[q_idx] == doc[kv_idx]", shape(1, 8, 1, 1, 800), 64);
  doc.tensors = {document_ids(800, 5, false, 13)};
  KernelCase& scored = make("true", shape(1, 4, 2, 1, 650), 64);
  scored.score = "score - 0.01 * float(q_idx + 600 - kv_idx)";
  scored.split_kv = 3;
  scored.with_lse = false;
  scored.layout = Layout::blhd;
  make("kv_idx % 4 != h % 4", shape(1, 4, 1, 1, 700), 64);  // uses h: not packed
  KernelCase& mqa = make("true", shape(1, 16, 1, 1, 600), 64);
  mqa.dtype = DType::fp16;
  make("kv_idx < q_idx", shape(1, 8, 2, 1, 300), 64);  // keeps nothing: zeros, -inf
  // Speculative steps: a few queries, each packed row query r / g of head r % g.
  // 3 draft queries at the end of a 1000-key cache, 4 heads a group, [B, L, H, D] (a query's
  // heads one head stride apart, its next query a row stride on), split in 3.
  KernelCase& draft = make("kv_idx <= q_idx + kv_len - q_len", shape(2, 8, 2, 3, 1000), 128);
  draft.layout = Layout::blhd;
  draft.split_kv = 3;
  // 5 queries with document ids (their summaries over the real queries), fp16, unsplit.
  KernelCase& draft_doc = make("qdoc[q_idx] == kdoc[kv_idx]", shape(1, 4, 1, 5, 300), 64);
  TensorInput kdoc = document_ids(300, 4, true, 19);
  kdoc.decl = "kdoc:int32[1]";
  TensorInput qdoc{"qdoc:int32[1]", {}, {}, {5, 1}};
  for (int i = 0; i < 5; ++i) qdoc.ints.push_back(kdoc.ints[295 + i]);
  draft_doc.tensors = {qdoc, kdoc};
  draft_doc.dtype = DType::fp16;
  draft_doc.split_kv = 1;
  // 4 queries of 8 heads: 32 rows, a full decoding block; a score of the query's distance.
  KernelCase& full = make("true", shape(1, 16, 2, 4, 500), 64);
  full.score = "score - 0.02 * float(q_idx + 496 - kv_idx)";
  full.layout = Layout::blhd;
  // Query 0 keeps nothing (zeros, -inf in each of its heads' rows), query 1 keeps 100 keys.
  make("kv_idx < 100 * q_idx", shape(1, 4, 1, 2, 400), 128);
  // 9 queries of 4 heads: 36 rows, two decoding blocks (the second with 4 rows), split in 2.
  KernelCase& two_blocks = make("kv_idx <= q_idx + 291", shape(1, 4, 1, 9, 300), 64);
  two_blocks.split_kv = 2;
  // 33 queries: more than the decoding entry's 32 rows unpacked, so not packed either.
  make("kv_idx <= q_idx + 267", shape(1, 2, 1, 33, 300), 64);
  return cases;
}

std::vector<KernelCase> non_finite_inputs(int head_dim) {
  constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
  constexpr float kInf = std::numeric_limits<float>::infinity();
  KernelCase base;
  base.mask = "kv_idx <= q_idx";
  base.shape = shape(1, 2, 1, 100, 150);
  base.head_dim = head_dim;
  std::vector<KernelCase> cases;
  const auto add = [&](std::vector<PlantedValue> planted) {
    KernelCase c = base;
    c.planted = std::move(planted);
    cases.push_back(c);
  };
  add({{'q', 0, 1, 10, 5, kNaN}});   // its own row only
  add({{'k', 0, 0, 30, 7, kNaN}});   // every row from 30 on, both query heads (GQA)
  add({{'k', 0, 0, 40, 0, kInf}});   // +inf scores (NaN rows) or -inf (ignored pairs) by q's sign
  add({{'k', 0, 0, 120, 2, kNaN}});  // no row keeps key 120: nothing changes
  std::vector<PlantedValue> whole_row;  // every score of the row NaN: NaN, not masked
  for (int d = 0; d < head_dim; ++d) whole_row.push_back({'q', 0, 0, 3, d, kNaN});
  add(whole_row);
  KernelCase masked = base;  // a NaN in a row that keeps nothing leaves it masked
  masked.mask = "kv_idx <= q_idx && q_idx != 12";
  masked.planted = {{'q', 0, 0, 12, 0, kNaN}};
  cases.push_back(masked);
  KernelCase from_score = base;  // log of a negative number for kv_idx <= 4: every row
  from_score.score = "score + log(float(kv_idx) - 4.5)";
  cases.push_back(from_score);
  return cases;
}

std::vector<KernelCase> negative_scale_cases(const AttentionShape& s) {
  KernelCase noop;
  noop.shape = s;
  noop.scale = -0.3f;
  KernelCase causal = noop;
  causal.mask = "q_idx >= kv_idx";
  return {noop, causal};
}

namespace {

// A float32 tensor of `len` values uniform in [-2, 2].
TensorInput float_vector(const char* name, int len, std::uint64_t seed) {
  TensorInput t;
  t.decl = std::string(name) + ":float32[1]";
  t.dims[0] = len;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> uniform(-2.0f, 2.0f);
  t.floats.resize(static_cast<std::size_t>(len));
  for (float& value : t.floats) value = uniform(rng);
  return t;
}

// ALiBi as the standard manifest writes it: a per-head slope times the key's distance.
constexpr const char* kAlibi =
    "score + exp2(-8.0 * float(h + 1) / float(num_heads)) * float(kv_idx - q_idx)";

}  // namespace

std::vector<KernelCase> row_shift_cases(int head_dim) {
  auto at = [head_dim](const char* mask, const char* score, const AttentionShape& s) {
    KernelCase c;
    c.mask = mask;
    c.score = score;
    c.shape = s;
    c.head_dim = head_dim;
    return c;
  };
  std::vector<KernelCase> cases;
  // Without a mask the bias grows with the key: each row's max is in its last tiles.
  cases.push_back(at("", kAlibi, shape(1, 2, 1, 150, 333)));
  // The distance negated, and rows 0..19 that keep nothing.
  cases.push_back(at("kv_idx + 20 <= q_idx", "score - 0.5 * float(q_idx - kv_idx)",
                     shape(1, 1, 1, 150, 150)));
  // A per-row tensor bias and a multiple of kv_idx alone.
  KernelCase row_bias =
      at("", "score + rb[q_idx] + 0.03125 * float(kv_idx)", shape(1, 1, 1, 150, 200));
  row_bias.tensors = {float_vector("rb", 150, 21)};
  cases.push_back(row_bias);
  // A core that is not qk (its tanh), and the shift over the cap's factor.
  cases.push_back(
      at("", "20.0 * tanh(score / 20.0) + 0.25 * float(kv_idx - q_idx)", shape(1, 1, 1, 130, 200)));
  // Per-block and per-row terms only: no key slope.
  cases.push_back(at("", "score + float(h) * 0.5 - float(q_idx) / 64.0", shape(1, 2, 2, 100, 140)));
  // A per-column tensor term stays in the core next to the shifted distance.
  KernelCase column_bias =
      at("", "score + kb[kv_idx] - 0.125 * float(kv_idx - q_idx)", shape(1, 1, 1, 90, 200));
  column_bias.tensors = {float_vector("kb", 200, 22)};
  cases.push_back(column_bias);
  // A negative scale: the kernels multiply the scores by the factor, and the shift with them.
  KernelCase negative = at("", "score + 0.0625 * float(kv_idx - q_idx)", shape(1, 1, 1, 128, 192));
  negative.scale = -0.3f;
  cases.push_back(negative);
  // A window with ALiBi, fp16 and blhd.
  KernelCase window = at("q_idx - kv_idx < 100 && kv_idx <= q_idx", kAlibi, shape(1, 2, 1, 200, 200));
  window.dtype = DType::fp16;
  window.layout = Layout::blhd;
  cases.push_back(window);
  return cases;
}

KernelCase row_shift_decoding_case() {
  KernelCase step;
  step.score = kAlibi;
  step.shape = shape(1, 4, 2, 3, 900);
  step.split_kv = 3;
  return step;
}

}  // namespace attnjit::kernel_test
