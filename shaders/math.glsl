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
// Same names as the float64 helpers (math_f64.glsl), so expressions are written once; the
// float32 built-ins are correct on every driver we test.
float tvk_trunc(float x) { return trunc(x); }
float tvk_round_even(float x) { return roundEven(x); }

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

// ------------------------------ float32: more special functions ------------------------------
// Constant tables (generated with mpmath at 50 digits, see the comment of each user):
//   TVK_*_ROOT_F    {root_hi, root_lo, half_width} of the intervals around zeros of a function
//                   where its usual formula cancels; TVK_*_COEF_F the Taylor coefficients
//                   of the function at that root in t = (x - root) / half_width:
//                   f = sum_{k=1..16} C_k t^k, |t| < 1.
//   TVK_LGAMMA2_F   Taylor coefficients of lgamma(2 + p), p^1..p^14 (|p| <= 1/2).
const float TVK_LGAMMA_ROOT_F[48] = float[](-2.4570248126983643, 7.447756189549182e-08, 0.13710741698741913, -2.747682571411133, -7.531627943535568e-08, 0.0756952092051506, -3.143580913543701, 2.519372088727323e-08, 0.043074265122413635, -3.955294370651245, 8.579264942909504e-08, 0.01341171469539404, -4.039361953735352, 1.1399481536500389e-07, 0.011808551847934723, -4.991544723510742, 8.295069164887536e-08, 0.0025366079062223434, -5.008218288421631, 1.2009903116450005e-07, 0.0024654504377394915, -5.998607635498047, 1.5541716891220858e-07, 0.0004177559749223292, -6.00138521194458, -8.250857774783071e-08, 0.00041558832162991166, -6.9998016357421875, 1.2785154979155777e-07, 5.954763400950469e-05, -7.0001983642578125, 3.085048660977918e-08, 5.950002378085628e-05, -7.999975204467773, 7.371952825963035e-09, 7.440871286235051e-06, -8.000024795532227, -4.73845540582829e-09, 7.4400813900865614e-06, -8.99999713897705, -1.0527392646508815e-07, 8.267247153526114e-07, -9.00000286102295, 1.0530812488696029e-07, 8.267144266937976e-07, -10.0, 2.755733703452279e-07, 8.26720096824829e-08);
const float TVK_LGAMMA_COEF_F[256] = float[](
    0.2078004777431488, 0.09132888168096542, 0.00363747077062726, 0.0030821168329566717, 0.0002810372388921678, 0.00016491266433149576, 2.189474798797164e-05, 1.0268654477840755e-05, 1.7232740674444358e-06, 6.958909466447949e-07, 1.3684952193671052e-07, 4.988683244278036e-08, 1.0958729923515875e-08, 3.7224656690426627e-09, 8.844627252813098e-10, 2.861175740775934e-10, -0.1449071317911148, 0.0548635795712471, -0.008715575560927391, 0.0020560661796480417, -0.00048401113599538803, 0.00012168903049314395, -3.1227671570377424e-05, 8.202653589250986e-06, -2.186877054555225e-06, 5.905013722440344e-07, -1.6104168309993838e-07, 4.4286846190289e-08, -1.2264013804497154e-08, 3.416407379219777e-09, -9.565936931466013e-10, 2.690420108919511e-10, 0.3351989686489105, 0.04792727157473564, 0.008972500450909138, 0.0020272452384233475, 0.0004859499749727547, 0.00012150321708759293, 3.1242754630511627e-05, 8.20125569589436e-06, 2.1869998363399645e-06, 5.904900035602623e-07, 1.610427204923326e-07, 4.428675026701967e-08, 1.226402268628135e-08, 3.416406491041357e-09, 9.565938041689037e-10, 2.690420108919511e-10, -0.27795860171318054, 0.0452769473195076, -0.008999785408377647, 0.002025017747655511, -0.00048599994624964893, 0.00012150000111432746, -3.1242856493918225e-05, 8.20125023892615e-06, -2.18700006371364e-06, 5.904900035602623e-07, -1.610427204923326e-07, 4.428675026701967e-08, -1.226402268628135e-08, 3.416406491041357e-09, -9.565938041689037e-10, 2.690420108919511e-10, 0.3163567781448364, 0.045214779675006866, 0.008999845944344997, 0.0020250107627362013, 0.0004859999753534794, 0.00012150000111432746, 3.1242856493918225e-05, 8.20125023892615e-06, 2.18700006371364e-06, 5.904900035602623e-07, 1.610427204923326e-07, 4.428675026701967e-08, 1.226402268628135e-08, 3.416406491041357e-09, 9.565938041689037e-10, 2.690420108919511e-10, -0.2956055700778961, 0.045010000467300415, -0.008999999612569809, 0.002025000052526593, -0.00048600000445730984, 0.00012150000111432746, -3.1242856493918225e-05, 8.20125023892615e-06, -2.18700006371364e-06, 5.904900035602623e-07, -1.610427204923326e-07, 4.428675026701967e-08, -1.226402268628135e-08, 3.416406491041357e-09, -9.565938041689037e-10, 2.690420108919511e-10, 0.30414336919784546, 0.04500944912433624, 0.008999999612569809, 0.002025000052526593, 0.00048600000445730984, 0.00012150000111432746, 3.1242856493918225e-05, 8.20125023892615e-06, 2.18700006371364e-06, 5.904900035602623e-07, 1.610427204923326e-07, 4.428675026701967e-08, 1.226402268628135e-08, 3.416406491041357e-09, 9.565938041689037e-10, 2.690420108919511e-10, -0.29921582341194153, 0.04500027373433113, -0.008999999612569809, 0.002025000052526593, -0.00048600000445730984, 0.00012150000111432746, -3.1242856493918225e-05, 8.20125023892615e-06, -2.18700006371364e-06, 5.904900035602623e-07, -1.610427204923326e-07, 4.428675026701967e-08, -1.226402268628135e-08, 3.416406491041357e-09, -9.565938041689037e-10, 2.690420108919511e-10, 0.30077651143074036, 0.04500027000904083, 0.008999999612569809, 0.002025000052526593, 0.00048600000445730984, 0.00012150000111432746, 3.1242856493918225e-05, 8.20125023892615e-06, 2.18700006371364e-06, 5.904900035602623e-07, 1.610427204923326e-07, 4.428675026701967e-08, 1.226402268628135e-08, 3.416406491041357e-09, 9.565938041689037e-10, 2.690420108919511e-10, -0.29987993836402893, 0.04500000551342964, -0.008999999612569809, 0.002025000052526593, -0.00048600000445730984, 0.00012150000111432746, -3.1242856493918225e-05, 8.20125023892615e-06, -2.18700006371364e-06, 5.904900035602623e-07, -1.610427204923326e-07, 4.428675026701967e-08, -1.226402268628135e-08, 3.416406491041357e-09, -9.565938041689037e-10, 2.690420108919511e-10, 0.30011990666389465, 0.04500000551342964, 0.008999999612569809, 0.002025000052526593, 0.00048600000445730984, 0.00012150000111432746, 3.1242856493918225e-05, 8.20125023892615e-06, 2.18700006371364e-06, 5.904900035602623e-07, 1.610427204923326e-07, 4.428675026701967e-08, 1.226402268628135e-08, 3.416406491041357e-09, 9.565938041689037e-10, 2.690420108919511e-10, -0.29998406767845154, 0.04500000178813934, -0.008999999612569809, 0.002025000052526593, -0.00048600000445730984, 0.00012150000111432746, -3.1242856493918225e-05, 8.20125023892615e-06, -2.18700006371364e-06, 5.904900035602623e-07, -1.610427204923326e-07, 4.428675026701967e-08, -1.226402268628135e-08, 3.416406491041357e-09, -9.565938041689037e-10, 2.690420108919511e-10, 0.300015926361084, 0.04500000178813934, 0.008999999612569809, 0.002025000052526593, 0.00048600000445730984, 0.00012150000111432746, 3.1242856493918225e-05, 8.20125023892615e-06, 2.18700006371364e-06, 5.904900035602623e-07, 1.610427204923326e-07, 4.428675026701967e-08, 1.226402268628135e-08, 3.416406491041357e-09, 9.565938041689037e-10, 2.690420108919511e-10, -0.29999813437461853, 0.04500000178813934, -0.008999999612569809, 0.002025000052526593, -0.00048600000445730984, 0.00012150000111432746, -3.1242856493918225e-05, 8.20125023892615e-06, -2.18700006371364e-06, 5.904900035602623e-07, -1.610427204923326e-07, 4.428675026701967e-08, -1.226402268628135e-08, 3.416406491041357e-09, -9.565938041689037e-10, 2.690420108919511e-10, 0.300001859664917, 0.04500000178813934, 0.008999999612569809, 0.002025000052526593, 0.00048600000445730984, 0.00012150000111432746, 3.1242856493918225e-05, 8.20125023892615e-06, 2.18700006371364e-06, 5.904900035602623e-07, 1.610427204923326e-07, 4.428675026701967e-08, 1.226402268628135e-08, 3.416406491041357e-09, 9.565938041689037e-10, 2.690420108919511e-10, -0.29999980330467224, 0.04500000178813934, -0.008999999612569809, 0.002025000052526593, -0.00048600000445730984, 0.00012150000111432746, -3.1242856493918225e-05, 8.20125023892615e-06, -2.18700006371364e-06, 5.904900035602623e-07, -1.610427204923326e-07, 4.428675026701967e-08, -1.226402268628135e-08, 3.416406491041357e-09, -9.565938041689037e-10, 2.690420108919511e-10);
