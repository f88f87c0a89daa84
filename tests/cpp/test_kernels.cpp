// L2 kernel tests (GoogleTest): element-wise ops and reductions on the first Vulkan device,
// compared with host references computed here from <cmath> in (long) double and from the
// IEEE/C conversion rules, never with earlier outputs of the kernels.
//
// Suites: ElementwiseKernel, DTypeKernel, ReduceKernel (run with --gtest_filter='*Kernel*').
// Every test fails when the validation layer (TORCH_VK_VALIDATION=1) reports an error during it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "host_reference.h"
#include "kernels/kernels.h"
#include "kernels/launch.h"
#include "runtime/allocator.h"
#include "runtime/device.h"
#include "runtime/stream.h"

namespace {

using namespace tvk;
using namespace tvk::kernels;
using namespace tvk_test;

constexpr DType kAllDTypes[] = {DType::Bool,    DType::UInt8,    DType::Int8,    DType::Int16,
                                DType::Int32,   DType::Int64,    DType::Float16, DType::BFloat16,
                                DType::Float32, DType::Float64};

bool is_float(DType t) {
  return t == DType::Float16 || t == DType::BFloat16 || t == DType::Float32 || t == DType::Float64;
}
bool is_float_kind(ComputeKind k) { return k == ComputeKind::Float32 || k == ComputeKind::Float64; }


// Base fixture: skips without a device, restores the tuning knobs, and fails a test during
// which the validation layer reported an error.
class KernelFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!Runtime::get().available())
      GTEST_SKIP() << "no Vulkan device: " << Runtime::get().unavailable_reason();
    errors_ = Runtime::get().validation_error_count();
    saved_ = tuning();
  }
  void TearDown() override {
    tuning() = saved_;
    if (!Runtime::get().available()) return;
    stream().synchronize();
    if (Runtime::get().validation_error_count() != errors_)
      for (const auto& m : Runtime::get().validation_messages()) ADD_FAILURE() << m;
  }
  bool has_f64() { return dev().caps().float64; }
  uint64_t errors_ = 0;
  Tuning saved_;
};
class ElementwiseKernel : public KernelFixture {};
class DTypeKernel : public KernelFixture {};
class ReduceKernel : public KernelFixture {};

// ---------------------------------------------------------------- element-wise references

// Reference semantics of every op in shaders/elementwise_ops.toml: `f` for float kinds (math
// in long double on the stored inputs), `i` for integer kinds (two's complement wrap applied by
// the caller). Ops absent from a map have no reference for that family: a test failure.
using FRef = std::function<V(V a, V b, V c, V s0, V s1)>;
using IRef = std::function<int64_t(int64_t a, int64_t b, int64_t c, int64_t s0, int64_t s1, DType dt1)>;

V fmaxnan(V a, V b) { return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b); }
V fminnan(V a, V b) { return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b); }
V truth(V x) { return x != 0 || std::isnan(x); }
uint64_t u(int64_t x) { return static_cast<uint64_t>(x); }
int64_t wrap_mul(int64_t a, int64_t b) { return static_cast<int64_t>(u(a) * u(b)); }
int64_t ipow(int64_t a, int64_t b) {
  if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
  int64_t r = 1;
  for (int64_t k = 0; k < b; ++k) r = wrap_mul(r, a);
  return r;
}

// --- references of the special functions without a <cmath> counterpart (long double) ---
constexpr V kPi = 3.141592653589793238462643383279502884L;
V ref_fmod_rem(V a, V b) {  // torch.remainder
  V m = std::fmod(a, b);
  if (m != 0 && ((b < 0) != (m < 0))) m += b;
  return m;
}
V ref_div_floor(V a, V b) {  // c10::div_floor_floating
  if (b == 0) return a / b;
  V m = std::fmod(a, b);
  V q = (a - m) / b;
  if (m != 0 && ((b < 0) != (m < 0))) q -= 1;
  if (q == 0) return std::copysign(V(0), a / b);
  V f = std::floor(q);
  if (q - f > 0.5L) f += 1;
  return f;
}
// erfinv by Newton's method on erf / erfc (the exact 1 - |y| in the tails).
V ref_erfinv(V y) {
  V ay = std::fabs(y);
  if (std::isnan(y) || ay > 1) return NAN;
  if (ay == 1) return std::copysign(V(INFINITY), y);
  if (ay == 0) return y;
  V x = ay < 0.9L ? std::sqrt(kPi) / 2 * ay : std::sqrt(-std::log((1 - ay) / 2));
  for (int i = 0; i < 60; ++i) {
    V e = ay <= 0.5L ? std::erf(x) - ay : (1 - ay) - std::erfc(x);
    x -= e / (2 / std::sqrt(kPi) * std::exp(-x * x));
  }
  return std::copysign(x, y);
}
// digamma: reflection, recurrence to x >= 20, asymptotic series (torch: +-0 -> -+inf,
// negative integers and -inf -> NaN).
V ref_digamma(V x) {
  if (std::isnan(x)) return x;
  if (x == 0) return std::signbit(x) ? V(INFINITY) : V(-INFINITY);
  if (std::isinf(x)) return x > 0 ? x : V(NAN);
  if (x < 0) {
    if (x == std::floor(x)) return NAN;
    V f = x - std::nearbyint(x);
    return ref_digamma(-x) - 1 / x - kPi / std::tan(kPi * f);
  }
  V acc = 0;
  while (x < 20) acc += 1 / x, x += 1;
  const V b[] = {1.0L / 6, -1.0L / 30, 1.0L / 42, -1.0L / 30, 5.0L / 66, -691.0L / 2730, 7.0L / 6, -3617.0L / 510};
  V z = 1 / (x * x), zk = z, s = 0;
  for (int k = 0; k < 8; ++k) s += b[k] / (2 * (k + 1)) * zk, zk *= z;
  return std::log(x) - 1 / (2 * x) - s - acc;
}
V sig(V x) { return 1 / (1 + std::exp(-x)); }  // sigmoid; 1 - sig(x) = sig(-x)
constexpr V kSqrt2OverPi = 0.797884560802865355879892119868763737L;
V ref_gelu_tanh(V x) { return x * sig(2 * kSqrt2OverPi * (x + 0.044715L * x * x * x)); }
V ref_gelu_tanh_grad(V x) {
  V u2 = 2 * kSqrt2OverPi * (x + 0.044715L * x * x * x);
  return sig(u2) + 2 * kSqrt2OverPi * x * sig(u2) * sig(-u2) * (1 + 3 * 0.044715L * x * x);
}
V ref_gelu_grad(V x) {
  return std::erfc(-x / std::sqrt(V(2))) / 2 + x * std::exp(-x * x / 2) / std::sqrt(2 * kPi);
}
V ref_tanh_softplus(V x) { return std::tanh(std::log1p(std::exp(x))); }

