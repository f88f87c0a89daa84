// Portable special functions for element-wise kernels.
//
// Why not the GLSL built-ins: Vulkan only guarantees loose precision for them (sin/cos: 2^-11
// absolute error; log: 2^-21 absolute near 1; exp: 3+2|x| ULP), and GLSL has no double
// precision exp/log/sin/cos at all. These versions use only +,-,*,/ (correctly rounded or
// 2.5 ULP on every conforming device), floor/roundEven and bit manipulation, so results match
// PyTorch's CPU results to ~1e-7 relative (float32) / ~1e-15 (float64) on any device.
// Nothing here relies on fma being fused or on denormals being preserved. Error-compensating
// steps (Cody-Waite reductions, the log1p correction, exact splits) are `precise`: without it,
// compilers may legally reassociate or simplify them away ((1 + x) - 1 - x -> 0,
// k*c1 + k*c2 -> k*(c1 + c2)), as Mesa's NIR does.
//
// float32: Cephes single-precision polynomials. float64 (only when TVK_FLOAT64): Taylor /
// atanh series and a continued fraction for erfc, with Cody-Waite argument reduction.
#ifndef TVK_MATH_GLSL
#define TVK_MATH_GLSL

#define TVK_F32_INF uintBitsToFloat(0x7f800000u)
#define TVK_F32_NAN uintBitsToFloat(0x7fc00000u)

bool tvk_isnan(float x) { return (floatBitsToUint(x) & 0x7fffffffu) > 0x7f800000u; }
bool tvk_isinf(float x) { return (floatBitsToUint(x) & 0x7fffffffu) == 0x7f800000u; }
bool tvk_isfinite(float x) { return (floatBitsToUint(x) & 0x7f800000u) != 0x7f800000u; }

// x * 2^k for |k| up to ~300 without an out-of-range ldexp exponent.
float tvk_ldexp(float x, int k) {
  int h = k / 2;
  return ldexp(ldexp(x, h), k - h);
}

// exp(r) for |r| <= ln2/2 (Cephes expf polynomial).
float tvk_exp_poly(float r) {
  float z = r * r;
  float p = 1.9875691500e-4;
  p = p * r + 1.3981999507e-3;
  p = p * r + 8.3334519073e-3;
  p = p * r + 4.1665795894e-2;
  p = p * r + 1.6666665459e-1;
  p = p * r + 5.0000001201e-1;
  return p * z + r + 1.0;
}

float tvk_exp(float x) {
  if (tvk_isnan(x)) return x;
  if (x > 88.72283935546875) return TVK_F32_INF;
  if (x < -104.0) return 0.0;
  float k = roundEven(x * 1.44269504088896341);
  // Cody-Waite: ln2 = 0.693359375 - 2.12194440e-4; k * 0.693359375 is exact.
  precise float r = (x - k * 0.693359375) + k * 2.12194440e-4;
  return tvk_ldexp(tvk_exp_poly(r), int(k));
}

float tvk_exp2(float x) {
  if (tvk_isnan(x)) return x;
  if (x >= 128.0) return TVK_F32_INF;
  if (x < -150.0) return 0.0;
  float k = roundEven(x);
  precise float r = (x - k) * 0.693147180559945309;  // x - k is exact
  return tvk_ldexp(tvk_exp_poly(r), int(k));
}

// log(1 + f) for f in [sqrt(1/2) - 1, sqrt(2) - 1] (Cephes logf polynomial), relative accuracy.
float tvk_log1p_reduced(float f) {
  float z = f * f;
  float y = 7.0376836292e-2;
  y = y * f - 1.1514610310e-1;
  y = y * f + 1.1676998740e-1;
  y = y * f - 1.2420140846e-1;
  y = y * f + 1.4249322787e-1;
  y = y * f - 1.6668057665e-1;
  y = y * f + 2.0000714765e-1;
  y = y * f - 2.4999993993e-1;
  y = y * f + 3.3333331174e-1;
  y = y * f * z;
  return f + (y - 0.5 * z);
}