const float TVK_DIGAMMA_ROOT_F[39] = float[](1.4616321325302124, 1.243815006546356e-08, 0.4384896457195282, -0.5040830373764038, 2.9111948407489763e-08, 0.1487751007080078, -1.5734984874725342, 1.4310143292561861e-08, 0.12795045971870422, -2.6107208728790283, 4.434883571491355e-09, 0.1167837381362915, -3.635293483734131, 1.1729723325970554e-07, 0.10941199213266373, -4.653237819671631, 5.7928488672587264e-08, 0.10402867197990417, -5.6671624183654785, -2.319140790518759e-08, 0.09985126554965973, -6.678418159484863, -5.358856469683815e-08, 0.0964745357632637, -7.687788486480713, 1.614490798829138e-07, 0.09366350620985031, -8.695764541625977, 3.7780958450639446e-07, 0.09127075225114822, -9.702672958374023, 4.183721671324747e-07, 0.08919823914766312, -10.708741188049316, 3.4979515817212814e-07, 0.08737774938344955, -11.714133262634277, 2.0140532797086053e-07, 0.08576007932424545);
const float TVK_DIGAMMA_COEF_F[208] = float[](
    0.4243142604827881, -0.08513147383928299, 0.021794062107801437, -0.006060793064534664, 0.0017478829249739647, -0.0005132046644575894, 0.00015211546269711107, -4.5321470679482445e-05, 1.354245250695385e-05, -4.05333003072883e-06, 1.2143491403548978e-06, -3.640139425442612e-07, 1.0915275794332047e-07, -3.2736714672410017e-08, 9.819397739363467e-09, -2.945531818454583e-09, 1.3300193548202515, -0.017914077267050743, 0.10622723400592804, -0.0013526617549359798, 0.009349489584565163, -0.0001594767381902784, 0.0008280526963062584, -1.8091759557137266e-05, 7.340019510593265e-05, -1.9580882053560345e-06, 6.508467322419165e-06, -2.0499871311585594e-07, 5.772686222371703e-07, -2.095643303334782e-08, 5.121437496313774e-08, -2.104422414106466e-09, 1.2720211744308472, -0.12773875892162323, 0.08360419422388077, -0.01469311211258173, 0.0066679068841040134, -0.001494403462857008, 0.0005608019419014454, -0.00014313077554106712, 4.8538364353589714e-05, -1.3312184819369577e-05, 4.2723631850094534e-06, -1.2195266663184157e-06, 3.797310341724369e-07, -1.1082416051522159e-07, 3.393779124394314e-08, -1.0027273233959022e-08, 1.2669084072113037, -0.1741728037595749, 0.08157634735107422, -0.01863858662545681, 0.006665430963039398, -0.0017928030574694276, 0.0005771445576101542, -0.00016561627853661776, 5.1122649892931804e-05, -1.506177522969665e-05, 4.571112185658421e-06, -1.361278577860503e-06, 4.1030625652638264e-07, -1.2272421656689403e-07, 3.688757033160073e-08, -1.1052827098012585e-08, 1.2747524976730347, -0.20276856422424316, 0.08272771537303925, -0.02084391750395298, 0.00690478878095746, -0.0019579348154366016, 0.0006067535141482949, -0.00017868074064608663, 5.4179337894311175e-05, -1.6154692275449634e-05, 4.863470621785382e-06, -1.4561021544068353e-06, 4.3733678012358723e-07, -1.3111386465425312e-07, 3.934917103265434e-08, -1.1802166355323607e-08, 1.286797046661377, -0.22333285212516785, 0.08462261408567429, -0.022392231971025467, 0.007167244330048561, -0.0020774572622030973, 0.0006346827722154558, -0.00018857499526347965, 5.686316580977291e-05, -1.701261498965323e-05, 5.111159225634765e-06, -1.532173087070987e-06, 4.598389864440833e-07, -1.379219014552291e-07, 4.138131615150087e-08, -1.2413639005615096e-08, 1.3002039194107056, -0.2393946349620819, 0.08666559308767319, -0.023600885644555092, 0.00741575425490737, -0.0021735180635005236, 0.00065961031941697, -0.00019674647774081677, 5.919349496252835e-05, -1.773263829818461e-05, 5.32359126736992e-06, -1.5965084685376496e-06, 4.790376806340646e-07, -1.4369855705353984e-07, 4.3111477054935676e-08, -1.2933157655936611e-08, 1.3138724565505981, -0.2525891959667206, 0.08867534250020981, -0.02460096962749958, 0.007644148543477058, -0.0022548241540789604, 0.0006818189867772162, -0.00020377678447403014, 6.124192441347986e-05, -1.835706461861264e-05, 5.509323273145128e-06, -1.6524834336451022e-06, 4.957896067026013e-07, -1.487305496539193e-07, 4.462006586436473e-08, -1.3385891506345615e-08, 1.327337384223938, -0.26380014419555664, 0.09059377759695053, -0.02545878291130066, 0.007853078655898571, -0.0023257657885551453, 0.0007017574389465153, -0.00020997437241021544, 6.306722934823483e-05, -1.8909942809841596e-05, 5.674373369402019e-06, -1.7021225175994914e-06, 5.10662573560694e-07, -1.531952591449226e-07, 4.595905522819521e-08, -1.378765102089119e-08, 1.3403992652893066, -0.27355703711509705, 0.09240543097257614, -0.02621259167790413, 0.008044678717851639, -0.002388920169323683, 0.0007198181701824069, -0.00021552943508140743, 6.47130873403512e-05, -1.9406788851483725e-05, 5.82297161599854e-06, -1.7467687030148227e-06, 5.240466975919844e-07, -1.572119003867556e-07, 4.716384793823636e-08, -1.4149118321427068e-08, 1.3529791831970215, -0.2822016477584839, 0.09411066025495529, -0.026886601001024246, 0.008221195079386234, -0.0024459578562527895, 0.0007363148615695536, -0.00022057018941268325, 6.621194916078821e-05, -1.985837661777623e-05, 5.958173005637946e-06, -1.7873679780677776e-06, 5.362210231396602e-07, -1.6086495691070013e-07, 4.82596611561803e-08, -1.447787667530065e-08, 1.3650552034378052, -0.2899673581123352, 0.09571561217308044, -0.027497174218297005, 0.008384631015360355, -0.002498036017641425, 0.0007514941389672458, -0.0002251883124699816, 6.75882984069176e-05, -2.0272553229006007e-05, 6.0822503655799665e-06, -1.8246153103973484e-06, 5.473919486576051e-07, -1.6421668647126353e-07, 4.926511465441763e-08, -1.4779520718377626e-08, 1.376633644104004, -0.2970205843448639, 0.0972282811999321, -0.028055943548679352, 0.008536693640053272, -0.0025459977332502604, 0.0007655507070012391, -0.000229452081839554, 6.886100891279057e-05, -2.0655241314671002e-05, 6.196939011715585e-06, -1.8590376384963747e-06, 5.577165893555502e-07, -1.6731434016037383e-07, 5.0194376655099404e-08, -1.505830482528836e-08);