const std::map<std::string, FRef>& float_refs() {
  static const std::map<std::string, FRef> m = {
      {"copy", [](V a, V, V, V, V) { return a; }},
      {"fill", [](V, V, V, V s0, V) { return s0; }},
      {"add", [](V a, V b, V, V s0, V) { return a + s0 * b; }},
      {"sub", [](V a, V b, V, V s0, V) { return a - s0 * b; }},
      {"mul", [](V a, V b, V, V, V) { return a * b; }},
      {"div", [](V a, V b, V, V, V) { return a / b; }},
      {"neg", [](V a, V, V, V, V) { return -a; }},
      {"abs", [](V a, V, V, V, V) { return std::fabs(a); }},
      {"reciprocal", [](V a, V, V, V, V) { return 1 / a; }},
      {"pow", [](V a, V b, V, V, V) { return std::pow(a, b); }},
      {"sign", [](V a, V, V, V, V) { return V(a > 0) - V(a < 0); }},
      {"addcmul", [](V a, V b, V c, V s0, V) { return a + s0 * b * c; }},
      {"addcdiv", [](V a, V b, V c, V s0, V) { return a + s0 * (b / c); }},
      {"floor", [](V a, V, V, V, V) { return std::floor(a); }},
      {"ceil", [](V a, V, V, V, V) { return std::ceil(a); }},
      {"trunc", [](V a, V, V, V, V) { return std::trunc(a); }},
      {"round", [](V a, V, V, V, V) { return std::nearbyint(a); }},
      {"exp", [](V a, V, V, V, V) { return std::exp(a); }},
      {"exp2", [](V a, V, V, V, V) { return std::exp2(a); }},
      {"expm1", [](V a, V, V, V, V) { return std::expm1(a); }},
      {"log", [](V a, V, V, V, V) { return std::log(a); }},
      {"log2", [](V a, V, V, V, V) { return std::log2(a); }},
      {"log10", [](V a, V, V, V, V) { return std::log10(a); }},
      {"log1p", [](V a, V, V, V, V) { return std::log1p(a); }},
      {"sqrt", [](V a, V, V, V, V) { return std::sqrt(a); }},
      {"rsqrt", [](V a, V, V, V, V) { return 1 / std::sqrt(a); }},
      {"sin", [](V a, V, V, V, V) { return std::sin(a); }},
      {"cos", [](V a, V, V, V, V) { return std::cos(a); }},
      {"tanh", [](V a, V, V, V, V) { return std::tanh(a); }},
      {"erf", [](V a, V, V, V, V) { return std::erf(a); }},
      {"erfc", [](V a, V, V, V, V) { return std::erfc(a); }},
      {"relu", [](V a, V, V, V, V) { return a < 0 ? V(0) : a; }},
      {"sigmoid", [](V a, V, V, V, V) { return 1 / (1 + std::exp(-a)); }},
      {"silu", [](V a, V, V, V, V) { return a / (1 + std::exp(-a)); }},
      {"gelu", [](V a, V, V, V, V) { return a / 2 * std::erfc(-a / std::sqrt(V(2))); }},
      {"threshold_backward", [](V a, V b, V, V s0, V) { return b <= s0 ? V(0) : a; }},
      {"sigmoid_backward", [](V a, V b, V, V, V) { return a * b * (1 - b); }},
      {"tanh_backward", [](V a, V b, V, V, V) { return a * (1 - b * b); }},
      {"maximum", [](V a, V b, V, V, V) { return fmaxnan(a, b); }},
      {"minimum", [](V a, V b, V, V, V) { return fminnan(a, b); }},
      {"clamp", [](V a, V, V, V s0, V s1) { return fminnan(fmaxnan(a, s0), s1); }},
      {"clamp_min", [](V a, V, V, V s0, V) { return fmaxnan(a, s0); }},
      {"clamp_max", [](V a, V, V, V s0, V) { return fminnan(a, s0); }},
      {"eq", [](V a, V b, V, V, V) { return V(a == b); }},
      {"ne", [](V a, V b, V, V, V) { return V(a != b); }},
      {"lt", [](V a, V b, V, V, V) { return V(a < b); }},
      {"le", [](V a, V b, V, V, V) { return V(a <= b); }},
      {"gt", [](V a, V b, V, V, V) { return V(a > b); }},
      {"ge", [](V a, V b, V, V, V) { return V(a >= b); }},
      {"where", [](V a, V b, V c, V, V) { return truth(a) ? b : c; }},
      {"logical_not", [](V a, V, V, V, V) { return 1 - truth(a); }},
      {"logical_and", [](V a, V b, V, V, V) { return truth(a) * truth(b); }},
      {"logical_or", [](V a, V b, V, V, V) { return V(truth(a) + truth(b) > 0); }},
      {"logical_xor", [](V a, V b, V, V, V) { return V(truth(a) != truth(b)); }},
      {"isnan", [](V a, V, V, V, V) { return V(std::isnan(a)); }},
      {"isinf", [](V a, V, V, V, V) { return V(std::isinf(a)); }},
      {"isfinite", [](V a, V, V, V, V) { return V(std::isfinite(a)); }},
      {"fmod", [](V a, V b, V, V, V) { return std::fmod(a, b); }},
      {"remainder", [](V a, V b, V, V, V) { return ref_fmod_rem(a, b); }},
      {"div_trunc", [](V a, V b, V, V, V) { return b == 0 ? a / b : std::trunc(a / b); }},
      {"div_floor", [](V a, V b, V, V, V) { return ref_div_floor(a, b); }},
      {"copysign", [](V a, V b, V, V, V) { return std::copysign(a, b); }},
      {"atan2", [](V a, V b, V, V, V) { return std::atan2(a, b); }},
      {"hypot", [](V a, V b, V, V, V) { return std::hypot(a, b); }},
      {"lerp", [](V a, V b, V c, V, V) { return std::fabs(c) < 0.5L ? a + c * (b - a) : b - (b - a) * (1 - c); }},  // torch's formula
      {"frac", [](V a, V, V, V, V) { return a - std::trunc(a); }},
      {"round_decimals", [](V a, V, V, V s0, V s1) {
         return s1 != 0 ? std::nearbyint(a / s0) * s0 : std::nearbyint(a * s0) / s0; }},
      {"erfinv", [](V a, V, V, V, V) { return ref_erfinv(a); }},
      {"tan", [](V a, V, V, V, V) { return std::tan(a); }},
      {"asin", [](V a, V, V, V, V) { return std::asin(a); }},
      {"acos", [](V a, V, V, V, V) { return std::acos(a); }},
      {"atan", [](V a, V, V, V, V) { return std::atan(a); }},
      {"sinh", [](V a, V, V, V, V) { return std::sinh(a); }},
      {"cosh", [](V a, V, V, V, V) { return std::cosh(a); }},
      {"asinh", [](V a, V, V, V, V) { return std::asinh(a); }},
      {"acosh", [](V a, V, V, V, V) { return std::acosh(a); }},
      {"atanh", [](V a, V, V, V, V) { return std::atanh(a); }},
      {"lgamma", [](V a, V, V, V, V) { return std::lgamma(a); }},
      {"digamma", [](V a, V, V, V, V) { return ref_digamma(a); }},
      {"gelu_tanh", [](V a, V, V, V, V) { return ref_gelu_tanh(a); }},
      {"mish", [](V a, V, V, V, V) { return a * ref_tanh_softplus(a); }},
      {"leaky_relu", [](V a, V, V, V s0, V) { return a > 0 ? a : a * s0; }},
      {"elu", [](V a, V b, V, V s0, V s1) { return a < 0 ? std::expm1(a * b) * s0 : a * s1; }},
      {"hardswish", [](V a, V, V, V, V) { return a * std::fmin(std::fmax(a + 3, V(0)), V(6)) / 6; }},
      {"hardsigmoid", [](V a, V, V, V, V) { return fminnan(fmaxnan(a + 3, 0), 6) / 6; }},
      {"softplus", [](V a, V, V, V s0, V s1) { return a * s0 > s1 ? a : std::log1p(std::exp(a * s0)) / s0; }},
      {"softshrink", [](V a, V, V, V s0, V) { return a > s0 ? a - s0 : (a < -s0 ? a + s0 : (std::isnan(a) ? a : V(0))); }},
      {"hardshrink", [](V a, V, V, V s0, V) { return (a >= -s0 && a <= s0) ? V(0) : a; }},
      {"log_sigmoid", [](V a, V, V, V, V) {
         return (a < 0 || std::isnan(a) ? a : V(0)) - std::log1p(std::exp(-std::fabs(a))); }},
      {"threshold", [](V a, V b, V, V s0, V s1) { return a <= s0 ? s1 : b; }},
      {"gelu_backward", [](V a, V b, V, V, V) { return a * ref_gelu_grad(b); }},
      {"gelu_tanh_backward", [](V a, V b, V, V, V) { return a * ref_gelu_tanh_grad(b); }},
      {"silu_backward", [](V a, V b, V, V, V) { return a * sig(b) * (1 + b * sig(-b)); }},
      {"mish_backward", [](V a, V b, V, V, V) {
         V t = ref_tanh_softplus(b);
         return a * (t + b * sig(b) * (1 - t * t)); }},
      {"leaky_relu_backward", [](V a, V b, V, V s0, V) { return a > 0 ? b : b * s0; }},
      {"elu_backward", [](V a, V b, V c, V s0, V s1) { return b <= 0 ? a * s0 * c * std::exp(b * s0) : a * s1; }},
      {"elu_backward_result", [](V a, V b, V c, V s0, V s1) { return b <= 0 ? a * s0 * (b + c) : a * s1; }},
      {"hardswish_backward", [](V a, V b, V, V, V) { return b <= -3 ? V(0) : (b < 3 ? a * (2 * b + 3) / 6 : a); }},
      {"hardsigmoid_backward", [](V a, V b, V, V, V) { return (b > -3 && b < 3) ? a / 6 : V(0); }},
      {"hardtanh_backward", [](V a, V b, V, V s0, V s1) { return (b <= s0 || b >= s1) ? V(0) : a; }},
      {"softplus_backward", [](V a, V b, V, V s0, V s1) {
         V z = std::exp(b * s0);
         return b * s0 > s1 ? a : a * z / (z + 1); }},
      {"shrink_backward", [](V a, V b, V, V s0, V) { return (b >= -s0 && b <= s0) ? V(0) : a; }},
      {"log_sigmoid_backward", [](V a, V b, V, V, V) {
         V z = std::exp(-std::fabs(a));
         return b * (a < 0 ? 1 / (1 + z) : z / (1 + z)); }},
      {"clamp_tensor", [](V a, V b, V c, V, V) { return fminnan(fmaxnan(a, b), c); }},
      {"isposinf", [](V a, V, V, V, V) { return V(std::isinf(a) && a > 0); }},
      {"isneginf", [](V a, V, V, V, V) { return V(std::isinf(a) && a < 0); }},
      {"signbit", [](V a, V, V, V, V) { return V(std::signbit(a)); }},
      {"nan_to_num", [](V a, V b, V, V s0, V s1) { return std::isnan(a) ? s0 : std::isinf(a) ? (a > 0 ? s1 : b) : a; }},
      {"logaddexp", [](V a, V b, V, V, V) {
         if (std::isinf(a) && a == b) return a;
         if (std::isnan(a) || std::isnan(b)) return a + b;
         return std::max(a, b) + std::log1p(std::exp(-std::fabs(a - b))); }},
      {"logaddexp2", [](V a, V b, V, V, V) {
         if (std::isinf(a) && a == b) return a;
         if (std::isnan(a) || std::isnan(b)) return a + b;
         return std::max(a, b) + std::log1p(std::exp2(-std::fabs(a - b))) / std::log(V(2)); }},
      {"xlogy", [](V a, V b, V, V, V) { return std::isnan(b) ? b : (a == 0 ? V(0) : a * std::log(b)); }},
      {"xlog1py", [](V a, V b, V, V, V) { return std::isnan(b) ? b : (a == 0 ? V(0) : a * std::log1p(b)); }},
      {"fmax", [](V a, V b, V, V, V) { return std::fmax(a, b); }},
      {"fmin", [](V a, V b, V, V, V) { return std::fmin(a, b); }},
      {"heaviside", [](V a, V b, V, V, V) { return a == 0 ? b : V(a > 0); }},
      {"entr", [](V a, V, V, V, V) {
         return std::isnan(a) ? a : a > 0 ? -a * std::log(a) : (a == 0 ? V(0) : -V(INFINITY)); }},
      {"logit", [](V a, V, V, V s0, V) {  // s0 = eps >= 0 clamps to [eps, 1 - eps]
         V x = s0 >= 0 ? (a < s0 ? s0 : (a > 1 - s0 ? 1 - s0 : a)) : a;
         return x == 1 ? V(INFINITY) : std::log(x / (1 - x)); }},
      {"logit_backward", [](V a, V b, V, V s0, V) {
         bool outside = s0 < 0 ? (b < 0 || b > 1) : (b < s0 || b > 1 - s0);
         if (outside) return s0 < 0 ? V(NAN) : V(0);
         return (b == 0 || b == 1) ? a * V(INFINITY) : a / (b * (1 - b)); }},
      {"prelu", [](V a, V b, V, V, V) { return a > 0 ? a : b * a; }},
      {"prelu_backward_input", [](V a, V b, V c, V, V) { return b > 0 ? a : c * a; }},
      {"prelu_backward_weight", [](V a, V b, V, V, V) { return b > 0 ? V(0) : b * a; }},
      {"angle", [](V a, V, V, V, V) { return std::isnan(a) ? a : a < 0 ? kPi : V(0); }},
      {"frexp_mantissa", [](V a, V, V, V, V) {
         int e = 0;
         return std::isfinite(a) ? std::frexp(a, &e) : a;
       }},
      {"frexp_exponent", [](V a, V, V, V, V) {
         int e = 0;
         if (std::isfinite(a)) std::frexp(a, &e);
         return V(e);
       }},
  };
  return m;
}

