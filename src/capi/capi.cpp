// The C boundary: converts C structs to the C++ API, and every exception to a status plus a
// per-thread message. Nothing thrown inside may cross it.
#include "attnjit/attnjit.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "capi/boundary.hpp"
#include "common/log.hpp"
#include "common/printable.hpp"

namespace {

using attnjit::capi::enum_value;
using attnjit::capi::guarded;
using attnjit::capi::require;
using attnjit::capi::require_forward_args_version;
using attnjit::capi::require_version;

attnjit::DType to_dtype(int dtype, const char* what) {
  switch (dtype) {
    case ATTNJIT_DTYPE_BF16: return attnjit::DType::bf16;
    case ATTNJIT_DTYPE_FP16: return attnjit::DType::fp16;
    case ATTNJIT_DTYPE_FP32: return attnjit::DType::fp32;
  }
  attnjit::throw_error(attnjit::Status::invalid_argument, "{}: unknown dtype {}", what, dtype);
}

attnjit::Backend to_backend(int backend) {
  switch (backend) {
    case ATTNJIT_BACKEND_AUTO: return attnjit::Backend::auto_select;
    case ATTNJIT_BACKEND_CUDA: return attnjit::Backend::cuda;
    case ATTNJIT_BACKEND_CPU: return attnjit::Backend::cpu;
  }
  attnjit::throw_error(attnjit::Status::invalid_argument, "unknown backend {}", backend);
}

void apply_log_level(int level) {
  switch (level) {
    case ATTNJIT_LOG_DEFAULT: return;
    case ATTNJIT_LOG_TRACE: return attnjit::set_log_level(spdlog::level::trace);
    case ATTNJIT_LOG_DEBUG: return attnjit::set_log_level(spdlog::level::debug);
    case ATTNJIT_LOG_INFO: return attnjit::set_log_level(spdlog::level::info);
    case ATTNJIT_LOG_WARN: return attnjit::set_log_level(spdlog::level::warn);
    case ATTNJIT_LOG_ERROR: return attnjit::set_log_level(spdlog::level::err);
    case ATTNJIT_LOG_OFF: return attnjit::set_log_level(spdlog::level::off);
  }
  attnjit::throw_error(attnjit::Status::invalid_argument, "unknown log level {}", level);
}

std::string name_or_throw(const char* name, const char* what, int index) {
  if (name == nullptr) {
    attnjit::throw_error(attnjit::Status::invalid_argument, "{}[{}].name is NULL", what, index);
  }
  return name;
}

// All three strides zero: the layout's. Otherwise every stride is taken as given, so each must
// be set: a zero batch or head stride is refused unless that dimension has a single index
// (where it is never used), since leaving it zero would make every head (or batch) read the
// first one.
attnjit::Strides strides_or_layout(const char* name, const int64_t (&explicit_strides)[3],
                                   int layout, int batch, int heads, int len, int head_dim) {
  const int64_t batch_stride = explicit_strides[0], head_stride = explicit_strides[1],
                row_stride = explicit_strides[2];
  if (batch_stride != 0 || head_stride != 0 || row_stride != 0) {
    if (row_stride == 0 || (batch_stride == 0 && batch > 1) || (head_stride == 0 && heads > 1)) {
      attnjit::throw_error(attnjit::Status::invalid_argument,
                           "{} = {{{}, {}, {}}} sets only some strides: set the batch, head and "
                           "row strides, or none of them to use the layout (a zero stride is "
                           "only accepted where batch or the head count is 1)",
                           name, batch_stride, head_stride, row_stride);
    }
    return {batch_stride, head_stride, row_stride};
  }
  if (layout != ATTNJIT_LAYOUT_BHLD && layout != ATTNJIT_LAYOUT_BLHD) {
    attnjit::throw_error(attnjit::Status::invalid_argument, "unknown layout {}", layout);
  }
  return attnjit::layout_strides(
      layout == ATTNJIT_LAYOUT_BHLD ? attnjit::Layout::bhld : attnjit::Layout::blhd, heads, len,
      head_dim);
}

}  // namespace