// Splits a positive finite x into 2^e * (1 + f) with 1 + f in [sqrt(1/2), sqrt(2)).
float tvk_log_split(float x, out float e) {
  uint bits = floatBitsToUint(x);
  float scale = 0.0;
  if (bits < 0x00800000u) {  // subnormal (if the device keeps them): normalize
    x *= 8388608.0;
    bits = floatBitsToUint(x);
    scale = -23.0;
  }
  int ex = int(bits >> 23) - 127;
  float m = uintBitsToFloat((bits & 0x007fffffu) | 0x3f800000u);  // [1, 2)
  if (m > 1.41421356237309505) {
    m *= 0.5;
    ex += 1;
  }
  e = float(ex) + scale;
  return m - 1.0;  // exact
}

float tvk_log(float x) {
  if (tvk_isnan(x) || x < 0.0) return TVK_F32_NAN;
  if (x == 0.0) return -TVK_F32_INF;
  if (tvk_isinf(x)) return x;
  float e;
  float f = tvk_log_split(x, e);
  // e * ln2 split so that e * 0.693359375 is exact.
  precise float r = (tvk_log1p_reduced(f) - e * 2.12194440e-4) + e * 0.693359375;
  return r;
}

float tvk_log2(float x) {
  if (tvk_isnan(x) || x < 0.0) return TVK_F32_NAN;
  if (x == 0.0) return -TVK_F32_INF;
  if (tvk_isinf(x)) return x;
  float e;
  float f = tvk_log_split(x, e);
  return tvk_log1p_reduced(f) * 1.44269504088896341 + e;
}

float tvk_log10(float x) { return tvk_log(x) * 0.434294481903251828; }

// log(1 + x) = log(u) - ((u - 1) - x) / u with u = 1 + x rounded: the second term corrects
// the rounding of u; exact at tiny x (gives x).
float tvk_log1p(float x) {
  if (tvk_isnan(x) || x < -1.0) return TVK_F32_NAN;
  if (x == -1.0) return -TVK_F32_INF;
  if (tvk_isinf(x)) return x;
  precise float u = 1.0 + x;
  if (u == 1.0) return x;
  precise float rounding = (u - 1.0) - x;
  return tvk_log(u) - rounding / u;
}

// exp(x) - 1: Taylor series below 0.5 (no cancellation), exp(x) - 1 above.
float tvk_expm1(float x) {
  if (tvk_isnan(x)) return x;
  if (abs(x) < 0.5) {
    float p = 2.7557319224e-6;  // 1/9!
    p = p * x + 2.4801587302e-5;
    p = p * x + 1.9841269841e-4;
    p = p * x + 1.3888888889e-3;
    p = p * x + 8.3333333333e-3;
    p = p * x + 4.1666666667e-2;
    p = p * x + 1.6666666667e-1;
    p = p * x + 0.5;
    return x + x * x * p;
  }
  if (x < -20.0) return -1.0;
  return tvk_exp(x) - 1.0;
}

// sin/cos: Cephes reduction by pi/2 up to |x| = 8192, Payne-Hanek beyond (accurate for
// every finite float).
float tvk_sin_poly(float r, float z) {
  return ((-1.9515295891e-4 * z + 8.3321608736e-3) * z - 1.6666654611e-1) * z * r + r;
}
float tvk_cos_poly(float z) {
  return ((2.443315711809948e-5 * z - 1.388731625493765e-3) * z + 4.166664568298827e-2) * z * z -
         0.5 * z + 1.0;
}
// Payne-Hanek reduction for large |x| (any finite float): x * 2/pi mod 4 in 2.62 fixed
// point from the exact products of x's 24-bit significand with 32-bit words of 2/pi.
const uint TVK_TWO_OVER_PI[8] = uint[](0xa2f9836eu, 0x4e441529u, 0xfc2757d1u, 0xf534ddc0u,
                                       0xdb629599u, 0x3c439041u, 0xfe5163abu, 0xdebbc561u);
float tvk_reduce_pio2_large(float ax, out uint q) {
  uint bits = floatBitsToUint(ax);
  uint64_t m = uint64_t((bits & 0x7fffffu) | 0x800000u);
  int e = int(bits >> 23) - 150;  // ax = m * 2^e
  uint64_t y = 0ul;
  for (int j = 1; j <= 8; ++j) {
    int sh = e - 32 * j + 62;
    uint64_t p = m * uint64_t(TVK_TWO_OVER_PI[j - 1]);
    if (sh >= 64 || sh <= -64) continue;
    y += sh >= 0 ? (p << sh) : (p >> (-sh));
  }
  uint64_t k = (y + (1ul << 61)) >> 62;  // nearest integer of x * 2/pi (mod 4)
  q = uint(k & 3ul);
  int64_t f = int64_t(y - (k << 62));  // fraction in [-1/2, 1/2) * 2^62
  return float(f) * 2.16840434497100886801e-19 * 1.57079632679489661923;  // * 2^-62 * pi/2
}