// Ops whose float reference is PyTorch's CPU itself, in tests/python/test_special.py and
// test_special2.py: their results depend on algorithm details a short host formula would not
// reproduce (Hurwitz zeta and polygamma series; sinc rounds pi * x in the compute type before
// the sine; the Cephes-style Bessel, error-function and normal-distribution approximations, the
// polynomial recurrences with torch's rules for negative or non-integer degrees, nextafter's
// step in the storage dtype).
bool tested_against_torch_only(const std::string& op) {
  static const std::set<std::string> ops = {
      "zeta", "polygamma", "sinc", "i0", "i0e", "i1", "i1e", "ndtri", "log_ndtr", "erfcx",
      "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_k0",
      "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
      "spherical_bessel_j0", "airy_ai", "chebyshev_polynomial_t", "chebyshev_polynomial_u",
      "chebyshev_polynomial_v", "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
      "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
      "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
      "laguerre_polynomial_l", "legendre_polynomial_p", "nextafter"};
  return ops.count(op) > 0;
}

const std::map<std::string, IRef>& int_refs() {
  using I = int64_t;
  static const std::map<std::string, IRef> m = {
      {"copy", [](I a, I, I, I, I, DType) { return a; }},
      {"fill", [](I, I, I, I s0, I, DType) { return s0; }},
      {"add", [](I a, I b, I, I s0, I, DType) { return I(u(a) + u(wrap_mul(s0, b))); }},
      {"sub", [](I a, I b, I, I s0, I, DType) { return I(u(a) - u(wrap_mul(s0, b))); }},
      {"mul", [](I a, I b, I, I, I, DType) { return wrap_mul(a, b); }},
      {"neg", [](I a, I, I, I, I, DType) { return I(0 - u(a)); }},
      {"abs", [](I a, I, I, I, I, DType) { return a < 0 ? I(0 - u(a)) : a; }},
      {"pow", [](I a, I b, I, I, I, DType) { return ipow(a, b); }},
      {"sign", [](I a, I, I, I, I, DType) { return I(a > 0) - I(a < 0); }},
      {"addcmul", [](I a, I b, I c, I s0, I, DType) { return I(u(a) + u(wrap_mul(wrap_mul(s0, b), c))); }},
      {"floor", [](I a, I, I, I, I, DType) { return a; }},
      {"ceil", [](I a, I, I, I, I, DType) { return a; }},
      {"trunc", [](I a, I, I, I, I, DType) { return a; }},
      {"round", [](I a, I, I, I, I, DType) { return a; }},
      {"relu", [](I a, I, I, I, I, DType) { return std::max<I>(a, 0); }},
      {"threshold_backward", [](I a, I b, I, I s0, I, DType) { return b <= s0 ? 0 : a; }},
      {"maximum", [](I a, I b, I, I, I, DType) { return std::max(a, b); }},
      {"minimum", [](I a, I b, I, I, I, DType) { return std::min(a, b); }},
      {"clamp", [](I a, I, I, I s0, I s1, DType) { return std::min(std::max(a, s0), s1); }},
      {"clamp_min", [](I a, I, I, I s0, I, DType) { return std::max(a, s0); }},
      {"clamp_max", [](I a, I, I, I s0, I, DType) { return std::min(a, s0); }},
      {"eq", [](I a, I b, I, I, I, DType) { return I(a == b); }},
      {"ne", [](I a, I b, I, I, I, DType) { return I(a != b); }},
      {"lt", [](I a, I b, I, I, I, DType) { return I(a < b); }},
      {"le", [](I a, I b, I, I, I, DType) { return I(a <= b); }},
      {"gt", [](I a, I b, I, I, I, DType) { return I(a > b); }},
      {"ge", [](I a, I b, I, I, I, DType) { return I(a >= b); }},
      {"where", [](I a, I b, I c, I, I, DType) { return a != 0 ? b : c; }},
      {"logical_not", [](I a, I, I, I, I, DType) { return I(a == 0); }},
      {"logical_and", [](I a, I b, I, I, I, DType) { return I(a != 0 && b != 0); }},
      {"logical_or", [](I a, I b, I, I, I, DType) { return I(a != 0 || b != 0); }},
      {"logical_xor", [](I a, I b, I, I, I, DType) { return I((a != 0) != (b != 0)); }},
      {"bitwise_and", [](I a, I b, I, I, I, DType) { return a & b; }},
      {"bitwise_or", [](I a, I b, I, I, I, DType) { return a | b; }},
      {"bitwise_xor", [](I a, I b, I, I, I, DType) { return a ^ b; }},
      {"bitwise_not", [](I a, I, I, I, I, DType t) { return t == DType::Bool ? I(a == 0) : ~a; }},
      {"isnan", [](I, I, I, I, I, DType) { return I(0); }},
      {"isinf", [](I, I, I, I, I, DType) { return I(0); }},
      {"isfinite", [](I, I, I, I, I, DType) { return I(1); }},
      {"fmod", [](I a, I b, I, I, I, DType) { return b == 0 ? a : (b == -1 ? I(0) : a % b); }},
      {"remainder", [](I a, I b, I, I, I, DType) {
         I r = b == 0 ? a : (b == -1 ? I(0) : a % b);
         return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r; }},
      {"div_trunc", [](I a, I b, I, I, I, DType) { return b == 0 ? I(0) : (b == -1 ? I(0 - u(a)) : a / b); }},
      {"div_floor", [](I a, I b, I, I, I, DType) {
         I q = b == 0 ? I(0) : (b == -1 ? I(0 - u(a)) : a / b);
         return (b != 0 && I(u(a) - u(wrap_mul(q, b))) != 0 && ((a < 0) != (b < 0))) ? q - 1 : q; }},
      {"bitwise_left_shift", [](I a, I b, I, I, I, DType t) {
         I w = I(dtype_size(t) * 8);
         return (b < 0 || b >= w) ? I(0) : I(u(a) << b); }},
      {"bitwise_right_shift", [](I a, I b, I, I, I, DType t) {
         I w = I(dtype_size(t) * 8) - (t == DType::UInt8 ? 0 : 1);
         return a >> ((b < 0 || b >= w) ? w : b); }},
      {"threshold", [](I a, I b, I, I s0, I s1, DType) { return a <= s0 ? s1 : b; }},
      {"clamp_tensor", [](I a, I b, I c, I, I, DType) { return std::min(std::max(a, b), c); }},
      {"isposinf", [](I, I, I, I, I, DType) { return I(0); }},
      {"isneginf", [](I, I, I, I, I, DType) { return I(0); }},
      {"signbit", [](I a, I, I, I, I, DType) { return I(a < 0); }},
      {"fmax", [](I a, I b, I, I, I, DType) { return std::max(a, b); }},
      {"fmin", [](I a, I b, I, I, I, DType) { return std::min(a, b); }},
      {"heaviside", [](I a, I b, I, I, I, DType) { return a == 0 ? b : I(a > 0); }},
  };
  return m;
}