namespace attnjit::capi {

VariantSpec to_spec(const attnjit_variant_desc& desc) {
  attnjit::VariantSpec spec;
  spec.mask = desc.mask != nullptr ? desc.mask : "";
  spec.score = desc.score != nullptr ? desc.score : "";
  spec.dtype = to_dtype(enum_value(desc.dtype), "variant");
  spec.head_dim = desc.head_dim;
  if (desc.num_params < 0 || desc.num_tensors < 0 || (desc.num_params > 0 && !desc.params) ||
      (desc.num_tensors > 0 && !desc.tensors)) {
    attnjit::throw_error(attnjit::Status::invalid_argument,
                         "params/tensors arrays do not match num_params={} num_tensors={}",
                         desc.num_params, desc.num_tensors);
  }
  for (int i = 0; i < desc.num_params; ++i) {
    const auto& p = desc.params[i];
    const int type = enum_value(p.type);
    if (type != ATTNJIT_PARAM_INT && type != ATTNJIT_PARAM_FLOAT) {
      attnjit::throw_error(attnjit::Status::invalid_argument, "params[{}]: unknown type {}", i,
                           type);
    }
    spec.signature.params.push_back(
        {name_or_throw(p.name, "params", i),
         type == ATTNJIT_PARAM_INT ? attnjit::expr::ValueType::integer
                                   : attnjit::expr::ValueType::floating});
  }
  for (int i = 0; i < desc.num_tensors; ++i) {
    const auto& t = desc.tensors[i];
    const int type = enum_value(t.type);
    if (type != ATTNJIT_TENSOR_INT32 && type != ATTNJIT_TENSOR_FLOAT32) {
      attnjit::throw_error(attnjit::Status::invalid_argument, "tensors[{}]: unknown type {}", i,
                           type);
    }
    spec.signature.tensors.push_back(
        {name_or_throw(t.name, "tensors", i),
         type == ATTNJIT_TENSOR_INT32 ? attnjit::expr::TensorElemType::int32
                                      : attnjit::expr::TensorElemType::float32,
         t.rank});
  }
  return spec;
}

// The paged cache's fields of a version-2 struct (a version-1 one has none: dense keys).
attnjit::KvPages kv_pages_of(const attnjit_forward_args& a) {
  if (a.version < 2) return {};
  if (a.kv_page_table == nullptr) {
    if (a.kv_page_size != 0 || a.kv_page_table_width != 0 || a.kv_num_pages != 0) {
      attnjit::throw_error(attnjit::Status::invalid_argument,
                           "kv_page_size, kv_page_table_width or kv_num_pages is set but "
                           "kv_page_table is NULL: pass the page table, or zero them for dense "
                           "keys and values");
    }
    return {};
  }
  return {a.kv_page_table, a.kv_page_table_width, a.kv_page_size, a.kv_num_pages};
}

// The sequence tables of a version-3 struct (older ones have none: uniform sequences).
attnjit::SequenceTables sequences_of(const attnjit_forward_args& a) {
  if (a.version < 3) return {};
  if ((a.q_seq_starts == nullptr && a.q_total != 0) ||
      (a.kv_seq_starts == nullptr && a.kv_total != 0)) {
    attnjit::throw_error(attnjit::Status::invalid_argument,
                         "q_total or kv_total is set but its q_seq_starts or kv_seq_starts is "
                         "NULL: pass the starts, or zero the total for tensors that are not "
                         "packed");
  }
  return {a.q_seq_starts, a.kv_seq_starts, a.kv_seq_lens, a.q_total, a.kv_total};
}

ForwardCall to_call(const attnjit_forward_args& a, int head_dim) {
  attnjit::ForwardCall call;
  call.shape = {a.batch, a.num_heads_q, a.num_heads_kv, a.q_len, a.kv_len, head_dim};
  auto& b = call.buffers;
  b.q = a.q;
  b.k = a.k;
  b.v = a.v;
  b.out = a.out;
  b.lse = a.lse;
  b.q_dtype = to_dtype(enum_value(a.q_dtype), "q");
  b.k_dtype = to_dtype(enum_value(a.k_dtype), "k");
  b.v_dtype = to_dtype(enum_value(a.v_dtype), "v");
  const int layout = enum_value(a.layout);
  // Note: packed sequences' tensors are one batch entry of their total rows.
  b.sequences = sequences_of(a);
  const bool packed_q = attnjit::packs_queries(b);
  const int q_batch = packed_q ? 1 : a.batch;
  const int q_rows = packed_q ? b.sequences.q_total : a.q_len;
  b.q_strides =
      strides_or_layout("q_strides", a.q_strides, layout, q_batch, a.num_heads_q, q_rows, head_dim);
  // Note: a paged call's keys and values are pools: pages in place of the batch, and each page's
  // rows in place of the sequence's.
  b.kv_pages = kv_pages_of(a);
  const bool paged = attnjit::is_paged(b);
  const bool packed_kv = attnjit::packs_keys(b);
  const int kv_batch = paged ? b.kv_pages.num_pages : packed_kv ? 1 : a.batch;
  const int kv_rows = paged       ? std::max(b.kv_pages.page_size, 1)
                      : packed_kv ? b.sequences.kv_total
                                  : a.kv_len;
  b.k_strides = strides_or_layout("k_strides", a.k_strides, layout, kv_batch, a.num_heads_kv,
                                  kv_rows, head_dim);
  b.v_strides = strides_or_layout("v_strides", a.v_strides, layout, kv_batch, a.num_heads_kv,
                                  kv_rows, head_dim);
  b.out_strides = strides_or_layout("out_strides", a.out_strides, layout, q_batch, a.num_heads_q,
                                    q_rows, head_dim);
  b.scale = a.scale;
  if (a.num_params < 0 || a.num_tensors < 0 || (a.num_params > 0 && !a.params) ||
      (a.num_tensors > 0 && !a.tensors)) {
    attnjit::throw_error(attnjit::Status::invalid_argument,
                         "params/tensors arrays do not match num_params={} num_tensors={}",
                         a.num_params, a.num_tensors);
  }
  for (int i = 0; i < a.num_params; ++i) call.scalars.push_back(a.params[i].i);
  for (int i = 0; i < a.num_tensors; ++i) {
    call.tensors.push_back({a.tensors[i].data, {a.tensors[i].dims[0], a.tensors[i].dims[1]}});
  }
  call.stream = a.stream;
  return call;
}

std::string& last_error() {
  thread_local std::string message;
  return message;
}

void require_version(int got, int expected, const char* name) {
  if (got != expected) {
    attnjit::throw_error(attnjit::Status::invalid_argument,
                         "{}.version is {}; this library expects {} (initialise it with {}_init)",
                         name, got, expected, name);
  }
}

attnjit_dtype to_c_dtype(DType dtype) {
  switch (dtype) {
    case DType::bf16: return ATTNJIT_DTYPE_BF16;
    case DType::fp16: return ATTNJIT_DTYPE_FP16;
    case DType::fp32: return ATTNJIT_DTYPE_FP32;
  }
  return ATTNJIT_DTYPE_BF16;
}

attnjit_kernel_origin to_c_origin(KernelOrigin origin) {
  switch (origin) {
    case KernelOrigin::compiled: return ATTNJIT_ORIGIN_COMPILED;
    case KernelOrigin::disk: return ATTNJIT_ORIGIN_DISK;
    case KernelOrigin::memory: return ATTNJIT_ORIGIN_MEMORY;
  }
  return ATTNJIT_ORIGIN_COMPILED;
}

void require_forward_args_version(int got) {
  if (got != 1 && got != 2) {
    require_version(got, ATTNJIT_FORWARD_ARGS_VERSION, "attnjit_forward_args");
  }
}

}  // namespace attnjit::capi