// Returns r in [-pi/4, pi/4] and the quadrant q with |x| = q * pi/2 + r.
float tvk_reduce_pio2(float ax, out uint q) {
  if (ax > 8192.0) return tvk_reduce_pio2_large(ax, q);
  float j = floor(ax * 1.27323954473516268);  // 4/pi
  if (mod(j, 2.0) == 1.0) j += 1.0;
  q = uint(mod(j * 0.5, 4.0));
  precise float r = ((ax - j * 0.78515625) - j * 2.4187564849853515625e-4) - j * 3.77489497744594108e-8;
  return r;
}
float tvk_sin(float x) {
  if (!tvk_isfinite(x)) return TVK_F32_NAN;
  uint q;
  float r = tvk_reduce_pio2(abs(x), q);
  float z = r * r;
  float y = (q & 1u) == 0u ? tvk_sin_poly(r, z) : tvk_cos_poly(z);
  if (q >= 2u) y = -y;
  return x < 0.0 ? -y : y;
}
float tvk_cos(float x) {
  if (!tvk_isfinite(x)) return TVK_F32_NAN;
  uint q;
  float r = tvk_reduce_pio2(abs(x), q);
  float z = r * r;
  float y = (q & 1u) == 0u ? tvk_cos_poly(z) : tvk_sin_poly(r, z);
  return (q == 1u || q == 2u) ? -y : y;
}

// tanh(|x|) = -expm1(-2|x|) / (2 + expm1(-2|x|)): no overflow, accurate near 0.
float tvk_tanh(float x) {
  if (tvk_isnan(x)) return x;
  float e = tvk_expm1(-2.0 * abs(x));
  float t = -e / (2.0 + e);
  return x < 0.0 ? -t : t;
}

// 1 / (1 + exp(-x)) computed from e = exp(-|x|) <= 1: no overflow for any x.
float tvk_sigmoid(float x) {
  if (tvk_isnan(x)) return x;
  float e = tvk_exp(-abs(x));
  float r = 1.0 / (1.0 + e);
  return x >= 0.0 ? r : e * r;
}

// Exact x*x = hi + lo (Veltkamp split; no fma needed).
void tvk_square_split(float x, out float hi, out float lo) {
  precise float c = 4097.0 * x;
  precise float xh = c - (c - x);
  precise float xl = x - xh;
  precise float h = x * x;
  precise float l = ((xh * xh - h) + 2.0 * xh * xl) + xl * xl;
  hi = h;
  lo = l;
}

// erfc(x) for x >= 0, relative error ~1.2e-7 (Numerical Recipes' Chebyshev fit), with
// exp(-x^2) evaluated from an exact split x^2 = hi + lo (no amplified rounding of x^2).
float tvk_erfc_core(float x, float hi, float lo) {
  float t = 1.0 / (1.0 + 0.5 * x);
  float p = 0.17087277;
  p = p * t - 0.82215223;
  p = p * t + 1.48851587;
  p = p * t - 1.13520398;
  p = p * t + 0.27886807;
  p = p * t - 0.18628806;
  p = p * t + 0.09678418;
  p = p * t + 0.37409196;
  p = p * t + 1.00002368;
  p = p * t - 1.26551223;
  return t * tvk_exp(-hi) * tvk_exp(p - lo);
}
float tvk_erfc_pos(float x) {
  float hi, lo;
  tvk_square_split(x, hi, lo);
  return tvk_erfc_core(x, hi, lo);
}

float tvk_erfc(float x) {
  if (tvk_isnan(x)) return x;
  if (x > 10.5) return 0.0;
  if (x < -10.0) return 2.0;
  return x >= 0.0 ? tvk_erfc_pos(x) : 2.0 - tvk_erfc_pos(-x);
}