DType natural_dtype(ComputeKind k) {
  switch (k) {
    case ComputeKind::Float32: return DType::Float32;
    case ComputeKind::Int32: return DType::Int32;
    case ComputeKind::Int64: return DType::Int64;
    case ComputeKind::Float64: return DType::Float64;
  }
  return DType::Float32;
}

// Scalars per op (exactly representable; s0 = 2 keeps a + s0 * b exact in float32).
Scalars scalars_for(const std::string& op, bool is_float) {
  Scalars s;
  auto set = [&](double f0, double f1, int64_t i0, int64_t i1) {
    s.f[0] = f0, s.f[1] = f1, s.i[0] = i0, s.i[1] = i1;
  };
  set(2.0, -3.0, 3, -2);
  if (op == "clamp") set(-1.5, 2.5, -5, 7);
  if (op == "clamp_min") set(-0.5, 0, -3, 0);
  if (op == "clamp_max") set(0.75, 0, 4, 0);
  if (op == "fill") set(3.25, 0, -7, 0);
  if (op == "threshold_backward") set(0.5, 0, 1, 0);
  if (op == "addcmul" || op == "addcdiv") set(0.5, 0, 3, 0);
  if (op == "logit" || op == "logit_backward") set(0.25, 0, 0, 0);  // eps
  (void)is_float;
  return s;
}

// Tolerances (rtol, atol) of float32 / float64 results. Pure relative except for ops that
// cancel in the compute type (a + b*c, 1 - b*b), and values below the normal range.
std::pair<double, double> tolerance(const std::string& op, ComputeKind kind) {
  bool cancels = op == "addcmul" || op == "addcdiv" || op == "tanh_backward" || op == "sigmoid_backward";
  if (kind == ComputeKind::Float64) return {2e-13, cancels ? 1e-13 : 1e-300};
  // float32 pow is exp2(y * log2|x|): relative error grows like |y| * 1e-7 (~1e-5 near 2^127).
  return {op == "pow" ? 3e-5 : 1e-5, cancels ? 1e-5 : 1.2e-38};
}

// Test inputs for input slot `slot` of `op` in `kind` (n values).
std::vector<V> make_inputs(const std::string& op, ComputeKind kind, int slot, size_t n, std::mt19937& rng) {
  std::vector<V> v(n);
  if (is_float_kind(kind)) {
    const V specials[] = {0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.5, INFINITY, -INFINITY, NAN,
                          1e-3, -1e-6, 3e-8, 20.0, -20.0, 88.0, -90.0, 1e30, 3.14159265358979, 1.0000001};
    std::uniform_real_distribution<double> uni(-4, 4), mag(-8, 8);
    for (size_t i = 0; i < n; ++i) {
      if (i < std::size(specials) && slot == 0) v[i] = specials[i];
      else if (i % 3 == 0) v[i] = std::copysign(std::pow(10.0, mag(rng)), uni(rng));
      else v[i] = uni(rng);
      if (op == "pow" && slot == 1 && i % 2 == 0) v[i] = std::round(uni(rng));  // integer exponents
      if (op == "pow" && slot == 1 && i % 3 == 0) v[i] = uni(rng) * 8;
    }
    for (auto& x : v) x = cast_to(natural_dtype(kind), x);
  } else {
    bool is64 = kind == ComputeKind::Int64;
    const int64_t specials[] = {0, 1, -1, 2, INT32_MAX, INT32_MIN, 1000, -1000};
    const int64_t big[] = {(1ll << 40) + 3, -(1ll << 50) - 7, INT64_MAX, INT64_MIN, (1ll << 32), -(1ll << 32) + 1};
    std::uniform_int_distribution<int64_t> small(-1000, 1000), wide(-(1ll << 45), 1ll << 45);
    for (size_t i = 0; i < n; ++i) {
      int64_t x = small(rng);
      if (i < std::size(specials) && slot == 0) x = specials[i];
      if (is64 && i >= 8 && i < 8 + std::size(big) && slot == 0) x = big[i - 8];
      if (is64 && i % 5 == 4) x = wide(rng);
      if (op == "pow") {  // bases in [-5, 5]; exponents in [0, 11], every 4th in [-4, -1]
        x = slot == 0 ? small(rng) % 6 : std::abs(small(rng)) % 12;
        if (slot == 1 && i % 4 == 0) x = -1 - std::abs(small(rng)) % 4;
      }
      v[i] = static_cast<V>(is64 ? x : static_cast<int32_t>(x));
    }
  }
  return v;
}

// ---------------------------------------------------------------- element-wise tests

TEST_F(ElementwiseKernel, OpTableIsConsistent) {
  const auto& ops = elementwise_ops();
  ASSERT_FALSE(ops.empty());
  for (const auto& op : ops) {
    EXPECT_EQ(find_elementwise_op(op.name), &op) << op.name;
    EXPECT_GE(op.arity, 0);
    EXPECT_LE(op.arity, 3);
    for (int k = 0; k < 4; ++k) {
      bool built = op.compute_kinds & (1u << k);
      EXPECT_EQ(elementwise_expression(op, static_cast<ComputeKind>(k)) != nullptr, built) << op.name;
    }
  }
  EXPECT_EQ(find_elementwise_op("no_such_op"), nullptr);
  for (const char* required : {"copy", "fill", "add", "sub", "mul", "div", "neg", "abs", "exp", "log", "sqrt",
                               "relu", "sigmoid", "tanh", "eq", "ne", "lt", "le", "gt", "ge", "where",
                               "maximum", "minimum", "logical_not", "logical_and", "logical_or",
                               "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
                               "clamp", "pow", "reciprocal", "rsqrt", "sign", "floor", "ceil", "trunc",
                               "round", "sin", "cos", "log2", "log10", "log1p", "expm1", "exp2", "silu",
                               "gelu", "isnan", "isinf", "isfinite"})
    EXPECT_NE(find_elementwise_op(required), nullptr) << required;
  EXPECT_FALSE(shader_source("common.glsl").empty());
  EXPECT_TRUE(shader_source("nope.glsl").empty());
}

// Operand layouts of EveryOpEveryKind over n = 96 stored elements per input.
struct Layout {
  const char* name;
  int ndim;
  int64_t sizes[2];
  int64_t strides[kMaxOperands][2];  // out, a, b, c
  int64_t start[kMaxOperands];       // element offset of index 0
};
const Layout kLayouts[] = {
    {"contiguous", 1, {96, 1}, {{1, 0}, {1, 0}, {1, 0}, {1, 0}}, {0, 0, 0, 0}},
    // 8 x 12 (dim 0 fastest): out contiguous, a transposed, b broadcast along dim 1,
    // c reversed in both dims (negative strides).
    {"strided", 2, {8, 12}, {{1, 8}, {12, 1}, {1, 0}, {-1, -8}}, {0, 0, 0, 95}},
    {"0-dim", 0, {1, 1}, {{0, 0}, {0, 0}, {0, 0}, {0, 0}}, {0, 5, 17, 42}},
    // One dim: the vector path (float32 kind) with a partial last group of four, a
    // broadcast-scalar input, 4-element aligned offsets; misaligned offsets take the element
    // path.
    {"contiguous tail", 1, {93, 1}, {{1, 0}, {1, 0}, {1, 0}, {1, 0}}, {0, 0, 0, 0}},
    {"scalar input", 1, {95, 1}, {{1, 0}, {1, 0}, {0, 0}, {1, 0}}, {0, 0, 7, 0}},
    {"aligned offsets", 1, {88, 1}, {{1, 0}, {1, 0}, {1, 0}, {1, 0}}, {4, 8, 4, 0}},
    {"misaligned", 1, {90, 1}, {{1, 0}, {1, 0}, {1, 0}, {1, 0}}, {1, 2, 3, 1}},
};

