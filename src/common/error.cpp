#include "common/error.hpp"

namespace attnjit {

const char* status_name(Status status) {
  switch (status) {
    case Status::ok: return "ok";
    case Status::invalid_argument: return "invalid argument";
    case Status::parse: return "expression error";
    case Status::unsupported: return "unsupported";
    case Status::no_device: return "no device";
    case Status::compile: return "compile error";
    case Status::cache: return "cache error";
    case Status::cuda: return "CUDA error";
    case Status::out_of_memory: return "out of memory";
    case Status::io: return "I/O error";
    case Status::internal: return "internal error";
  }
  return "unknown status";
}

}  // namespace attnjit