float tvk_erf(float x) {
  if (tvk_isnan(x)) return x;
  float ax = abs(x);
  if (ax < 1.0) {
    // 2/sqrt(pi) * sum (-1)^n x^(2n+1) / (n! (2n+1)), n <= 11
    float z = x * x;
    float p = 1.0 / (39916800.0 * 23.0);
    p = p * -z + 1.0 / (3628800.0 * 21.0);
    p = p * -z + 1.0 / (362880.0 * 19.0);
    p = p * -z + 1.0 / (40320.0 * 17.0);
    p = p * -z + 1.0 / (5040.0 * 15.0);
    p = p * -z + 1.0 / (720.0 * 13.0);
    p = p * -z + 1.0 / (120.0 * 11.0);
    p = p * -z + 1.0 / (24.0 * 9.0);
    p = p * -z + 1.0 / (6.0 * 7.0);
    p = p * -z + 1.0 / (2.0 * 5.0);
    p = p * -z + 1.0 / 3.0;
    p = p * -z + 1.0;
    return 1.12837916709551257 * x * p;
  }
  float r = ax > 10.0 ? 1.0 : 1.0 - tvk_erfc_pos(ax);
  return x < 0.0 ? -r : r;
}

// gelu (erf form) = x/2 * (1 + erf(x/sqrt2)) = x/2 * erfc(-x/sqrt2): no cancellation for x < 0,
// and exp(-x^2/2) comes from the exact split of x^2 rather than from the rounded x/sqrt2.
float tvk_gelu(float x) {
  if (tvk_isnan(x)) return x;
  float z = 0.707106781186547524 * abs(x);
  if (x >= 0.0) return x > 10.0 ? x : 0.5 * x * (2.0 - tvk_erfc_pos(z));
  if (x < -15.0) return tvk_isinf(x) ? TVK_F32_NAN : -0.0;  // -inf * 0 is NaN, as in torch
  float hi, lo;
  tvk_square_split(x, hi, lo);
  return 0.5 * x * tvk_erfc_core(z, 0.5 * hi, 0.5 * lo);
}

float tvk_silu(float x) { return x * tvk_sigmoid(x); }

// pow with C99/PyTorch special cases (pow(x, 0) = 1, pow(1, y) = 1, negative bases with
// integer exponents, zeros and infinities); the general case is exp2(y * log2|x|).
float tvk_pow(float a, float b) {
  if (b == 0.0 || a == 1.0) return 1.0;
  if (tvk_isnan(a) || tvk_isnan(b)) return TVK_F32_NAN;
  float aa = abs(a);
  if (tvk_isinf(b)) {
    if (aa == 1.0) return 1.0;
    return ((aa > 1.0) == (b > 0.0)) ? TVK_F32_INF : 0.0;
  }
  bool b_int = floor(b) == b;
  bool b_odd = b_int && abs(b) < 16777216.0 && mod(b, 2.0) == 1.0;
  if (a == 0.0 || tvk_isinf(a)) {
    // |a|^b is 0 or inf; the sign is a's sign for odd integer b
    float m = ((a == 0.0) == (b > 0.0)) ? 0.0 : TVK_F32_INF;
    return (b_odd && floatBitsToUint(a) >= 0x80000000u) ? -m : m;
  }
  if (a < 0.0 && !b_int) return TVK_F32_NAN;
  if (b == 2.0) return a * a;
  float r = tvk_exp2(b * tvk_log2(aa));
  return (a < 0.0 && b_odd) ? -r : r;
}

#if TVK_FLOAT64
// ------------------------------ float64 ------------------------------
#define TVK_F64_INF uint64BitsToDouble(0x7ff0000000000000ul)
#define TVK_F64_NAN uint64BitsToDouble(0x7ff8000000000000ul)

bool tvk_isnan(double x) {
  return (doubleBitsToUint64(x) & 0x7ffffffffffffffful) > 0x7ff0000000000000ul;
}
bool tvk_isinf(double x) {
  return (doubleBitsToUint64(x) & 0x7ffffffffffffffful) == 0x7ff0000000000000ul;
}
bool tvk_isfinite(double x) {
  return (doubleBitsToUint64(x) & 0x7ff0000000000000ul) != 0x7ff0000000000000ul;
}

double tvk_ldexp(double x, int k) {
  int h = k / 2;
  return ldexp(ldexp(x, h), k - h);
}