// Every op of the table, for every compute kind it is built for, with inputs of the kind's
// natural dtype in contiguous, strided/transposed/broadcast and 0-dim layouts, against the host
// reference.
TEST_F(ElementwiseKernel, EveryOpEveryKind) {
  std::mt19937 rng(1234);
  const size_t n = 96;
  for (const auto& op : elementwise_ops()) {
    for (int k = 0; k < 4; ++k) {
      ComputeKind kind = static_cast<ComputeKind>(k);
      if (!(op.compute_kinds & (1u << k))) continue;
      if (kind == ComputeKind::Float64 && !has_f64()) continue;
      bool fk = is_float_kind(kind);
      if (fk && tested_against_torch_only(op.name)) continue;
      if (fk) ASSERT_TRUE(float_refs().count(op.name)) << "no float reference for " << op.name;
      else ASSERT_TRUE(int_refs().count(op.name)) << "no int reference for " << op.name;

      DType dt = natural_dtype(kind);
      DType out_dt = op.bool_result ? DType::Bool : dt;
      std::vector<std::vector<V>> in;
      for (int s = 0; s < op.arity; ++s) in.push_back(make_inputs(op.name, kind, s, n, rng));
      if (op.arity >= 2)  // equal pairs for comparisons
        for (size_t i = 0; i < n; i += 4) in[1][i] = in[0][i];
      if (std::string(op.name) == "where")
        for (size_t i = 0; i < n; ++i) in[0][i] = i % 3 == 0 ? 0 : in[0][i];
      std::vector<std::unique_ptr<Buffer>> bufs;
      for (auto& v : in) bufs.push_back(std::make_unique<Buffer>(dt, v));
      Scalars sc = scalars_for(op.name, fk);
      auto [rtol, atol] = tolerance(op.name, kind);
      double worst = 0;

      for (const Layout& L : kLayouts) {
        SCOPED_TRACE(std::string(op.name) + "." + compute_kind_name(kind) + " " + L.name);
        Geometry g;
        g.ndim = L.ndim;
        int64_t numel = 1;
        for (int d = 0; d < L.ndim; ++d) {
          g.sizes[d] = L.sizes[d];
          numel *= L.sizes[d];
          for (int s = 0; s <= op.arity; ++s) g.strides[s][d] = L.strides[s][d];
        }
        auto offset = [&](int s, int64_t lin) {
          int64_t off = L.start[s];
          for (int d = 0; d < L.ndim; ++d) off += (lin % L.sizes[d]) * L.strides[s][d], lin /= L.sizes[d];
          return off;
        };
        Buffer out(out_dt, n);
        std::vector<Operand> operands = {out.at(L.start[0])};
        for (int s = 0; s < op.arity; ++s) operands.push_back(bufs[s]->at(L.start[s + 1]));
        elementwise(stream(), op.name, kind, numel, g, operands.data(), int(operands.size()), sc);
        std::vector<V> got = out.download();

        for (int64_t i = 0; i < numel; ++i) {
          V x[3] = {0, 0, 0};
          for (int s = 0; s < op.arity; ++s) x[s] = in[s][offset(s + 1, i)];
          V a = x[0], b = x[1], c = x[2], r = got[offset(0, i)];
          // float64 sin/cos reduce arguments exactly only up to |x| ~ 1.6e6 (Cody-Waite).
          if (kind == ComputeKind::Float64 && (std::string(op.name) == "sin" || std::string(op.name) == "cos") &&
              std::fabs(a) > 1e6)
            continue;
          if (fk) {
            V s0 = kind == ComputeKind::Float32 ? V(float(sc.f[0])) : V(sc.f[0]);
            V s1 = kind == ComputeKind::Float32 ? V(float(sc.f[1])) : V(sc.f[1]);
            V want = cast_to(out_dt, float_refs().at(op.name)(a, b, c, s0, s1));
            if (std::isfinite(want) && std::isfinite(r) && want != 0)
              worst = std::max<double>(worst, std::fabs((r - want) / want));
            EXPECT_TRUE(close(r, want, rtol, atol))
                << "i=" << i << " a=" << double(a) << " b=" << double(b) << " c=" << double(c);
          } else {
            int64_t w = int_refs().at(op.name)(int64_t(a), int64_t(b), int64_t(c), sc.i[0], sc.i[1], dt);
            if (kind == ComputeKind::Int32) w = static_cast<int32_t>(static_cast<uint32_t>(w));
            EXPECT_EQ(r, cast_to(out_dt, V(w)))
                << "i=" << i << " a=" << int64_t(a) << " b=" << int64_t(b) << " c=" << int64_t(c);
          }
        }
      }
      if (fk && std::getenv("TVK_TEST_VERBOSE"))
        std::printf("%-20s %-8s worst rel err %.3g\n", op.name, compute_kind_name(kind), worst);
    }
  }
}

// Dense sweeps of the float32 special functions against <cmath> (relative error bound).
TEST_F(ElementwiseKernel, Float32MathAccuracy) {
  struct Case { const char* op; double lo, hi; double rtol; };
  const Case cases[] = {
      {"exp", -87, 88, 3e-7},     {"exp2", -125, 127, 3e-7},  {"expm1", -20, 20, 3e-7},
      {"log", 1e-30, 1e30, 3e-7}, {"log2", 1e-30, 1e30, 3e-7}, {"log10", 1e-30, 1e30, 3e-7},
      {"log1p", -0.999, 1e6, 3e-7}, {"sin", -100, 100, 3e-7}, {"cos", -100, 100, 3e-7},
      {"tanh", -12, 12, 3e-7},    {"sigmoid", -80, 80, 5e-7}, {"erf", -5, 5, 3e-7},
      {"erfc", -3, 9, 1e-6},      {"gelu", -12, 8, 1e-6},     {"silu", -80, 40, 5e-7},
      {"pow", 0.01, 30, 2e-6},
      {"sin", 8000, 3e38, 3e-7},  {"cos", 8000, 3e38, 3e-7},  // Payne-Hanek reduction
  };
  const size_t n = 20000;
  for (const Case& cs : cases) {
    SCOPED_TRACE(cs.op);
    std::vector<V> a(n), b(n, 2.5);
    bool logspace = cs.lo > 0 && cs.hi / cs.lo > 1e3;
    for (size_t i = 0; i < n; ++i) {
      double t = double(i) / (n - 1);
      double x = logspace ? std::exp(std::log(cs.lo) + t * (std::log(cs.hi) - std::log(cs.lo)))
                          : cs.lo + t * (cs.hi - cs.lo);
      a[i] = float(x);
      b[i] = float(-3.0 + 7.0 * std::fmod(i * 0.618033988749895, 1.0));
    }
    const ElementwiseOpInfo* op = find_elementwise_op(cs.op);
    ASSERT_NE(op, nullptr);
    Buffer x(DType::Float32, a), y(DType::Float32, b), out(DType::Float32, n);
    Operand ops[] = {out.at(), x.at(), y.at()};
    Geometry g;
    g.ndim = 1;
    g.sizes[0] = n;
    g.strides[0][0] = g.strides[1][0] = g.strides[2][0] = 1;
    elementwise(stream(), cs.op, ComputeKind::Float32, n, g, ops, op->arity + 1);
    auto got = out.download();
    double worst = 0;
    for (size_t i = 0; i < n; ++i) {
      V want = float(float_refs().at(cs.op)(a[i], b[i], 0, 0, 0));
      if (std::fabs(want) < FLT_MIN) continue;  // subnormal results may be flushed
      double e = std::fabs(double((got[i] - want) / want));
      worst = std::max(worst, e);
      ASSERT_LE(e, cs.rtol) << "x=" << double(a[i]) << " y=" << double(b[i]) << " got " << double(got[i])
                            << " want " << double(want);
    }
    if (std::getenv("TVK_TEST_VERBOSE")) std::printf("%-8s worst rel err %.3g\n", cs.op, worst);
  }
}

