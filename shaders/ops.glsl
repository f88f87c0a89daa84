// Helpers for element-wise op expressions (shaders/elementwise_ops.toml), defined for the
// compute type T of the including variant (see common.glsl: KIND -> T, T_IS_FLOAT).
// Float-only helpers live in math.glsl (overloaded for float and, with TVK_FLOAT64, double).
#ifndef TVK_OPS_GLSL
#define TVK_OPS_GLSL

// C truthiness: x != 0, and NaN is true. Written as !(x == 0) so that it does not depend on
// whether the compiler emits an ordered or unordered "not equal".
bool tvk_truth(T x) { return !(x == T(0)); }

T tvk_bool(bool v) { return v ? T(1) : T(0); }

// NaN-propagating maximum/minimum (torch.maximum): if neither ordering nor equality holds, an
// operand is NaN and a + b is NaN. For integers the last branch is never taken.
T tvk_maximum(T a, T b) { return a > b ? a : (b > a ? b : (a == b ? a : a + b)); }
T tvk_minimum(T a, T b) { return a < b ? a : (b < a ? b : (a == b ? a : a + b)); }

// relu keeps NaN (NaN < 0 is false) and -0.0, like torch.relu.
T tvk_relu(T a) { return a < T(0) ? T(0) : a; }

// torch.sign: 0 for NaN and for +-0.
T tvk_sign(T a) { return tvk_bool(a > T(0)) - tvk_bool(a < T(0)); }

#if !T_IS_FLOAT
// Integer power by squaring (wraps like C); negative exponents as torch: 1 for base 1,
// +-1 for base -1, else 0.
T tvk_ipow(T a, T b) {
  if (b < T(0)) {
    if (a == T(1)) return T(1);
    if (a == T(-1)) return (b & T(1)) != T(0) ? T(-1) : T(1);
    return T(0);
  }
  T r = T(1);
  while (b > T(0)) {
    if ((b & T(1)) != T(0)) r *= a;
    a *= a;
    b >>= T(1);
  }
  return r;
}
#endif

#endif  // TVK_OPS_GLSL