// exp(r) for |r| <= ln2/2: Taylor to r^13 (truncation < 1e-17 relative).
double tvk_exp_poly(double r) {
  double p = 1.0lf / 6227020800.0lf;
  p = p * r + 1.0lf / 479001600.0lf;
  p = p * r + 1.0lf / 39916800.0lf;
  p = p * r + 1.0lf / 3628800.0lf;
  p = p * r + 1.0lf / 362880.0lf;
  p = p * r + 1.0lf / 40320.0lf;
  p = p * r + 1.0lf / 5040.0lf;
  p = p * r + 1.0lf / 720.0lf;
  p = p * r + 1.0lf / 120.0lf;
  p = p * r + 1.0lf / 24.0lf;
  p = p * r + 1.0lf / 6.0lf;
  p = p * r + 0.5lf;
  return 1.0lf + (r + r * r * p);
}

double tvk_exp(double x) {
  if (tvk_isnan(x)) return x;
  if (x > 709.782712893383973) return TVK_F64_INF;
  if (x < -746.0lf) return 0.0lf;
  double k = roundEven(x * 1.4426950408889634lf);
  // ln2 = 0.6931471803691238 (32 bits, k * hi exact) + 1.9082149292705877e-10
  precise double r = (x - k * 0.6931471803691238lf) - k * 1.9082149292705877e-10lf;
  return tvk_ldexp(tvk_exp_poly(r), int(k));
}

double tvk_exp2(double x) {
  if (tvk_isnan(x)) return x;
  if (x >= 1024.0lf) return TVK_F64_INF;
  if (x < -1080.0lf) return 0.0lf;
  double k = roundEven(x);
  precise double r = (x - k) * 0.6931471805599453lf;
  return tvk_ldexp(tvk_exp_poly(r), int(k));
}

// log(1 + f) for f in [sqrt(1/2) - 1, sqrt(2) - 1]: with s = f / (2 + f),
// log(1 + f) = 2 atanh(s) = f - s * (f - R), R = sum_{k>=1} 2 s^(2k) / (2k + 1).
double tvk_log1p_reduced(double f) {
  double s = f / (2.0lf + f);
  double z = s * s;
  double r = 2.0lf / 23.0lf;
  r = r * z + 2.0lf / 21.0lf;
  r = r * z + 2.0lf / 19.0lf;
  r = r * z + 2.0lf / 17.0lf;
  r = r * z + 2.0lf / 15.0lf;
  r = r * z + 2.0lf / 13.0lf;
  r = r * z + 2.0lf / 11.0lf;
  r = r * z + 2.0lf / 9.0lf;
  r = r * z + 2.0lf / 7.0lf;
  r = r * z + 2.0lf / 5.0lf;
  r = r * z + 2.0lf / 3.0lf;
  r *= z;
  return f - s * (f - r);
}

double tvk_log_split(double x, out double e) {
  int ex;
  double m = frexp(x, ex);  // [0.5, 1)
  if (m < 0.70710678118654752lf) {
    m *= 2.0lf;
    ex -= 1;
  }
  e = double(ex);
  return m - 1.0lf;
}

double tvk_log(double x) {
  if (tvk_isnan(x) || x < 0.0lf) return TVK_F64_NAN;
  if (x == 0.0lf) return -TVK_F64_INF;
  if (tvk_isinf(x)) return x;
  double e;
  double f = tvk_log_split(x, e);
  precise double r = (tvk_log1p_reduced(f) + e * 1.9082149292705877e-10lf) + e * 0.6931471803691238lf;
  return r;
}

double tvk_log2(double x) {
  if (tvk_isnan(x) || x < 0.0lf) return TVK_F64_NAN;
  if (x == 0.0lf) return -TVK_F64_INF;
  if (tvk_isinf(x)) return x;
  double e;
  double f = tvk_log_split(x, e);
  return tvk_log1p_reduced(f) * 1.4426950408889634lf + e;
}

double tvk_log10(double x) { return tvk_log(x) * 0.4342944819032518lf; }

double tvk_log1p(double x) {
  if (tvk_isnan(x) || x < -1.0lf) return TVK_F64_NAN;
  if (x == -1.0lf) return -TVK_F64_INF;
  if (tvk_isinf(x)) return x;
  precise double u = 1.0lf + x;
  if (u == 1.0lf) return x;
  precise double rounding = (u - 1.0lf) - x;
  return tvk_log(u) - rounding / u;
}

