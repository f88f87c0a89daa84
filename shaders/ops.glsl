// Helpers for element-wise op expressions (shaders/elementwise_ops.toml), defined for the
// compute type T of the including variant (see common.glsl: KIND -> T, T_IS_FLOAT).
// Float-only helpers live in math.glsl (overloaded for float and, with TVK_FLOAT64, double).
#ifndef TVK_OPS_GLSL
#define TVK_OPS_GLSL

// C truthiness: x != 0, and NaN is true. Written as !(x == 0) so that it does not depend on
// whether the compiler emits an ordered or unordered "not equal".
bool tvk_truth(T x) { return !(x == T(0)); }

T tvk_bool(bool v) { return v ? T(1) : T(0); }

// NaN semantics. PyTorch propagates NaN through relu, clamp, maximum, max reductions, ...;
// GLSL's max/min/clamp are undefined for NaN operands (NVIDIA returns the other operand), and
// without the SignedZeroInfNanPreserve execution mode (runtime/pipeline.h adds it where the
// device supports it) a driver may assume that no float is NaN and fold comparison chains
// such as `a < 0 ? 0 : a` into max(a, 0) -- measured: relu(NaN) gave 0 on an H200. So every
// NaN decision here is the bit test of math.glsl (integer compares on the bits, which no float
// optimization can fold) and NaN operands are returned explicitly, never produced by max/min
// or by arithmetic on a NaN.
#if T_IS_FLOAT
bool tvk_nan(T x) { return tvk_isnan(x); }
#else
bool tvk_nan(T x) { return false; }
#endif

// torch.maximum/minimum: a NaN operand wins (the first one if both are NaN); otherwise
// std::max/std::min, which return `a` on ties (so maximum(-0, +0) = -0, as the CPU's scalar
// path; its vectorized path returns b on signed-zero ties, so tests avoid that case).
T tvk_maximum(T a, T b) { return tvk_nan(a) ? a : (tvk_nan(b) ? b : (a < b ? b : a)); }
T tvk_minimum(T a, T b) { return tvk_nan(a) ? a : (tvk_nan(b) ? b : (b < a ? b : a)); }

// relu keeps NaN and -0.0, like torch.relu (CPU: clamp_min(x, 0) with -0 kept).
T tvk_relu(T a) { return (tvk_nan(a) || !(a < T(0))) ? a : T(0); }

// torch.clamp(x, lo, hi) with scalar bounds: NaN x or NaN bound gives NaN (the CPU's vectorized
// minimum(maximum(x, lo), hi)); hi wins when lo > hi.
T tvk_clamp(T x, T lo, T hi) { return tvk_minimum(tvk_maximum(x, lo), hi); }

#if T_IS_FLOAT
// hardswish: x * min(max(x + 3, 0), 6) / 6 with NaN kept; -inf gives -inf * 0 = NaN as on the CPU.
T tvk_hardswish(T x) {
  if (tvk_nan(x)) return x;
  T r6 = x + T(3) < T(0) ? T(0) : (x + T(3) > T(6) ? T(6) : x + T(3));
  return x * r6 / T(6);
}
#endif

// torch.sign: 0 for NaN and for +-0.
T tvk_sign(T a) { return tvk_bool(a > T(0)) - tvk_bool(a < T(0)); }

#if !T_IS_FLOAT
// Integer sign / range tests written with min: Mesa 22.3's NIR (lavapipe) miscompiles a
// comparison with a constant of a 32-bit value sign-extended to 64 bits (`int64_t(x) < 0` is
// always false), which is what an int32 operand of an int64 kernel is; these forms avoid it.
bool tvk_ineg(T x) { return min(x, T(0)) != T(0); }  // x < 0
bool tvk_ige(T x, T c) { return min(x, c) == c; }     // x >= c

// Integer power by squaring (wraps like C); negative exponents as torch: 1 for base 1,
// +-1 for base -1, else 0.
T tvk_ipow(T a, T b) {
  if (tvk_ineg(b)) {
    if (a == T(1)) return T(1);
    if (a == T(-1)) return (b & T(1)) != T(0) ? T(-1) : T(1);
    return T(0);
  }
  T r = T(1);
  while (b != T(0)) {
    if ((b & T(1)) != T(0)) r *= a;
    a *= a;
    b >>= T(1);
  }
  return r;
}

// C division and remainder (truncating toward zero). Division by zero gives quotient 0 and
// remainder a (PyTorch's CPU kernels raise ZeroDivisionError, which a device kernel cannot);
// b = -1 is special-cased so that the minimum value wraps instead of trapping.
T tvk_idiv(T a, T b) { return b == T(0) ? T(0) : (b == T(-1) ? T(0) - a : a / b); }
T tvk_irem(T a, T b) { return b == T(0) ? a : (b == T(-1) ? T(0) : a - (a / b) * b); }
// torch.remainder: the sign of the divisor.
T tvk_iremainder(T a, T b) {
  T r = tvk_irem(a, b);
  return (r != T(0) && (tvk_ineg(r) != tvk_ineg(b))) ? r + b : r;
}
// torch.div(rounding_mode="floor").
T tvk_idiv_floor(T a, T b) {
  T q = tvk_idiv(a, b);
  return (b != T(0) && a - q * b != T(0) && (tvk_ineg(a) != tvk_ineg(b))) ? q - T(1) : q;
}

// Shifts with torch's out-of-range rules; `dt` is the storage dtype (its width, signedness).
int tvk_int_bits(int dt) {
  return dt == DT_INT64 ? 64 : (dt == DT_INT32 ? 32 : (dt == DT_INT16 ? 16 : 8));
}
T tvk_shl(T a, T b, int dt) {
  return (tvk_ineg(b) || tvk_ige(b, T(tvk_int_bits(dt)))) ? T(0) : (a << b);
}
// Arithmetic shift; shifts past the width give the sign fill (0 for uint8).
T tvk_shr(T a, T b, int dt) {
  T w = T(tvk_int_bits(dt) - (dt == DT_UINT8 ? 0 : 1));
  return a >> ((tvk_ineg(b) || tvk_ige(b, w)) ? w : b);
}
#endif

#endif  // TVK_OPS_GLSL