// Strided, transposed, broadcast (stride 0), negative-stride and 0-dim operands, with every
// dtype specialization mode, checked against host index math.
TEST_F(ElementwiseKernel, StridedBroadcastAndZeroDim) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> uni(-10, 10);
  for (bool specialize : {true, false}) {
    tuning().specialize_dtypes = specialize;
    tuning().max_workgroups = specialize ? 65535 : 3;  // also run the grid-stride loop
    struct Shape { int ndim; int64_t sizes[4]; };
    const Shape shapes[] = {{0, {}}, {1, {37}}, {2, {5, 7}}, {3, {4, 3, 6}}, {4, {2, 3, 2, 5}}};
    for (const Shape& sh : shapes) {
      int64_t numel = 1;
      for (int d = 0; d < sh.ndim; ++d) numel *= sh.sizes[d];
      // Operand layouts: 0 out contiguous; 1 transposed (reversed dim order); 2 broadcast along
      // dim 0 and negative stride in the last dim; 3 condition of `where`, broadcast everywhere but the last dim.
      Geometry g;
      g.ndim = sh.ndim;
      int64_t elems[4] = {1, 1, 1, 1}, start[4] = {0, 0, 0, 0};
      for (int d = 0; d < sh.ndim; ++d) g.sizes[d] = sh.sizes[d];
      int64_t st = 1;
      for (int d = 0; d < sh.ndim; ++d) g.strides[0][d] = st, st *= sh.sizes[d];
      elems[0] = st;
      st = 1;
      for (int d = sh.ndim - 1; d >= 0; --d) g.strides[1][d] = st, st *= sh.sizes[d];
      elems[1] = st;
      st = 1;
      for (int d = 0; d < sh.ndim; ++d) {
        if (d == 0) { g.strides[2][d] = 0; continue; }
        g.strides[2][d] = (d == sh.ndim - 1) ? -st : st;
        if (d == sh.ndim - 1) start[2] = st * (sh.sizes[d] - 1);
        st *= sh.sizes[d];
      }
      elems[2] = st;
      st = 1;
      for (int d = 0; d < sh.ndim; ++d) g.strides[3][d] = d == sh.ndim - 1 ? 1 : 0;
      elems[3] = sh.ndim ? sh.sizes[sh.ndim - 1] : 1;
      auto offset = [&](int k, int64_t lin) {
        int64_t off = start[k];
        for (int d = 0; d < sh.ndim; ++d) off += (lin % g.sizes[d]) * g.strides[k][d], lin /= g.sizes[d];
        return off;
      };
      std::vector<V> hb(elems[1]), hc(elems[2]), hcond(elems[3]);
      for (auto& x : hb) x = float(uni(rng));
      for (auto& x : hc) x = float(uni(rng));
      for (size_t i = 0; i < hcond.size(); ++i) hcond[i] = i % 2;
      // Mixed dtypes: out float32, inputs float16 / bfloat16 / bool.
      for (auto& x : hb) x = cast_to(DType::Float16, x);
      for (auto& x : hc) x = cast_to(DType::BFloat16, x);
      Buffer out(DType::Float32, elems[0]), b(DType::Float16, hb), c(DType::BFloat16, hc), cond(DType::Bool, hcond);
      SCOPED_TRACE("ndim=" + std::to_string(sh.ndim) + " specialize=" + std::to_string(specialize));

      Operand add_ops[] = {out.at(), b.at(start[1]), c.at(start[2])};
      Geometry ga = g;  // add: operands out, b (layout 1), c (layout 2)
      Scalars sc;
      sc.f[0] = 0.5;
      elementwise(stream(), "add", ComputeKind::Float32, numel, ga, add_ops, 3, sc);
      auto got = out.download();
      for (int64_t i = 0; i < numel; ++i)
        ASSERT_TRUE(close(got[offset(0, i)], float(hb[offset(1, i)] + 0.5 * hc[offset(2, i)]), 1e-6, 0)) << i;

      Operand where_ops[] = {out.at(), cond.at(), b.at(start[1]), c.at(start[2])};
      Geometry gw = g;
      for (int d = 0; d < kMaxDims; ++d) {
        gw.strides[1][d] = g.strides[3][d];
        gw.strides[2][d] = g.strides[1][d];
        gw.strides[3][d] = g.strides[2][d];
      }
      elementwise(stream(), "where", ComputeKind::Float32, numel, gw, where_ops, 4);
      got = out.download();
      for (int64_t i = 0; i < numel; ++i) {
        V want = hcond[offset(3, i)] != 0 ? hb[offset(1, i)] : hc[offset(2, i)];
        ASSERT_EQ(got[offset(0, i)], want) << i;
      }
    }
  }
}

TEST_F(ElementwiseKernel, EmptyAndInvalidArguments) {
  Buffer x(DType::Float32, 4), y(DType::Float32, 4);
  Operand ops[] = {x.at(), y.at()};
  Geometry g;
  g.ndim = 2;
  g.sizes[0] = 0;
  g.sizes[1] = 5;
  EXPECT_NO_THROW(elementwise(stream(), "copy", ComputeKind::Float32, 0, g, ops, 2));  // records nothing
  g.ndim = 1;
  g.sizes[0] = 4;
  g.strides[0][0] = g.strides[1][0] = 1;
  EXPECT_THROW(elementwise(stream(), "nope", ComputeKind::Float32, 4, g, ops, 2), std::invalid_argument);
  EXPECT_THROW(elementwise(stream(), "div", ComputeKind::Int32, 4, g, ops, 2), std::invalid_argument);
  EXPECT_THROW(elementwise(stream(), "add", ComputeKind::Float32, 4, g, ops, 2), std::invalid_argument);
  EXPECT_THROW(elementwise(stream(), "copy", ComputeKind::Float32, 5, g, ops, 2), std::invalid_argument);
  g.ndim = 9;
  EXPECT_THROW(elementwise(stream(), "copy", ComputeKind::Float32, 4, g, ops, 2), std::invalid_argument);
  g.ndim = 2;
  g.sizes[1] = 1;
  g.strides[1][0] = int64_t(1) << 31;  // offsets beyond int32
  EXPECT_THROW(elementwise(stream(), "copy", ComputeKind::Float32, 4, g, ops, 2), std::invalid_argument);
  g.strides[1][0] = 1;
  Operand f64[] = {x.at(), {y.address, DType::Float64}};
  EXPECT_THROW(elementwise(stream(), "copy", ComputeKind::Float32, 4, g, f64, 2), std::invalid_argument);
  if (!has_f64()) {
    try {
      elementwise(stream(), "copy", ComputeKind::Float64, 4, g, ops, 2);
      ADD_FAILURE() << "expected std::invalid_argument";
    } catch (const std::invalid_argument& e) {
      EXPECT_STREQ(e.what(), "float64 is not supported on this device (no shaderFloat64)");
    }
  }
}

// ---------------------------------------------------------------- dtype conversions

ComputeKind kind_for(DType a, DType b) {
  if (a == DType::Float64 || b == DType::Float64) return ComputeKind::Float64;
  if (is_float(a) || is_float(b)) return ComputeKind::Float32;
  if (a == DType::Int64 || b == DType::Int64) return ComputeKind::Int64;
  return ComputeKind::Int32;
}

// copy between every pair of dtypes with C-style conversion (float -> int truncates, narrow
// ints wrap, -> bool is != 0, float16/bfloat16 round to nearest even).
TEST_F(DTypeKernel, CopyBetweenAllDTypes) {
  const V values[] = {0, 1, -1, 2.5, -2.5, 3.75, -7.25, 100.5, 127, 128, 255, 256, -129, 300.7,
                      -300.2, 1000, 40000.5, -40000, 65504, 70000, 1e9, -2e9};
  for (DType from : kAllDTypes) {
    for (DType to : kAllDTypes) {
      ComputeKind kind = kind_for(from, to);
      if (kind == ComputeKind::Float64 && !has_f64()) continue;
      SCOPED_TRACE(std::string(dtype_name(from)) + " -> " + dtype_name(to));
      std::vector<V> in;
      for (V v : values) in.push_back(cast_to(from, v));
      if (is_float(from) && is_float(to))
        for (V v : {V(NAN), V(INFINITY), V(-INFINITY), V(-0.0)}) in.push_back(cast_to(from, v));
      Buffer src(from, in), dst(to, in.size());
      Operand ops[] = {dst.at(), src.at()};
      Geometry g;
      g.ndim = 1;
      g.sizes[0] = in.size();
      g.strides[0][0] = g.strides[1][0] = 1;
      elementwise(stream(), "copy", kind, in.size(), g, ops, 2);
      auto got = dst.download();
      for (size_t i = 0; i < in.size(); ++i) {
        // Values travel through the compute type: float32 for float16/bfloat16 sources.
        V through = kind == ComputeKind::Float32 ? V(float(in[i])) : in[i];
        if (!is_float(to) && kind == ComputeKind::Float32 && std::fabs(through) >= 2147483648.0L) continue;  // UB
        if (!is_float(to) && is_float(from) && !std::isfinite(through)) continue;
        V want = cast_to(to, through);
        EXPECT_TRUE(close(got[i], want, 0, 0)) << "value " << double(in[i]);
        if (to == DType::Float32 || to == DType::Float64)
          EXPECT_EQ(std::signbit(got[i]), std::signbit(want)) << "value " << double(in[i]);
      }
    }
  }
}

