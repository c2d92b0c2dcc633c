// What every file of the C boundary shares: the handle structs behind the opaque C types, and
// the one place that turns an exception into a status plus the calling thread's message.
#pragma once

#include <cstring>
#include <new>
#include <string>

#include "attnjit/attnjit.h"
#include "common/error.hpp"
#include "runtime/runtime.hpp"
#include "runtime/variant.hpp"

struct attnjit_runtime {
  explicit attnjit_runtime(const attnjit::RuntimeOptions& options) : impl(options) {}
  attnjit::Runtime impl;
};

struct attnjit_variant {
  attnjit_variant(attnjit::Runtime& owner, attnjit::VariantSpec spec)
      : runtime(owner), impl(owner, std::move(spec)) {}
  attnjit::Runtime& runtime;  // outlives the variant (attnjit_variant_create's contract)
  attnjit::Variant impl;
};

namespace attnjit::capi {

// The calling thread's last failure message (attnjit_last_error).
std::string& last_error();

template <typename Fn>
attnjit_status guarded(Fn&& fn) {
  try {
    fn();
    last_error().clear();
    return ATTNJIT_OK;
  } catch (const attnjit::Error& e) {
    last_error() = e.what();
    return static_cast<attnjit_status>(e.status());
  } catch (const std::bad_alloc&) {
    last_error() = "out of host memory";
    return ATTNJIT_ERROR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    last_error() = std::string("internal error: ") + e.what();
    return ATTNJIT_ERROR_INTERNAL;
  } catch (...) {
    last_error() = "internal error: unknown exception";
    return ATTNJIT_ERROR_INTERNAL;
  }
}

// Note: a C caller may store any int in an enum field (C allows it), but in C++ loading a value
// outside an unfixed enum's range is undefined; every enum from the caller is read as its int
// value before it is checked.
template <typename Enum>
int enum_value(const Enum& value) {
  static_assert(sizeof(Enum) == sizeof(int));
  int raw;
  std::memcpy(&raw, &value, sizeof raw);
  return raw;
}

template <typename T>
void require(const T* pointer, const char* name) {
  if (pointer == nullptr) attnjit::throw_error(attnjit::Status::invalid_argument, "{} is NULL", name);
}

void require_version(int got, int expected, const char* name);
// attnjit_forward_args' version: ATTNJIT_FORWARD_ARGS_VERSION, or 1 (read without the paged
// cache's fields, which a version-1 struct does not have).
void require_forward_args_version(int got);

// NULL and "" are the default (empty) directory.
inline std::string optional_text(const char* text) { return text != nullptr ? text : ""; }

// A C variant description as the C++ API takes it; throws Error(invalid_argument) for a bad
// type, count or NULL name (the expressions are parsed later, by the variant).
VariantSpec to_spec(const attnjit_variant_desc& desc);

// A C forward call as the C++ API takes it (strides resolved, arrays checked), for a variant of
// head dimension `head_dim`.
ForwardCall to_call(const attnjit_forward_args& args, int head_dim);

attnjit_dtype to_c_dtype(DType dtype);
attnjit_kernel_origin to_c_origin(KernelOrigin origin);

}  // namespace attnjit::capi
