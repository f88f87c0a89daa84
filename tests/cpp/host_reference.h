// Host-side references shared by the C++ kernel tests: exact value type, C-style conversions
// to every storage dtype (integers wrap, bfloat16 rounds to nearest even by an independent
// method from the kernels' bit trick), byte encoding, and the device/stream under test.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/kernels.h"
#include "runtime/allocator.h"
#include "runtime/device.h"
#include "runtime/stream.h"

namespace tvk_test {

using tvk::Device;
using tvk::Runtime;
using tvk::Stream;
using tvk::kernels::DType;
using tvk::kernels::dtype_size;
using V = long double;  // exact for every int64 and double value

inline float bits_to_float(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
inline uint32_t float_to_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

// bfloat16 rounding by comparing the distances to the two neighbours (ties to even): an
// independent method from the kernels' bit trick.
inline uint16_t ref_bf16(float f) {
  if (std::isnan(f)) return 0x7fc0;
  uint32_t lo = float_to_bits(f) & 0xffff0000u, hi = lo + 0x10000u;
  auto value = [](uint32_t b) -> double {
    if ((b & 0x7f800000u) == 0x7f800000u) return std::copysign(std::ldexp(1.0, 128), bits_to_float(b));
    return bits_to_float(b);
  };
  if (std::isinf(f)) return static_cast<uint16_t>(lo >> 16);
  double dlo = std::fabs(double(f) - value(lo)), dhi = std::fabs(value(hi) - double(f));
  if (dlo < dhi || (dlo == dhi && ((lo >> 16) & 1u) == 0)) return static_cast<uint16_t>(lo >> 16);
  return static_cast<uint16_t>(hi >> 16);
}

// C-style conversion of a value (exact in V) to what `t` stores, as a V. `from_float`: the
// value came from floating-point math (truncate toward zero before integer wrapping).
inline V cast_to(DType t, V v) {
  auto wrap = [&](int bits, bool is_signed) -> V {
    int64_t x = static_cast<int64_t>(std::trunc(v));  // callers keep floats within int64 range
    uint64_t m = bits == 64 ? ~0ull : ((1ull << bits) - 1);
    uint64_t u = static_cast<uint64_t>(x) & m;
    if (is_signed && bits < 64 && (u >> (bits - 1))) return static_cast<V>(static_cast<int64_t>(u | ~m));
    return is_signed ? static_cast<V>(static_cast<int64_t>(u)) : static_cast<V>(u);
  };
  switch (t) {
    case DType::Bool: return v != 0 || std::isnan(v) ? 1 : 0;
    case DType::UInt8: return wrap(8, false);
    case DType::Int8: return wrap(8, true);
    case DType::Int16: return wrap(16, true);
    case DType::Int32: return wrap(32, true);
    case DType::Int64: return wrap(64, true);
    case DType::Float16: return static_cast<V>(static_cast<_Float16>(static_cast<float>(v)));
    case DType::BFloat16: return bits_to_float(uint32_t(ref_bf16(static_cast<float>(v))) << 16);
    case DType::Float32: return static_cast<float>(v);
    case DType::Float64: return static_cast<double>(v);
  }
  return 0;
}

// Stores `v` (already representable in `t`) as bytes.
inline void encode(DType t, V v, uint8_t* p) {
  switch (t) {
    case DType::Bool: *p = v != 0; break;
    case DType::UInt8: *p = static_cast<uint8_t>(v); break;
    case DType::Int8: { int8_t x = static_cast<int8_t>(v); std::memcpy(p, &x, 1); break; }
    case DType::Int16: { int16_t x = static_cast<int16_t>(v); std::memcpy(p, &x, 2); break; }
    case DType::Int32: { int32_t x = static_cast<int32_t>(v); std::memcpy(p, &x, 4); break; }
    case DType::Int64: { int64_t x = static_cast<int64_t>(v); std::memcpy(p, &x, 8); break; }
    case DType::Float16: { _Float16 x = static_cast<_Float16>(static_cast<float>(v)); std::memcpy(p, &x, 2); break; }
    case DType::BFloat16: { uint16_t x = ref_bf16(static_cast<float>(v)); std::memcpy(p, &x, 2); break; }
    case DType::Float32: { float x = static_cast<float>(v); std::memcpy(p, &x, 4); break; }
    case DType::Float64: { double x = static_cast<double>(v); std::memcpy(p, &x, 8); break; }
  }
}

inline V decode(DType t, const uint8_t* p) {
  switch (t) {
    case DType::Bool:
    case DType::UInt8: return *p;
    case DType::Int8: { int8_t x; std::memcpy(&x, p, 1); return x; }
    case DType::Int16: { int16_t x; std::memcpy(&x, p, 2); return x; }
    case DType::Int32: { int32_t x; std::memcpy(&x, p, 4); return x; }
    case DType::Int64: { int64_t x; std::memcpy(&x, p, 8); return x; }
    case DType::Float16: { _Float16 x; std::memcpy(&x, p, 2); return static_cast<float>(x); }
    case DType::BFloat16: { uint16_t x; std::memcpy(&x, p, 2); return bits_to_float(uint32_t(x) << 16); }
    case DType::Float32: { float x; std::memcpy(&x, p, 4); return x; }
    case DType::Float64: { double x; std::memcpy(&x, p, 8); return x; }
  }
  return 0;
}

// The device and stream under test.
inline Device& dev() { return Runtime::get().device(0); }
inline Stream& stream() { return dev().stream(0); }

// A device buffer holding `count` elements of `dtype`, filled from / read back as V values.
struct Buffer {
  DType dtype;
  size_t count;
  uint64_t address = 0;
  Buffer(DType t, size_t n) : dtype(t), count(n) {
    address = dev().allocator().allocate(std::max<uint64_t>(8, n * dtype_size(t)));
  }
  Buffer(DType t, const std::vector<V>& values) : Buffer(t, values.size()) { upload(values); }
  ~Buffer() {
    stream().synchronize();  // kernels may still use it
    dev().allocator().free(address);
  }
  Buffer(const Buffer&) = delete;
  void upload(const std::vector<V>& values) {
    std::vector<uint8_t> bytes(values.size() * dtype_size(dtype));
    for (size_t i = 0; i < values.size(); ++i) encode(dtype, values[i], &bytes[i * dtype_size(dtype)]);
    if (!bytes.empty()) stream().copy_from_host(bytes.data(), address, bytes.size());
  }
  std::vector<V> download() const {
    std::vector<uint8_t> bytes(count * dtype_size(dtype));
    if (!bytes.empty()) stream().copy_to_host(address, bytes.data(), bytes.size());
    std::vector<V> out(count);
    for (size_t i = 0; i < count; ++i) out[i] = decode(dtype, &bytes[i * dtype_size(dtype)]);
    return out;
  }
  tvk::kernels::Operand at(int64_t element = 0) const { return {address + element * dtype_size(dtype), dtype}; }
};

// Closeness with NaN == NaN and exact infinities; |got - want| <= atol + rtol * |want|.
inline ::testing::AssertionResult close(V got, V want, double rtol, double atol) {
  if (std::isnan(want) || std::isnan(got)) {
    if (std::isnan(want) && std::isnan(got)) return ::testing::AssertionSuccess();
  } else if (std::isinf(want) || std::isinf(got)) {
    if (got == want) return ::testing::AssertionSuccess();
  } else if (std::fabs(got - want) <= atol + rtol * std::fabs(want)) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "got " << double(got) << " want " << double(want);
}

}  // namespace tvk_test