const float TVK_GELU_D_ROOT_F[3] = float[](-0.7517915368080139, 1.211444988769017e-08, 0.125);
const float TVK_GELU_D_COEF_F[16] = float[](
    0.05393674969673157, 0.006066952832043171, -3.5546243452699855e-05, -2.7834041247842833e-05, -4.507910773554613e-07, 7.40878292049274e-08, 2.1644728231962063e-09, -1.3348687433190065e-10, -5.549392542714138e-12, 1.7354241416307759e-13, 1.0030283793479883e-14, -1.631907043418834e-16, -1.4094368507599216e-17, 9.841757446534417e-20, 1.6208232517935782e-20, -5.700068298550939e-24);
const float TVK_GELU_TANH_D_ROOT_F[3] = float[](-0.7524614334106445, 1.1339627903339533e-08, 0.125);
const float TVK_GELU_TANH_D_COEF_F[16] = float[](
    0.05380001291632652, 0.006054975558072329, -3.08258859149646e-05, -2.7818477974506095e-05, -5.071816531199147e-07, 7.508204902251236e-08, 2.508668606182596e-09, -1.4440607043475495e-10, -6.909981701413992e-12, 2.4580177845380524e-13, 1.44648697316882e-14, -5.086792307869065e-16, -2.901451142071012e-17, 1.3457365196473408e-18, 6.916569565794735e-20, -3.516706271584129e-21);
const float TVK_SILU_D_ROOT_F[3] = float[](-1.2784645557403564, 1.2979282537628478e-08, 0.25);
const float TVK_SILU_D_COEF_F[16] = float[](
    0.05445292592048645, 0.009165549650788307, 0.00029491898021660745, -5.946349847363308e-05, -6.451747140090447e-06, 3.0914893756062156e-08, 4.873790615533835e-08, 2.8336677448947967e-09, -1.5604149916637056e-10, -2.8356116066330372e-11, -7.01578118517121e-13, 1.3983427046490582e-13, 1.2814543771542865e-14, -1.1366771870568884e-16, -8.630236719839304e-17, -4.395289118478598e-18);
const float TVK_MISH_D_ROOT_F[3] = float[](-1.1924312114715576, -3.0439375464652585e-09, 0.25);
const float TVK_MISH_D_COEF_F[16] = float[](
    0.06673698127269745, 0.012795704416930676, 0.0006548097007907927, -7.918680785223842e-05, -1.545031955174636e-05, -8.204797268263064e-07, 6.667514185210166e-08, 1.5103426065365966e-08, 9.694265390436385e-10, -4.001760034455515e-11, -1.331065032500467e-11, -1.031116923615183e-12, 1.40478627062607e-14, 1.0836198373342671e-14, 9.980767094416344e-16, 6.258352148034845e-18);
const float TVK_LGAMMA2_F[14] = float[](0.42278432846069336, 0.32246702909469604, -0.0673523023724556, 0.020580807700753212, -0.007385550998151302, 0.0028905102517455816, -0.0011927539017051458, 0.0005096695385873318, -0.00022315475507639349, 9.945750935003161e-05, -4.4926237023901194e-05, 2.050721195701044e-05, -9.439488167117815e-06, 4.3748668758780695e-06);