double tvk_expm1(double x) {
  if (tvk_isnan(x)) return x;
  if (abs(x) < 0.5lf) {
    // Taylor to x^17 (truncation < 1e-21 relative)
    double p = 1.0lf / 355687428096000.0lf;  // 1/17!
    p = p * x + 1.0lf / 20922789888000.0lf;
    p = p * x + 1.0lf / 1307674368000.0lf;
    p = p * x + 1.0lf / 87178291200.0lf;
    p = p * x + 1.0lf / 6227020800.0lf;
    p = p * x + 1.0lf / 479001600.0lf;
    p = p * x + 1.0lf / 39916800.0lf;
    p = p * x + 1.0lf / 3628800.0lf;
    p = p * x + 1.0lf / 362880.0lf;
    p = p * x + 1.0lf / 40320.0lf;
    p = p * x + 1.0lf / 5040.0lf;
    p = p * x + 1.0lf / 720.0lf;
    p = p * x + 1.0lf / 120.0lf;
    p = p * x + 1.0lf / 24.0lf;
    p = p * x + 1.0lf / 6.0lf;
    p = p * x + 0.5lf;
    return x + x * x * p;
  }
  if (x < -40.0lf) return -1.0lf;
  return tvk_exp(x) - 1.0lf;
}

// sin/cos: Cody-Waite reduction by pi/2 in three 33-bit parts (exact products for
// |x| < ~2^20 * pi/2), Taylor polynomials on [-pi/4, pi/4].
double tvk_sin_poly(double r, double z) {
  double p = -1.0lf / 121645100408832000.0lf;  // -1/19!
  p = p * z + 1.0lf / 355687428096000.0lf;
  p = p * z - 1.0lf / 1307674368000.0lf;
  p = p * z + 1.0lf / 6227020800.0lf;
  p = p * z - 1.0lf / 39916800.0lf;
  p = p * z + 1.0lf / 362880.0lf;
  p = p * z - 1.0lf / 5040.0lf;
  p = p * z + 1.0lf / 120.0lf;
  p = p * z - 1.0lf / 6.0lf;
  return r + r * z * p;
}
double tvk_cos_poly(double z) {
  double p = 1.0lf / 2432902008176640000.0lf;  // 1/20!
  p = p * z - 1.0lf / 6402373705728000.0lf;
  p = p * z + 1.0lf / 20922789888000.0lf;
  p = p * z - 1.0lf / 87178291200.0lf;
  p = p * z + 1.0lf / 479001600.0lf;
  p = p * z - 1.0lf / 3628800.0lf;
  p = p * z + 1.0lf / 40320.0lf;
  p = p * z - 1.0lf / 720.0lf;
  p = p * z + 1.0lf / 24.0lf;
  return 1.0lf - 0.5lf * z + z * z * p;
}
double tvk_reduce_pio2(double ax, out uint q) {
  double k = roundEven(ax * 0.6366197723675814lf);
  q = uint(mod(k, 4.0lf));
  precise double r = ((ax - k * 1.5707963267341256lf) - k * 6.077100506303966e-11lf) -
                     k * 2.0222662487959506e-21lf;
  return r;
}
double tvk_sin(double x) {
  if (!tvk_isfinite(x)) return TVK_F64_NAN;
  uint q;
  double r = tvk_reduce_pio2(abs(x), q);
  double z = r * r;
  double y = (q & 1u) == 0u ? tvk_sin_poly(r, z) : tvk_cos_poly(z);
  if (q >= 2u) y = -y;
  return x < 0.0lf ? -y : y;
}
double tvk_cos(double x) {
  if (!tvk_isfinite(x)) return TVK_F64_NAN;
  uint q;
  double r = tvk_reduce_pio2(abs(x), q);
  double z = r * r;
  double y = (q & 1u) == 0u ? tvk_cos_poly(z) : tvk_sin_poly(r, z);
  return (q == 1u || q == 2u) ? -y : y;
}

double tvk_tanh(double x) {
  if (tvk_isnan(x)) return x;
  double e = tvk_expm1(-2.0lf * abs(x));
  double t = -e / (2.0lf + e);
  return x < 0.0lf ? -t : t;
}

