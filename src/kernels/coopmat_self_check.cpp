// The cooperative-matrix kernels' self-check registry (kernels/coopmat_self_check.h).
#include "kernels/coopmat_self_check.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>

#include "runtime/allocator.h"
#include "runtime/device.h"
#include "runtime/error.h"
#include "runtime/stream.h"

namespace tvk::kernels::detail {

bool CoopmatSelfChecks::passed(Stream& stream, DType dtype,
                               const std::function<bool(std::string*)>& check) {
  const std::pair<const Device*, DType> key{&stream.device(), dtype};
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const State s = states_[key];
    if (s != State::Unchecked) return s == State::Passed;
  }
  if (stream.capturing()) return false;  // the check waits on the host
  std::string why;
  bool ok = false;
  try {
    ok = check(&why);
  } catch (const OutOfMemoryError&) {
    // Not the kernel's fault: undecided, checked again at a later use (the portable kernels
    // run this one).
    return false;
  } catch (const std::exception& e) {
    why = e.what();
    ok = false;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    states_[key] = ok ? State::Passed : State::Failed;
  }
  if (!ok)
    std::fprintf(stderr,
                 "torch-vk: the %s cooperative-matrix %s failed its self-check on %s (%s); %s %s "
                 "uses the portable kernels\n",
                 dtype_name(dtype), family_, stream.device().caps().name.c_str(), why.c_str(),
                 dtype_name(dtype), family_);
  return ok;
}

const char* CoopmatSelfChecks::state(Stream& stream, DType dtype) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = states_.find({&stream.device(), dtype});
  const State s = it == states_.end() ? State::Unchecked : it->second;
  return s == State::Passed ? "passed" : s == State::Failed ? "failed" : "unchecked";
}

void CoopmatSelfChecks::forget(Stream& stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = states_.begin(); it != states_.end();)
    it = it->first.first == &stream.device() ? states_.erase(it) : std::next(it);
}

CheckBuffers::~CheckBuffers() {
  for (uint64_t buffer : buffers_)
    if (buffer != 0) stream_.device().allocator().free(buffer);
}

uint64_t CheckBuffers::allocate(uint64_t bytes) {
  buffers_.push_back(0);  // reserved first: a throwing allocation leaves nothing to free
  buffers_.back() = stream_.device().allocator().allocate(bytes, stream_.id());
  return buffers_.back();
}

Operand CheckBuffers::operand(int64_t elements, DType dtype) {
  return Operand{allocate(static_cast<uint64_t>(elements) * dtype_size(dtype)), dtype};
}

CoopmatSwitch coopmat_switch(const char* variable) {
  const char* v = std::getenv(variable);
  if (!v) return CoopmatSwitch::Unset;
  if (std::strcmp(v, "0") == 0 || std::strcmp(v, "off") == 0) return CoopmatSwitch::Off;
  if (std::strcmp(v, "emulate") == 0) return CoopmatSwitch::Emulate;
  return CoopmatSwitch::Unset;
}

bool self_check_forced_to_fail(const char* variable) {
  const char* v = std::getenv(variable);
  return v && std::strcmp(v, "fail") == 0;
}

bool device_has_16x16x16(const DeviceCapabilities& caps, DType dtype) {
  if (!caps.cooperative_matrix) return false;
  const auto& shapes = dtype == DType::BFloat16 ? caps.coopmat_bf16_shapes : caps.coopmat_f16_shapes;
  for (const auto& s : shapes)
    if (s.m == 16 && s.n == 16 && s.k == 16) return true;
  return false;
}

uint16_t bits_of_64ths(int k, DType dtype) {
  const float f = static_cast<float>(k) / 64.0f;
  uint32_t u = 0;
  std::memcpy(&u, &f, sizeof u);
  if (dtype == DType::BFloat16) return static_cast<uint16_t>(u >> 16);
  if (k == 0) return 0;
  const uint32_t sign = (u >> 16) & 0x8000u;
  const int32_t exponent = static_cast<int32_t>((u >> 23) & 0xff) - 127 + 15;
  return static_cast<uint16_t>(sign | (static_cast<uint32_t>(exponent) << 10) | ((u >> 13) & 0x3ffu));
}

std::vector<uint16_t> values_of_64ths(int64_t elements, uint32_t salt, DType dtype) {
  std::vector<uint16_t> x(elements);
  for (int64_t i = 0; i < elements; ++i) {
    const uint32_t h = (static_cast<uint32_t>(i) + salt) * 2654435761u;
    x[i] = bits_of_64ths(static_cast<int>((h >> 16) % 129) - 64, dtype);
  }
  return x;
}

float float_of_bits(uint16_t h, DType dtype) {
  if (dtype == DType::BFloat16) {
    const uint32_t u = uint32_t{h} << 16;
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
  }
  const uint32_t exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  float v = exponent == 0 ? std::ldexp(static_cast<float>(mantissa), -24)
                          : std::ldexp(1.0f + static_cast<float>(mantissa) / 1024.0f,
                                       static_cast<int>(exponent) - 15);
  if (exponent == 31) v = mantissa ? NAN : INFINITY;
  return (h & 0x8000u) ? -v : v;
}

bool close_16(const std::vector<uint16_t>& x, const std::vector<uint16_t>& y, DType dtype,
              float tolerance) {
  if (x.size() != y.size()) return false;
  for (size_t i = 0; i < x.size(); ++i) {
    const float a = float_of_bits(x[i], dtype), b = float_of_bits(y[i], dtype);
    if (!(std::fabs(a - b) <= tolerance * std::max(1.0f, std::fabs(b)))) return false;
  }
  return true;
}

}  // namespace tvk::kernels::detail