float tvk_copysign(float a, float b) {
  return uintBitsToFloat((floatBitsToUint(a) & 0x7fffffffu) | (floatBitsToUint(b) & 0x80000000u));
}
bool tvk_signbit(float a) { return floatBitsToUint(a) >= 0x80000000u; }

// +-0 from the bits (a denormal is not zero even where the device flushes denormals in
// float comparisons), and a zero of the given sign.
bool tvk_is_zero(float x) { return (floatBitsToUint(x) & 0x7fffffffu) == 0u; }
float tvk_signed_zero_f32(bool negative) { return uintBitsToFloat(negative ? 0x80000000u : 0u); }

// a / b for b == 0 without relying on the device's division by zero: +-inf or NaN.
float tvk_div_zero(float a, float b) {
  if (tvk_is_zero(a) || tvk_isnan(a)) return TVK_F32_NAN;
  return (tvk_signbit(a) != tvk_signbit(b)) ? -TVK_F32_INF : TVK_F32_INF;
}

// Error-free transformations (`precise`: no reassociation, no fma contraction).
// a + b = s + e exactly.
void tvk_two_sum(float a, float b, out float s, out float e) {
  precise float ss = a + b;
  precise float bb = ss - a;
  precise float ee = (a - (ss - bb)) + (b - bb);
  s = ss;
  e = ee;
}
// a * b = p + e exactly (Veltkamp/Dekker; |a|, |b| < 2^100 and no underflow).
void tvk_two_prod(float a, float b, out float p, out float e) {
  precise float ca = 4097.0 * a;
  precise float ah = ca - (ca - a);
  precise float al = a - ah;
  precise float cb = 4097.0 * b;
  precise float bh = cb - (cb - b);
  precise float bl = b - bh;
  precise float pp = a * b;
  precise float ee = ((ah * bh - pp) + ah * bl + al * bh) + al * bl;
  p = pp;
  e = ee;
}

// Taylor series sum_{k=1..16} C_k t^k around a tabulated root (see the tables above).
float tvk_root_series(float d, float c[16]) {
  float p = c[15];
  for (int k = 14; k >= 0; --k) p = p * d + c[k];
  return p * d;
}
// t = (x - root) / half_width when |x - root| < half_width, else NaN.
float tvk_root_offset(float x, float roots[3]) {
  precise float d0 = x - roots[0];  // exact (Sterbenz) inside the window
  if (!(abs(d0) < roots[2])) return TVK_F32_NAN;
  precise float d = d0 - roots[1];
  return d / roots[2];
}

// C fmod, exact: the significands are reduced with integer arithmetic (39 bits of the
// exponent difference per step). The result has x's sign and |r| < |y|.
float tvk_fmod(float x, float y) {
  uint ux = floatBitsToUint(x) & 0x7fffffffu;
  uint uy = floatBitsToUint(y) & 0x7fffffffu;
  if (ux >= 0x7f800000u || uy > 0x7f800000u || uy == 0u) return TVK_F32_NAN;
  if (ux < uy) return x;  // |x| < |y|, also y = +-inf
  int ex = int(ux >> 23), ey = int(uy >> 23);
  uint64_t mx = uint64_t(ex == 0 ? ux : ((ux & 0x7fffffu) | 0x800000u));
  uint64_t my = uint64_t(ey == 0 ? uy : ((uy & 0x7fffffu) | 0x800000u));
  int d = max(ex, 1) - max(ey, 1);
  uint64_t r = mx % my;
  while (d > 0) {
    int s = min(d, 39);
    r = (r << uint64_t(s)) % my;
    d -= s;
  }
  float m = tvk_ldexp(float(r), max(ey, 1) - 150);  // exact
  return uintBitsToFloat(floatBitsToUint(m) | (floatBitsToUint(x) & 0x80000000u));
}

// Python-style remainder (the sign of b), as torch.remainder: fmod, then + b when the signs
// differ (sign and zero tests on the bits, so a denormal m counts as non-zero everywhere).
float tvk_remainder(float a, float b) {
  float m = tvk_fmod(a, b);
  if (!tvk_is_zero(m) && !tvk_isnan(m) && tvk_signbit(b) != tvk_signbit(m)) m += b;
  return m;
}

// ---- exact quotients for torch.div(rounding_mode=...) ----
// PyTorch's CPU computes trunc(a / b) and c10::div_floor_floating from correctly rounded
// divisions. Vulkan only bounds OpFDiv to 2.5 ULP, and NVIDIA's float32 division is not
// correctly rounded (measured: a / a = 0.99999994 for some a, so trunc(a / a) gave 0), nor need
// fma be fused. tvk_div_rn therefore uses the device's division only for an estimate and
// decides the rounding with exact integer arithmetic on the significands.

// |x| = m * 2^e for finite nonzero x, m a 24-bit integer with its leading bit set (denormals
// normalized from their bits: exact even where the device flushes denormals).
uint tvk_split_f32(float x, out int e) {
  uint u = floatBitsToUint(x) & 0x7fffffffu;
  uint biased = u >> 23;
  if (biased != 0u) {
    e = int(biased) - 150;
    return (u & 0x7fffffu) | 0x800000u;
  }
  int shift = 23 - findMSB(u);
  e = -149 - shift;
  return u << uint(shift);
}

// a / b rounded to nearest even, for finite a and finite nonzero b, exact for every quotient
// of magnitude >= 2^-126 (below that: the right sign, magnitude < 2^-125 or zero; callers only
// truncate such quotients).
//   With a = ma 2^ea, b = mb 2^eb: a / b = (N / mb) 2^(ea - eb - s), N = ma 2^s, s = 23 when
//   ma >= mb else 24, so that N / mb lies in [2^23, 2^24) and its integer part Q has 24 bits.
//   Q is estimated from float(ma) / float(mb) (exact operands; a quotient within a few ULP
//   gives Q within +-3) and then fixed with the exact residual R = N - Q mb: R is small, so the
//   wrapping 64-bit difference N - Q mb is R exactly. Steps move Q until 0 <= R < mb (8 allowed
//   each way: room for a division 8 ULP off). Rounding to nearest even compares 2R with mb.
//   Q (now <= 2^24) times 2^(ea - eb - s) is then exact in the normal range.
float tvk_div_rn(float a, float b) {
  int ea, eb;
  uint ma = tvk_split_f32(a, ea);
  uint mb = tvk_split_f32(b, eb);
  int s = ma >= mb ? 23 : 24;
  uint64_t n = uint64_t(ma) << uint64_t(s);
  uint64_t q = uint64_t((float(ma) / float(mb)) * float(1u << uint(s)));
  int64_t r = int64_t(n - q * uint64_t(mb));
  for (int i = 0; i < 8 && r < 0l; ++i) {
    q -= 1ul;
    r += int64_t(mb);
  }
  for (int i = 0; i < 8 && r >= int64_t(mb); ++i) {
    q += 1ul;
    r -= int64_t(mb);
  }
  if (2l * r > int64_t(mb) || (2l * r == int64_t(mb) && (q & 1ul) == 1ul)) q += 1ul;
  float mag = tvk_ldexp(float(q), ea - eb - s);  // q <= 2^24: exact conversion
  return uintBitsToFloat(floatBitsToUint(mag) | ((floatBitsToUint(a) ^ floatBitsToUint(b)) & 0x80000000u));
}