extern "C" {

const char* attnjit_version(void) { return ATTNJIT_VERSION_STRING; }
int attnjit_version_number(void) { return ATTNJIT_VERSION_NUMBER; }

const char* attnjit_status_string(attnjit_status status) {
  const int value = enum_value(status);
  if (value < ATTNJIT_OK || value > ATTNJIT_ERROR_INTERNAL) return "unknown status";
  return attnjit::status_name(static_cast<attnjit::Status>(value));
}

const char* attnjit_last_error(void) { return attnjit::capi::last_error().c_str(); }

attnjit_status attnjit_set_log_level(attnjit_log_level level) {
  return guarded([&] {
    attnjit::log();  // Note: its first use reads ATTNJIT_LOG_LEVEL, which a later level overrides.
    apply_log_level(enum_value(level));
  });
}

size_t attnjit_printable(char* buffer, size_t capacity, const char* text, int keep_line_breaks) {
  const std::string_view raw = text != nullptr ? text : "";
  const std::string safe =
      keep_line_breaks != 0 ? attnjit::printable_lines(raw) : attnjit::printable(raw);
  if (buffer != nullptr && capacity > 0) {
    const std::size_t copied = std::min(safe.size(), capacity - 1);
    std::memcpy(buffer, safe.data(), copied);
    buffer[copied] = '\0';
  }
  return safe.size();
}

void attnjit_runtime_options_init(attnjit_runtime_options* options) {
  if (options == nullptr) return;
  std::memset(options, 0, sizeof(*options));
  options->version = ATTNJIT_RUNTIME_OPTIONS_VERSION;
  options->backend = ATTNJIT_BACKEND_AUTO;
  options->log_level = ATTNJIT_LOG_DEFAULT;
}

attnjit_status attnjit_runtime_create(attnjit_runtime** out, const attnjit_runtime_options* opts) {
  return guarded([&] {
    require(out, "out");
    *out = nullptr;
    attnjit_runtime_options defaults;
    attnjit_runtime_options_init(&defaults);
    const attnjit_runtime_options& o = opts != nullptr ? *opts : defaults;
    require_version(o.version, ATTNJIT_RUNTIME_OPTIONS_VERSION, "attnjit_runtime_options");
    apply_log_level(enum_value(o.log_level));
    attnjit::RuntimeOptions options;
    options.cache_dir = o.cache_dir != nullptr ? o.cache_dir : "";
    options.backend = to_backend(enum_value(o.backend));
    *out = new attnjit_runtime(options);
  });
}

void attnjit_runtime_destroy(attnjit_runtime* runtime) { delete runtime; }

const char* attnjit_runtime_device_arch(const attnjit_runtime* runtime) {
  return runtime != nullptr ? runtime->impl.device_arch().c_str() : "";
}

attnjit_backend attnjit_runtime_backend(const attnjit_runtime* runtime) {
  if (runtime == nullptr) return ATTNJIT_BACKEND_AUTO;
  return runtime->impl.backend() == attnjit::Backend::cuda ? ATTNJIT_BACKEND_CUDA
                                                           : ATTNJIT_BACKEND_CPU;
}

void attnjit_variant_desc_init(attnjit_variant_desc* desc) {
  if (desc == nullptr) return;
  std::memset(desc, 0, sizeof(*desc));
  desc->version = ATTNJIT_VARIANT_DESC_VERSION;
  desc->dtype = ATTNJIT_DTYPE_BF16;
  desc->head_dim = 128;
}

attnjit_status attnjit_variant_create(attnjit_variant** out, attnjit_runtime* runtime,
                                      const attnjit_variant_desc* desc) {
  return guarded([&] {
    require(out, "out");
    *out = nullptr;
    require(runtime, "runtime");
    require(desc, "desc");
    require_version(desc->version, ATTNJIT_VARIANT_DESC_VERSION, "attnjit_variant_desc");
    *out = new attnjit_variant(runtime->impl, attnjit::capi::to_spec(*desc));
  });
}

attnjit_status attnjit_variant_prepare(attnjit_variant* variant) {
  return guarded([&] {
    require(variant, "variant");
    variant->impl.prepare();
  });
}

attnjit_status attnjit_variant_prepare_paged(attnjit_variant* variant) {
  return guarded([&] {
    require(variant, "variant");
    variant->impl.prepare_paged();
  });
}

void attnjit_variant_destroy(attnjit_variant* variant) { delete variant; }

void attnjit_forward_args_init(attnjit_forward_args* args) {
  if (args == nullptr) return;
  std::memset(args, 0, sizeof(*args));
  args->version = ATTNJIT_FORWARD_ARGS_VERSION;
  args->batch = 1;
  args->num_heads_q = 1;
  args->num_heads_kv = 1;
  args->layout = ATTNJIT_LAYOUT_BHLD;
}

attnjit_status attnjit_forward(attnjit_variant* variant, const attnjit_forward_args* args) {
  return guarded([&] {
    require(variant, "variant");
    require(args, "args");
    require_forward_args_version(args->version);
    variant->impl.forward(attnjit::capi::to_call(*args, variant->impl.spec().head_dim));
  });
}

}  // extern "C"