double tvk_sigmoid(double x) {
  if (tvk_isnan(x)) return x;
  double e = tvk_exp(-abs(x));
  double r = 1.0lf / (1.0lf + e);
  return x >= 0.0lf ? r : e * r;
}

void tvk_square_split(double x, out double hi, out double lo) {
  precise double c = 134217729.0lf * x;
  precise double xh = c - (c - x);
  precise double xl = x - xh;
  precise double h = x * x;
  precise double l = ((xh * xh - h) + 2.0lf * xh * xl) + xl * xl;
  hi = h;
  lo = l;
}

// erf for |x| < 2: Maclaurin series (32 terms; < 1e-15 absolute).
double tvk_erf_series(double x) {
  double z = x * x;
  double t = x;
  double s = x;
  for (int n = 1; n < 32; ++n) {
    t *= -z / double(n);
    s += t / double(2 * n + 1);
  }
  return 1.1283791670955126lf * s;
}

// erfc for x >= 2: continued fraction (64 terms, converged to ~1e-16 relative at x = 2),
// given an exact split x^2 = hi + lo.
double tvk_erfc_cf_core(double x, double hi, double lo) {
  double f = x;
  for (int k = 64; k >= 1; --k) f = x + (0.5lf * double(k)) / f;
  return tvk_exp(-hi) * tvk_exp(-lo) * 0.5641895835477563lf / f;
}
double tvk_erfc_cf(double x) {
  double hi, lo;
  tvk_square_split(x, hi, lo);
  return tvk_erfc_cf_core(x, hi, lo);
}

double tvk_erf(double x) {
  if (tvk_isnan(x)) return x;
  double ax = abs(x);
  if (ax < 2.0lf) return tvk_erf_series(x);
  double r = ax > 6.0lf ? 1.0lf : 1.0lf - tvk_erfc_cf(ax);
  return x < 0.0lf ? -r : r;
}

double tvk_erfc(double x) {
  if (tvk_isnan(x)) return x;
  if (x > 27.5lf) return 0.0lf;
  if (x < -6.0lf) return 2.0lf;
  double ax = abs(x);
  double c = ax < 2.0lf ? 1.0lf - tvk_erf_series(ax) : tvk_erfc_cf(ax);
  return x < 0.0lf ? 2.0lf - c : c;
}

double tvk_gelu(double x) {
  if (tvk_isnan(x)) return x;
  double z = 0.7071067811865476lf * abs(x);
  if (x > -2.9lf) return 0.5lf * x * tvk_erfc(-0.7071067811865476lf * x);
  if (x < -40.0lf) return tvk_isinf(x) ? TVK_F64_NAN : -0.0lf;
  double hi, lo;
  tvk_square_split(x, hi, lo);
  return 0.5lf * x * tvk_erfc_cf_core(z, 0.5lf * hi, 0.5lf * lo);
}

double tvk_silu(double x) { return x * tvk_sigmoid(x); }

double tvk_pow(double a, double b) {
  if (b == 0.0lf || a == 1.0lf) return 1.0lf;
  if (tvk_isnan(a) || tvk_isnan(b)) return TVK_F64_NAN;
  double aa = abs(a);
  if (tvk_isinf(b)) {
    if (aa == 1.0lf) return 1.0lf;
    return ((aa > 1.0lf) == (b > 0.0lf)) ? TVK_F64_INF : 0.0lf;
  }
  bool b_int = floor(b) == b;
  bool b_odd = b_int && abs(b) < 9007199254740992.0lf && mod(b, 2.0lf) == 1.0lf;
  if (a == 0.0lf || tvk_isinf(a)) {
    double m = ((a == 0.0lf) == (b > 0.0lf)) ? 0.0lf : TVK_F64_INF;
    return (b_odd && doubleBitsToUint64(a) >= 0x8000000000000000ul) ? -m : m;
  }
  if (a < 0.0lf && !b_int) return TVK_F64_NAN;
  if (b == 2.0lf) return a * a;
  double r = tvk_exp(b * tvk_log(aa));
  return (a < 0.0lf && b_odd) ? -r : r;
}
#endif  // TVK_FLOAT64

#endif  // TVK_MATH_GLSL
