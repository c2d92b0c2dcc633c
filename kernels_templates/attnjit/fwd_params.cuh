// The forward kernel's single launch argument. Shared by host and device so the layout agrees.
#pragma once

#include "attnjit/variant_args.cuh"

namespace attnjit {

struct FwdParams {
  const void* q;  // bf16 or fp16, element (b, h, row, d) at b*q_stride[0] + h*q_stride[1] + row*q_stride[2] + d
  const void* k;
  const void* v;
  void* o;     // same dtype as q
  float* lse;  // optional, [batch, num_heads_q, q_len] contiguous, natural log
  long long q_stride[3];  // batch, head, row (elements); the head-dim stride is 1
  long long k_stride[3];
  long long v_stride[3];
  long long o_stride[3];
  int batch;
  int num_heads_q;
  int num_heads_kv;  // num_heads_q is a multiple of it (GQA / MQA)
  int q_len;
  int kv_len;
  float scale;  // softmax scale applied to q.k before the score expression
  VariantArgs args;
};

}  // namespace attnjit