// x rounded to the precision of storage dtype `dt` (float16 / bfloat16; others unchanged).
float tvk_round_to_dtype(float x, int dt) {
  if (dt == DT_FLOAT16) return tvk_half_to_float(tvk_float_to_half(x));
  if (dt == DT_BFLOAT16) return tvk_bf16_to_float(tvk_float_to_bf16(x));
  return x;
}

// torch.div(rounding_mode="floor"): c10 div_floor_floating with the exact quotient:
//   m = fmod(a, b); q = (a - m) / b; q -= 1 if m != 0 and sign(m) != sign(b);
//   q != 0 ? floor(q) (+1 when q - floor(q) > 0.5) : copysign(0, a / b).
// a - m is rounded as on the CPU; dividing it with tvk_div_rn makes q the CPU's q bit for bit.
float tvk_div_floor(float a, float b) {
  if (tvk_isnan(a) || tvk_isnan(b)) return TVK_F32_NAN;
  if (tvk_is_zero(b)) return tvk_div_zero(a, b);
  bool negative = tvk_signbit(a) != tvk_signbit(b);
  float m = tvk_fmod(a, b);  // NaN for infinite a; a for infinite b
  if (tvk_isnan(m)) return TVK_F32_NAN;
  precise float num = a - m;
  float q = (tvk_is_zero(num) || tvk_isinf(b)) ? tvk_signed_zero_f32(tvk_signbit(num) != tvk_signbit(b))
                                               : tvk_div_rn(num, b);
  if (!tvk_is_zero(m) && tvk_signbit(m) != tvk_signbit(b)) q -= 1.0;
  if (tvk_is_zero(q)) return tvk_signed_zero_f32(negative);
  if (tvk_isinf(q)) return q;
  float f = floor(q);
  if (q - f > 0.5) f += 1.0;
  return f;
}

// torch.div(rounding_mode="trunc"): trunc of the correctly rounded quotient, with IEEE special
// cases decided from the bits.
float tvk_div_trunc(float a, float b) {
  if (tvk_isnan(a) || tvk_isnan(b)) return TVK_F32_NAN;
  if (tvk_is_zero(b)) return tvk_div_zero(a, b);
  bool negative = tvk_signbit(a) != tvk_signbit(b);
  if (tvk_isinf(a)) return tvk_isinf(b) ? TVK_F32_NAN : (negative ? -TVK_F32_INF : TVK_F32_INF);
  if (tvk_isinf(b) || tvk_is_zero(a)) return tvk_signed_zero_f32(negative);
  float t = trunc(tvk_div_rn(a, b));
  return tvk_is_zero(t) ? tvk_signed_zero_f32(negative) : t;
}

// The rounding modes for output dtype `dt`. PyTorch computes them for float16 / bfloat16 in
// that dtype's scalar arithmetic (CPU and CUDA alike: c10::Half operators round each result):
//   trunc: trunc(half(a / b));
//   floor: num = half(a - fmod(a, b)), q = half(num / b), q = half(q - 1) when the signs of
//          fmod and b differ, then floor (+1, rounded) as in div_floor_floating.
// Each rounding here is of an exactly computed (or correctly rounded) float32 value, as there.
float tvk_div_trunc(float a, float b, int dt) {
  if (dt != DT_FLOAT16 && dt != DT_BFLOAT16) return tvk_div_trunc(a, b);
  if (tvk_isnan(a) || tvk_isnan(b) || tvk_is_zero(b) || tvk_isinf(a) || tvk_isinf(b) || tvk_is_zero(a))
    return tvk_div_trunc(a, b);
  bool negative = tvk_signbit(a) != tvk_signbit(b);
  float t = trunc(tvk_round_to_dtype(tvk_div_rn(a, b), dt));
  return tvk_is_zero(t) ? tvk_signed_zero_f32(negative) : t;
}

float tvk_div_floor(float a, float b, int dt) {
  if (dt != DT_FLOAT16 && dt != DT_BFLOAT16) return tvk_div_floor(a, b);
  if (tvk_isnan(a) || tvk_isnan(b)) return TVK_F32_NAN;
  if (tvk_is_zero(b)) return tvk_div_zero(a, b);
  bool negative = tvk_signbit(a) != tvk_signbit(b);
  float m = tvk_fmod(a, b);
  if (tvk_isnan(m)) return TVK_F32_NAN;
  precise float diff = a - m;
  float num = tvk_round_to_dtype(diff, dt);
  float q = (tvk_is_zero(num) || tvk_isinf(b)) ? tvk_signed_zero_f32(tvk_signbit(num) != tvk_signbit(b))
                                               : tvk_round_to_dtype(tvk_div_rn(num, b), dt);
  if (!tvk_is_zero(m) && tvk_signbit(m) != tvk_signbit(b)) q = tvk_round_to_dtype(q - 1.0, dt);
  if (tvk_is_zero(q)) return tvk_signed_zero_f32(negative);
  if (tvk_isinf(q)) return q;
  float f = floor(q);  // q is a 16-bit value: so is floor(q)
  if (q - f > 0.5) f = tvk_round_to_dtype(f + 1.0, dt);
  return f;
}

// lerp(a, b, w) = a + w * (b - a), evaluated with exact intermediate sums and products so
// that it stays accurate when the result cancels; torch's formula for non-finite cases.
float tvk_lerp(float a, float b, float w) {
  float r = abs(w) < 0.5 ? a + w * (b - a) : b - (b - a) * (1.0 - w);
  if (!tvk_isfinite(r) || !(abs(a) < 1e30 && abs(b) < 1e30 && abs(w) < 1e30)) return r;
  float dh, dl, ph, pl, sh, sl;
  tvk_two_sum(b, -a, dh, dl);
  tvk_two_prod(w, dh, ph, pl);
  tvk_two_sum(a, ph, sh, sl);
  precise float t = sl + (pl + w * dl);
  precise float res = sh + t;
  return res;
}