// float16 / bfloat16 stores round to nearest even at halfway points, overflow to inf,
// produce subnormals, and keep NaN.
TEST_F(DTypeKernel, HalfAndBFloat16Rounding) {
  std::vector<V> in;
  auto half_bits = [](uint16_t h) {
    _Float16 x;
    std::memcpy(&x, &h, 2);
    return float(x);
  };
  for (uint16_t h : {0x3c00, 0x3c01, 0x7bfe, 0x0001, 0x03ff, 0x0400, 0x3555}) {
    float a = half_bits(h), b = half_bits(uint16_t(h + 1));
    in.push_back(a);
    in.push_back((double(a) + b) / 2);           // tie
    in.push_back(std::nextafter(float((double(a) + b) / 2), INFINITY));
    in.push_back(-in.back());
  }
  for (uint32_t b : {0x3f80u, 0x3f81u, 0x4049u, 0x0001u, 0x7f7fu, 0xc2f7u}) {  // bfloat16 ties
    in.push_back(bits_to_float((b << 16) | 0x8000u));
    in.push_back(bits_to_float((b << 16) | 0x8001u));
    in.push_back(bits_to_float((b << 16) | 0x7fffu));
  }
  for (V v : {65504.0L, 65519.0L, 65520.0L, 1e6L, 2.9802322e-8L, 2.98023224e-8L * 1.0001L, 1e-10L, 3.0e38L, 3.4e38L})
    in.push_back(float(v)), in.push_back(-float(v));
  std::mt19937 rng(3);
  std::uniform_int_distribution<uint32_t> bits(0, 0xffffffffu);
  for (int i = 0; i < 2000; ++i) {
    float f = bits_to_float(bits(rng));
    if (std::isfinite(f)) in.push_back(f);
  }
  in.push_back(NAN);
  in.push_back(INFINITY);
  for (DType to : {DType::Float16, DType::BFloat16}) {
    SCOPED_TRACE(dtype_name(to));
    Buffer src(DType::Float32, in), dst(to, in.size()), back(DType::Float32, in.size());
    Geometry g;
    g.ndim = 1;
    g.sizes[0] = in.size();
    g.strides[0][0] = g.strides[1][0] = 1;
    Operand ops[] = {dst.at(), src.at()};
    elementwise(stream(), "copy", ComputeKind::Float32, in.size(), g, ops, 2);
    Operand ops2[] = {back.at(), dst.at()};
    elementwise(stream(), "copy", ComputeKind::Float32, in.size(), g, ops2, 2);
    auto got = back.download();
    for (size_t i = 0; i < in.size(); ++i) {
      V want = cast_to(to, in[i]);
      ASSERT_TRUE(close(got[i], want, 0, 0)) << std::hexfloat << double(in[i]);
      ASSERT_EQ(std::signbit(got[i]), std::signbit(want)) << double(in[i]);
    }
  }
}

TEST_F(DTypeKernel, Int64BeyondInt32AndBool) {
  std::vector<V> a = {V(1ll << 40), V(-(1ll << 45) + 12345), V(INT64_MAX), V(INT64_MIN + 1), V(1ll << 32), V(7)};
  std::vector<V> b = {V((1ll << 40) + 1), V(3), V(1), V(-2), V(-(1ll << 32)), V(7)};
  Buffer x(DType::Int64, a), y(DType::Int64, b), out(DType::Int64, a.size()), cmp(DType::Bool, a.size());
  Geometry g;
  g.ndim = 1;
  g.sizes[0] = a.size();
  g.strides[0][0] = g.strides[1][0] = g.strides[2][0] = 1;
  Operand mul_ops[] = {out.at(), x.at(), y.at()};
  elementwise(stream(), "mul", ComputeKind::Int64, a.size(), g, mul_ops, 3);
  auto got = out.download();
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(int64_t(got[i]), wrap_mul(int64_t(a[i]), int64_t(b[i]))) << i;
  Operand lt_ops[] = {cmp.at(), x.at(), y.at()};
  elementwise(stream(), "lt", ComputeKind::Int64, a.size(), g, lt_ops, 3);
  got = cmp.download();
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(got[i], V(a[i] < b[i])) << i;
  // Bool arithmetic in the int32 kind: logical/bitwise ops on 0/1 bytes.
  std::vector<V> p = {0, 1, 0, 1}, q = {0, 0, 1, 1};
  Buffer bp(DType::Bool, p), bq(DType::Bool, q), bo(DType::Bool, 4);
  g.sizes[0] = 4;
  for (const char* op : {"bitwise_and", "bitwise_or", "bitwise_xor", "logical_xor", "bitwise_not"}) {
    const ElementwiseOpInfo* info = find_elementwise_op(op);
    Operand ops[] = {bo.at(), bp.at(), bq.at()};
    elementwise(stream(), op, ComputeKind::Int32, 4, g, ops, info->arity + 1);
    got = bo.download();
    for (int i = 0; i < 4; ++i) {
      int64_t want = int_refs().at(op)(int64_t(p[i]), int64_t(q[i]), 0, 0, 0, DType::Bool);
      EXPECT_EQ(got[i], cast_to(DType::Bool, V(want))) << op << " " << i;
    }
  }
}

// ---------------------------------------------------------------- reductions

// A row-major input of sizes `shape` (outermost first), reduced over `reduced_dims`
// (indices into `shape`); builds the kernel geometry (dim 0 fastest) and the host reference.
struct ReduceCase {
  std::vector<int64_t> shape;
  std::vector<int> reduced_dims;
};

void run_reduce(ReduceOp op, ComputeKind acc, const ReduceCase& rc, DType in_dt, DType out_dt,
                const std::vector<V>& in, double scale, double rtol) {
  int nd = int(rc.shape.size());
  std::vector<int64_t> strides(nd);
  int64_t s = 1;
  for (int d = nd - 1; d >= 0; --d) strides[d] = s, s *= rc.shape[d];
  ReduceGeometry g;
  int64_t out_numel = 1, red_numel = 1;
  std::vector<int> out_dims_list, red_dims_list;  // fastest first
  for (int d = nd - 1; d >= 0; --d) {
    bool r = std::count(rc.reduced_dims.begin(), rc.reduced_dims.end(), d) > 0;
    (r ? red_dims_list : out_dims_list).push_back(d);
  }
  int64_t ostride = 1;
  for (int d : out_dims_list) {
    int i = g.out.ndim++;
    g.out.sizes[i] = rc.shape[d];
    g.out.strides[0][i] = ostride;
    g.out.strides[1][i] = strides[d];
    ostride *= rc.shape[d];
    out_numel *= rc.shape[d];
  }
  for (int d : red_dims_list) {
    int i = g.reduced.ndim++;
    g.reduced.sizes[i] = rc.shape[d];
    g.reduced.strides[1][i] = strides[d];
    red_numel *= rc.shape[d];
  }
  Buffer src(in_dt, in), dst(out_dt, out_numel);
  reduce(stream(), op, acc, out_numel, red_numel, g, dst.at(), src.at(), scale);
  auto got = dst.download();
  for (int64_t o = 0; o < out_numel; ++o) {
    int64_t base = 0, rem = o;
    for (int i = 0; i < g.out.ndim; ++i) base += (rem % g.out.sizes[i]) * g.out.strides[1][i], rem /= g.out.sizes[i];
    V accv = op == ReduceOp::Sum ? 0 : op == ReduceOp::Prod ? 1 : op == ReduceOp::Max ? -INFINITY : INFINITY;
    V abs_sum = 0;  // sums may cancel: their error bound scales with sum |x|
    bool nan = false;
    for (int64_t r = 0; r < red_numel; ++r) {
      int64_t off = base, rr = r;
      for (int i = 0; i < g.reduced.ndim; ++i) off += (rr % g.reduced.sizes[i]) * g.reduced.strides[1][i], rr /= g.reduced.sizes[i];
      V x = in[off];
      nan |= std::isnan(x);
      abs_sum += std::fabs(x);
      if (op == ReduceOp::Sum) accv += x;
      else if (op == ReduceOp::Prod) accv *= x;
      else if (op == ReduceOp::Max) accv = std::max(accv, x);
      else accv = std::min(accv, x);
    }
    if (nan) accv = NAN;
    V want = cast_to(out_dt, accv * scale);
    if (is_float(out_dt))
      ASSERT_TRUE(close(got[o], want, rtol, op == ReduceOp::Sum ? double(0.1 * rtol * abs_sum * scale) : 0))
          << "output " << o;
    else
      ASSERT_EQ(got[o], want) << "output " << o;
  }
}