float tvk_hypot(float a, float b) {
  if (tvk_isinf(a) || tvk_isinf(b)) return TVK_F32_INF;
  if (tvk_isnan(a) || tvk_isnan(b)) return TVK_F32_NAN;
  float x = max(abs(a), abs(b)), y = min(abs(a), abs(b));
  if (x == 0.0) return 0.0;
  float r = y / x;
  return x * sqrt(1.0 + r * r);
}

// ---- trigonometric ----
float tvk_tan(float x) {
  if (!tvk_isfinite(x)) return TVK_F32_NAN;
  uint q;
  float r = tvk_reduce_pio2(abs(x), q);
  float z = r * r;
  float s = tvk_sin_poly(r, z), c = tvk_cos_poly(z);
  float t = (q & 1u) == 0u ? s / c : -c / s;
  return tvk_signbit(x) ? -t : t;
}

// atan: Cephes atanf (reduction by tan(3pi/8), tan(pi/8)).
float tvk_atan(float x) {
  if (tvk_isnan(x)) return x;
  float ax = abs(x), y, z;
  if (ax > 2.414213562373095) {
    y = 1.5707963267948966;
    z = -1.0 / ax;
  } else if (ax > 0.4142135623730950) {
    y = 0.7853981633974483;
    z = (ax - 1.0) / (ax + 1.0);
  } else {
    y = 0.0;
    z = ax;
  }
  float zz = z * z;
  y += (((8.05374449538e-2 * zz - 1.38776856032e-1) * zz + 1.99777106478e-1) * zz - 3.33329491539e-1) * zz * z + z;
  return tvk_copysign(y, x);
}

// atan2 with the C99 special cases (signed zeros, infinities).
float tvk_atan2(float y, float x) {
  if (tvk_isnan(x) || tvk_isnan(y)) return TVK_F32_NAN;
  float ax = abs(x), ay = abs(y), t;
  bool xneg = tvk_signbit(x);
  if (tvk_isinf(ax) && tvk_isinf(ay)) {
    t = xneg ? 2.35619449019234492 : 0.785398163397448310;
  } else if (ay <= ax) {  // also ax = ay = 0
    float a = ax == 0.0 ? 0.0 : tvk_atan(ay / ax);
    t = xneg ? 3.14159265358979324 - a : a;
  } else {
    float a = tvk_atan(ax / ay);
    t = xneg ? 1.57079632679489662 + a : 1.57079632679489662 - a;
  }
  return tvk_copysign(t, y);
}

float tvk_asin(float x) {
  if (tvk_isnan(x) || abs(x) > 1.0) return TVK_F32_NAN;
  return tvk_atan2(x, sqrt((1.0 - x) * (1.0 + x)));
}

float tvk_acos(float x) {
  if (tvk_isnan(x) || abs(x) > 1.0) return TVK_F32_NAN;
  return 2.0 * tvk_atan2(sqrt(1.0 - x), sqrt(1.0 + x));
}

// ---- hyperbolic ----
float tvk_sinh(float x) {
  if (tvk_isnan(x)) return x;
  float ax = abs(x), r;
  if (ax > 88.0) {
    float h = tvk_exp(0.5 * ax);
    r = (0.5 * h) * h;
  } else {
    float e = tvk_expm1(ax);
    r = 0.5 * (e + e / (e + 1.0));
  }
  return tvk_copysign(r, x);
}

float tvk_cosh(float x) {
  if (tvk_isnan(x)) return x;
  float ax = abs(x);
  if (ax > 88.0) {
    float h = tvk_exp(0.5 * ax);
    return (0.5 * h) * h;
  }
  float e = tvk_exp(ax);
  return 0.5 * (e + 1.0 / e);
}

float tvk_asinh(float x) {
  if (!tvk_isfinite(x)) return x;
  float ax = abs(x), r;
  if (ax > 4096.0) {
    r = tvk_log(ax) + 0.693147180559945309;
  } else if (ax > 2.0) {
    r = tvk_log(2.0 * ax + 1.0 / (sqrt(ax * ax + 1.0) + ax));
  } else {
    float z = ax * ax;
    r = tvk_log1p(ax + z / (1.0 + sqrt(1.0 + z)));
  }
  return tvk_copysign(r, x);
}

float tvk_acosh(float x) {
  if (tvk_isnan(x) || x < 1.0) return TVK_F32_NAN;
  if (tvk_isinf(x)) return x;
  if (x > 4096.0) return tvk_log(x) + 0.693147180559945309;
  if (x > 2.0) return tvk_log(2.0 * x - 1.0 / (x + sqrt(x * x - 1.0)));
  float t = x - 1.0;  // exact
  return tvk_log1p(t + sqrt(2.0 * t + t * t));
}

float tvk_atanh(float x) {
  float ax = abs(x);
  if (tvk_isnan(x) || ax > 1.0) return TVK_F32_NAN;
  if (ax == 1.0) return tvk_copysign(TVK_F32_INF, x);
  float r = ax < 0.5 ? 0.5 * tvk_log1p(2.0 * ax + 2.0 * ax * ax / (1.0 - ax))
                     : 0.5 * tvk_log1p(2.0 * ax / (1.0 - ax));
  return tvk_copysign(r, x);
}

// ---- error function inverse ----
// PyTorch's rational first guess (calc_erfinv), then Newton steps on erf (|y| <= 1/2) or on
// erfc with the exact 1 - |y| (tails), which keeps full relative accuracy up to |y| -> 1.
float tvk_erfinv(float y) {
  float ay = abs(y);
  if (tvk_isnan(y) || ay > 1.0) return TVK_F32_NAN;
  if (ay == 1.0) return tvk_copysign(TVK_F32_INF, y);
  if (ay == 0.0) return y;
  float x;
  if (ay <= 0.7) {
    float z = ay * ay;
    float num = ((-0.140543331 * z + 0.914624893) * z - 1.645349621) * z + 0.886226899;
    float dem = (((0.012229801 * z - 0.329097515) * z + 1.442710462) * z - 2.118377725) * z + 1.0;
    x = ay * num / dem;
  } else {
    float z = sqrt(-tvk_log((1.0 - ay) * 0.5));
    float num = ((1.641345311 * z + 3.429567803) * z - 1.624906493) * z - 1.970840454;
    float dem = (1.637067800 * z + 3.543889200) * z + 1.0;
    x = num / dem;
  }
  float c = 1.0 - ay;  // exact for ay >= 1/2
  for (int i = 0; i < 2; ++i) {
    float e = ay <= 0.5 ? tvk_erf(x) - ay : c - tvk_erfc(x);
    x -= e / (1.12837916709551257 * tvk_exp(-x * x));
  }
  return tvk_copysign(x, y);
}

// ---- gamma function family ----
// lgamma(2 + p) for |p| <= 1/2 (Taylor series; p must be exact for accuracy near x = 1, 2).
float tvk_lgamma2(float p) {
  float s = TVK_LGAMMA2_F[13];
  for (int k = 12; k >= 0; --k) s = s * p + TVK_LGAMMA2_F[k];
  return s * p;
}

// |sin(pi x)| for finite x (exact reduction of x mod 1).
float tvk_abs_sinpi(float x) {
  float g = abs(x);
  g -= floor(g);                // exact
  if (g > 0.5) g = 1.0 - g;     // exact (Sterbenz)
  return tvk_sin(3.14159265358979324 * g);
}

float tvk_lgamma_pos(float x) {  // x > 0, finite
  if (x < 0.5) return tvk_lgamma2(x) - tvk_log(x) - tvk_log1p(x);
  if (x < 1.5) return tvk_lgamma2(x - 1.0) - tvk_log1p(x - 1.0);
  if (x <= 2.5) return tvk_lgamma2(x - 2.0);
  if (x < 8.0) {
    float n = floor(x - 1.5);  // x - n in [1.5, 2.5): exact
    float prod = 1.0;
    for (float k = 1.0; k <= n; k += 1.0) prod *= x - k;
    precise float p = (x - n) - 2.0;  // exact
    return tvk_lgamma2(p) + tvk_log(prod);
  }
  // Stirling: (x - 1/2)(log x - 1) + (log(2 pi) - 1) / 2 + 1/(12x) - 1/(360x^3) + ...
  float z = 1.0 / (x * x);
  float series = (((-5.95238095238095238e-4 * z + 7.93650793650793651e-4) * z - 2.77777777777777778e-3) * z +
                  8.33333333333333333e-2) / x;
  return (x - 0.5) * (tvk_log(x) - 1.0) + (0.418938533204672742 + series);
}

// lgamma: positive arguments directly; negative ones by reflection,
// lgamma(x) = log(pi) - log|x| - log|sin(pi x)| - lgamma(-x), except near the zeros of
// lgamma in (-10, -2) where that cancels: Taylor series there (TVK_LGAMMA_*_F).
float tvk_lgamma(float x) {
  if (tvk_isnan(x)) return x;
  if (tvk_isinf(x)) return TVK_F32_INF;
  if (x > 0.0) return tvk_lgamma_pos(x);
  if (x == floor(x)) return TVK_F32_INF;  // poles (and -0)
  if (x > -10.0 && x < -2.0) {
    int m = int(floor(-x));  // x in (-m-1, -m)
    int i = 2 * (m - 2) + (x > -float(m) - 0.5 ? 0 : 1);
    float roots[3] = float[](TVK_LGAMMA_ROOT_F[3 * i], TVK_LGAMMA_ROOT_F[3 * i + 1], TVK_LGAMMA_ROOT_F[3 * i + 2]);
    float d = tvk_root_offset(x, roots);
    if (!tvk_isnan(d)) {
      float c[16];
      for (int k = 0; k < 16; ++k) c[k] = TVK_LGAMMA_COEF_F[16 * i + k];
      return tvk_root_series(d, c);
    }
  }
  float ax = -x;
  return ((1.14472988584940017 - tvk_log(ax)) - tvk_log(tvk_abs_sinpi(ax))) - tvk_lgamma_pos(ax);
}

// digamma for x > 0: recurrence up to x >= 10, then the asymptotic series; Taylor series
// around the positive zero (1.4616...).
float tvk_digamma_pos(float x) {
  float roots[3] = float[](TVK_DIGAMMA_ROOT_F[0], TVK_DIGAMMA_ROOT_F[1], TVK_DIGAMMA_ROOT_F[2]);
  float d = tvk_root_offset(x, roots);
  if (!tvk_isnan(d)) {
    float c[16];
    for (int k = 0; k < 16; ++k) c[k] = TVK_DIGAMMA_COEF_F[k];
    return tvk_root_series(d, c);
  }
  float acc = 0.0, y = x;
  for (float k = 1.0; y < 10.0; k += 1.0) {
    acc += 1.0 / y;
    y = x + k;
  }
  float z = 1.0 / (y * y);
  float s = ((((7.57575757575757576e-3 * z - 4.16666666666666667e-3) * z + 3.96825396825396825e-3) * z -
              8.33333333333333333e-3) * z + 8.33333333333333333e-2) * z;
  return ((tvk_log(y) - 0.5 / y) - s) - acc;
}

// digamma (torch semantics: +-0 -> -+inf, negative integers -> NaN); negative arguments by
// psi(x) = psi(-x) - 1/x - pi cot(pi x), with Taylor series around its zeros in (-12, 0).
float tvk_digamma(float x) {
  if (tvk_isnan(x)) return x;
  if (x == 0.0) return tvk_signbit(x) ? TVK_F32_INF : -TVK_F32_INF;
  if (x > 0.0) return tvk_isinf(x) ? x : tvk_digamma_pos(x);
  if (x == floor(x)) return TVK_F32_NAN;  // negative integers and -inf
  if (x > -12.0) {
    int i = 1 + int(floor(-x));
    float roots[3] = float[](TVK_DIGAMMA_ROOT_F[3 * i], TVK_DIGAMMA_ROOT_F[3 * i + 1], TVK_DIGAMMA_ROOT_F[3 * i + 2]);
    float d = tvk_root_offset(x, roots);
    if (!tvk_isnan(d)) {
      float c[16];
      for (int k = 0; k < 16; ++k) c[k] = TVK_DIGAMMA_COEF_F[16 * i + k];
      return tvk_root_series(d, c);
    }
  }
  float f = x - roundEven(x);  // exact, in [-1/2, 1/2]
  float pf = 3.14159265358979324 * f;
  float cot = tvk_cos(pf) / tvk_sin(pf);
  return (tvk_digamma_pos(-x) - 1.0 / x) - 3.14159265358979324 * cot;
}