std::vector<V> random_values(size_t n, DType dt, double lo, double hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> uni(lo, hi);
  std::vector<V> v(n);
  for (auto& x : v) x = cast_to(dt, is_float(dt) ? uni(rng) : std::round(uni(rng)));
  return v;
}

TEST_F(ReduceKernel, AllOpsAllDimsAllStrategies) {
  using S = Tuning::ReduceStrategy;
  const ReduceCase cases[] = {
      {{6, 5, 40}, {2}},    // inner
      {{40, 5, 6}, {0}},    // outer
      {{6, 40, 5}, {1}},    // middle
      {{6, 5, 40}, {0, 1, 2}},  // all
      {{7, 9, 11}, {0, 2}},     // non-adjacent
  };
  auto in = random_values(1200, DType::Float32, 0.5, 1.5, 11);
  for (S strategy : {S::Auto, S::Workgroup, S::Thread, S::Split}) {
    for (bool subgroups : {true, false}) {
      tuning().reduce_strategy = strategy;
      tuning().reduce_subgroups = subgroups;
      tuning().reduce_split_chunk = 16;
      tuning().specialize_dtypes = subgroups;
      tuning().max_workgroups = subgroups ? 65535 : 5;
      for (const auto& rc : cases) {
        for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min}) {
          SCOPED_TRACE("strategy " + std::to_string(int(strategy)) + " subgroups " + std::to_string(subgroups) +
                       " op " + std::to_string(int(op)) + " dims " + std::to_string(rc.reduced_dims.size()));
          std::vector<V> x(in.begin(), in.begin() + rc.shape[0] * rc.shape[1] * rc.shape[2]);
          run_reduce(op, ComputeKind::Float32, rc, DType::Float32, DType::Float32, x, 1.0, 2e-5);
          if (op == ReduceOp::Sum) {  // mean
            int64_t n = 1;
            for (int d : rc.reduced_dims) n *= rc.shape[d];
            run_reduce(op, ComputeKind::Float32, rc, DType::Float32, DType::Float32, x, 1.0 / n, 2e-5);
          }
        }
      }
    }
  }
}

TEST_F(ReduceKernel, LargeReducedSizeAndManyOutputs) {
  // 1e6 elements into one output (split strategy under Auto).
  auto big = random_values(1000000, DType::Float32, -1, 1, 5);
  run_reduce(ReduceOp::Sum, ComputeKind::Float32, {{1000000}, {0}}, DType::Float32, DType::Float32, big, 1.0, 1e-4);
  run_reduce(ReduceOp::Max, ComputeKind::Float32, {{1000000}, {0}}, DType::Float32, DType::Float32, big, 1.0, 0);
  // Many outputs with a small reduced size (thread per output), inner and outer.
  auto many = random_values(70000 * 4, DType::Float32, -1, 1, 6);
  run_reduce(ReduceOp::Sum, ComputeKind::Float32, {{70000, 4}, {1}}, DType::Float32, DType::Float32, many, 1.0, 1e-5);
  run_reduce(ReduceOp::Min, ComputeKind::Float32, {{4, 70000}, {0}}, DType::Float32, DType::Float32, many, 1.0, 0);
  // More outputs than the workgroup limit in workgroup mode.
  tuning().reduce_strategy = Tuning::ReduceStrategy::Workgroup;
  auto wide = random_values(70000 * 3, DType::Float32, -1, 1, 8);
  run_reduce(ReduceOp::Sum, ComputeKind::Float32, {{70000, 3}, {1}}, DType::Float32, DType::Float32, wide, 1.0, 1e-5);
}

TEST_F(ReduceKernel, HalfInputsIntegersFloat64NaNAndEmpty) {
  // float16 / bfloat16 inputs accumulate in fp32 (a float16 accumulator would saturate at 2048
  // for this sum of 4096 ones-ish values).
  auto h = random_values(4096 * 2, DType::Float16, 0.9, 1.1, 9);
  run_reduce(ReduceOp::Sum, ComputeKind::Float32, {{2, 4096}, {1}}, DType::Float16, DType::Float32, h, 1.0, 1e-5);
  run_reduce(ReduceOp::Sum, ComputeKind::Float32, {{2, 4096}, {1}}, DType::Float16, DType::Float16, h, 1.0 / 4096, 1e-3);
  auto bf = random_values(3000, DType::BFloat16, -2, 2, 10);
  run_reduce(ReduceOp::Sum, ComputeKind::Float32, {{3, 1000}, {1}}, DType::BFloat16, DType::BFloat16, bf, 1.0, 1e-2);
  // Integer sums accumulate in int64 (exact), also from int32 / bool inputs and the int32 kind.
  auto ints = random_values(5000, DType::Int32, -2e9, 2e9, 12);
  run_reduce(ReduceOp::Sum, ComputeKind::Int64, {{5, 1000}, {1}}, DType::Int32, DType::Int64, ints, 1.0, 0);
  run_reduce(ReduceOp::Max, ComputeKind::Int32, {{5, 1000}, {0, 1}}, DType::Int32, DType::Int32, ints, 1.0, 0);
  std::vector<V> i64 = {V(1ll << 40), V(-(1ll << 41)), V(INT64_MAX - 5), V(3)};
  run_reduce(ReduceOp::Min, ComputeKind::Int64, {{4}, {0}}, DType::Int64, DType::Int64, i64, 1.0, 0);
  auto bools = random_values(300, DType::Bool, -1, 1, 13);
  run_reduce(ReduceOp::Sum, ComputeKind::Int64, {{3, 100}, {1}}, DType::Bool, DType::Int64, bools, 1.0, 0);
  auto small = random_values(64, DType::Int64, -3, 3, 14);
  run_reduce(ReduceOp::Prod, ComputeKind::Int64, {{4, 16}, {1}}, DType::Int64, DType::Int64, small, 1.0, 0);
  if (has_f64()) {
    auto d = random_values(50000, DType::Float64, -1, 1, 15);
    run_reduce(ReduceOp::Sum, ComputeKind::Float64, {{50000}, {0}}, DType::Float64, DType::Float64, d, 1.0, 1e-11);
    run_reduce(ReduceOp::Sum, ComputeKind::Float64, {{50, 1000}, {0}}, DType::Float64, DType::Float64, d, 1.0 / 50, 1e-12);
  }
  // NaN propagates through max/min (shared-memory, subgroup and thread paths) and sum.
  for (auto strategy : {Tuning::ReduceStrategy::Workgroup, Tuning::ReduceStrategy::Thread}) {
    tuning().reduce_strategy = strategy;
    auto x = random_values(2000, DType::Float32, -1, 1, 16);
    x[777] = NAN;
    for (ReduceOp op : {ReduceOp::Max, ReduceOp::Min, ReduceOp::Sum})
      run_reduce(op, ComputeKind::Float32, {{2, 1000}, {1}}, DType::Float32, DType::Float32, x, 1.0, 1e-5);
  }
  // Empty reduced space: identity (0 for sum, 1 for prod); mean of nothing is NaN (0 * inf).
  tuning().reduce_strategy = Tuning::ReduceStrategy::Auto;
  run_reduce(ReduceOp::Sum, ComputeKind::Float32, {{3, 0}, {1}}, DType::Float32, DType::Float32, {}, 1.0, 0);
  run_reduce(ReduceOp::Prod, ComputeKind::Int64, {{3, 0}, {1}}, DType::Int32, DType::Int64, {}, 1.0, 0);
  run_reduce(ReduceOp::Sum, ComputeKind::Float32, {{3, 0}, {1}}, DType::Float32, DType::Float32, {}, INFINITY, 0);
}

TEST_F(ReduceKernel, InvalidArguments) {
  Buffer x(DType::Float32, 8), y(DType::Float32, 8);
  ReduceGeometry g;
  g.reduced.ndim = 1;
  g.reduced.sizes[0] = 8;
  g.reduced.strides[1][0] = 1;
  EXPECT_THROW(reduce(stream(), ReduceOp::Sum, ComputeKind::Float32, 1, 7, g, y.at(), x.at()), std::invalid_argument);
  EXPECT_THROW(reduce(stream(), ReduceOp::Sum, ComputeKind::Int64, 1, 8, g, y.at(), x.at(), 0.5), std::invalid_argument);
  EXPECT_THROW(reduce(stream(), static_cast<ReduceOp>(7), ComputeKind::Float32, 1, 8, g, y.at(), x.at()), std::invalid_argument);
  g.reduced.strides[1][0] = int64_t(1) << 30;
  EXPECT_THROW(reduce(stream(), ReduceOp::Sum, ComputeKind::Float32, 1, 8, g, y.at(), x.at()), std::invalid_argument);
  g.out.ndim = 1;
  g.out.sizes[0] = 0;
  EXPECT_NO_THROW(reduce(stream(), ReduceOp::Sum, ComputeKind::Float32, 0, 8, g, y.at(), x.at()));
}

}  // namespace