// ---- activations ----
// 2 sqrt(2/pi) (x + 0.044715 x^3) = v (the tanh-gelu argument, doubled) as vh + vl, so that
// exp(v) keeps full relative accuracy for large |v|. |x| <= 10.
void tvk_gelu_tanh_v(float x, out float vh, out float vl) {
  const float C1H = 1.5957691669464111, C1L = -4.534068054340423e-08;  // 2 sqrt(2/pi)
  const float C3H = 0.07135481387376785, C3L = 2.3988324659995897e-09;  // 2 sqrt(2/pi) 0.044715
  float x2h, x2l, ph, pl, th, tl, wh, wl;
  tvk_square_split(x, x2h, x2l);
  tvk_two_prod(C3H, x2h, ph, pl);
  precise float plc = pl + (C3H * x2l + C3L * x2h);
  tvk_two_sum(C1H, ph, th, tl);
  precise float tlc = tl + (C1L + plc);
  tvk_two_prod(x, th, wh, wl);
  precise float wlc = wl + x * tlc;
  tvk_two_sum(wh, wlc, vh, vl);
}

// sigmoid(v) and 1 - sigmoid(v) for v = vh + vl.
void tvk_sigmoid2(float vh, float vl, out float s, out float t) {
  float e = tvk_exp(-abs(vh)) * (1.0 - (vh < 0.0 ? -vl : vl));  // exp(-|v|)
  float r = 1.0 / (1.0 + e);
  s = vh >= 0.0 ? r : e * r;
  t = vh >= 0.0 ? e * r : r;
}

// gelu(x, approximate="tanh") = x/2 (1 + tanh(u)) = x sigmoid(2u).
float tvk_gelu_tanh(float x) {
  if (tvk_isnan(x)) return x;
  float vh, vl, s, t;
  if (abs(x) > 10.0) {  // |result| < 2e-37 below -10, = x above 10
    vh = 1.5957691216057308 * x * (1.0 + 0.044715 * x * x);
    vl = 0.0;
  } else {
    tvk_gelu_tanh_v(x, vh, vl);
  }
  tvk_sigmoid2(vh, vl, s, t);
  return x * s;
}

// d/dx gelu_tanh = s + 2 sqrt(2/pi) x s (1 - s) (1 + 3 0.044715 x^2), s = sigmoid(2u).
float tvk_gelu_tanh_grad(float x) {
  if (tvk_isnan(x)) return x;
  float d = tvk_root_offset(x, TVK_GELU_TANH_D_ROOT_F);
  if (!tvk_isnan(d)) return tvk_root_series(d, TVK_GELU_TANH_D_COEF_F);
  float vh, vl, s, t;
  if (abs(x) > 10.0) {
    vh = 1.5957691216057308 * x * (1.0 + 0.044715 * x * x);
    vl = 0.0;
  } else {
    tvk_gelu_tanh_v(x, vh, vl);
  }
  tvk_sigmoid2(vh, vl, s, t);
  return s + (s * x) * t * (1.5957691216057308 * (1.0 + 0.134145 * x * x));
}

// d/dx gelu (erf form) = Phi(x) + x phi(x); exp(-x^2/2) from an exact split of x^2.
float tvk_gelu_grad(float x) {
  if (tvk_isnan(x)) return x;
  float d = tvk_root_offset(x, TVK_GELU_D_ROOT_F);
  if (!tvk_isnan(d)) return tvk_root_series(d, TVK_GELU_D_COEF_F);
  if (abs(x) > 20.0) return tvk_isinf(x) ? TVK_F32_NAN : (x > 0.0 ? 1.0 : 0.0);  // inf * 0 = NaN, as torch
  float hi, lo;
  tvk_square_split(x, hi, lo);
  float pdf = 0.398942280401432678 * tvk_exp(-0.5 * hi) * tvk_exp(-0.5 * lo);
  float z = 0.707106781186547524 * abs(x);
  float cdf = x >= 0.0 ? 1.0 - 0.5 * tvk_erfc_pos(z) : 0.5 * tvk_erfc_core(z, 0.5 * hi, 0.5 * lo);
  return cdf + x * pdf;
}

// d/dx silu = s (1 + x (1 - s)), s = sigmoid(x).
float tvk_silu_grad(float x) {
  if (tvk_isnan(x)) return x;
  float d = tvk_root_offset(x, TVK_SILU_D_ROOT_F);
  if (!tvk_isnan(d)) return tvk_root_series(d, TVK_SILU_D_COEF_F);
  float s, t;
  tvk_sigmoid2(x, 0.0, s, t);
  return s * (1.0 + x * t);
}

// tanh(softplus(x)) and 1 - tanh(softplus(x)) without cancellation.
void tvk_tanh_softplus(float x, out float t, out float omt) {
  if (x <= 0.0) {
    float e = tvk_exp(x);
    float n = e * (e + 2.0);
    t = n / (n + 2.0);
    omt = 2.0 / (n + 2.0);
  } else {
    float e = tvk_exp(-x);
    float den = 1.0 + 2.0 * e * (1.0 + e);
    t = (1.0 + 2.0 * e) / den;
    omt = 2.0 * e * e / den;
  }
}

float tvk_mish(float x) {
  if (tvk_isnan(x)) return x;
  float t, omt;
  tvk_tanh_softplus(x, t, omt);
  return x * t;
}

// d/dx mish = t + x sigmoid(x) (1 - t^2), t = tanh(softplus(x)).
float tvk_mish_grad(float x) {
  if (tvk_isnan(x)) return x;
  float d = tvk_root_offset(x, TVK_MISH_D_ROOT_F);
  if (!tvk_isnan(d)) return tvk_root_series(d, TVK_MISH_D_COEF_F);
  float t, omt, s, u;
  tvk_tanh_softplus(x, t, omt);
  tvk_sigmoid2(x, 0.0, s, u);
  return t + x * s * (omt * (1.0 + t));
}

// log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|)).
float tvk_log_sigmoid(float x) {
  return ((x < 0.0 || tvk_isnan(x)) ? x : 0.0) - tvk_log1p(tvk_exp(-abs(x)));
}

// d/dx log(sigmoid(x)) = 1 - sigmoid(x) = sigmoid(-x).
float tvk_log_sigmoid_grad(float x) {
  float z = tvk_exp(-abs(x));
  return x < 0.0 ? 1.0 / (1.0 + z) : z / (1.0 + z);
}

// Special functions shared with float64 (shaders/special.glsl), float32 instance.
#define TVK_R float
#define TVK_L(x) float(x)
#define TVK_R_INF TVK_F32_INF
#define TVK_R_NAN TVK_F32_NAN
#include "special.glsl"
#undef TVK_R
#undef TVK_L
#undef TVK_R_INF
#undef TVK_R_NAN

#include "math_f64.glsl"

#endif  // TVK_MATH_GLSL
