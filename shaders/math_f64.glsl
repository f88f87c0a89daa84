// float64 versions of the special functions in math.glsl (included from there, only when
// TVK_FLOAT64): the same contracts, double-precision algorithms (Taylor / atanh series, a
// continued fraction for erfc, Cody-Waite argument reduction).
#ifndef TVK_MATH_F64_GLSL
#define TVK_MATH_F64_GLSL

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

// trunc and roundEven built from floor: lavapipe (Mesa 22.3, LLVM) miscompiles the double
// forms of trunc / roundEven on some x86 CPUs (seen on AVX2 AMD EPYC: trunc(72756212.53)
// returned its input, roundEven(3.5) gave 3). floor is correct everywhere, and x - floor(x)
// is exact, so these are exact too. Signed zeros and NaN behave like the built-ins.
double tvk_trunc(double x) { return x < 0.0lf ? -floor(-x) : floor(x); }

double tvk_round_even(double x) {
  if (x == 0.0lf || !tvk_isfinite(x)) return x;
  double r = floor(x);
  double d = x - r;  // exact, in [0, 1)
  if (d > 0.5lf || (d == 0.5lf && r - 2.0lf * floor(r * 0.5lf) != 0.0lf)) r += 1.0lf;
  return r == 0.0lf ? (x < 0.0lf ? -0.0lf : 0.0lf) : r;
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
  double k = tvk_round_even(x * 1.4426950408889634lf);
  // ln2 = 0.6931471803691238 (32 bits, k * hi exact) + 1.9082149292705877e-10
  precise double r = (x - k * 0.6931471803691238lf) - k * 1.9082149292705877e-10lf;
  return tvk_ldexp(tvk_exp_poly(r), int(k));
}

double tvk_exp2(double x) {
  if (tvk_isnan(x)) return x;
  if (x >= 1024.0lf) return TVK_F64_INF;
  if (x < -1080.0lf) return 0.0lf;
  double k = tvk_round_even(x);
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

// sin/cos: reduction by pi/2 (tvk_reduce_pio2 below: Cody-Waite in 26-bit parts up to 1e8,
// Payne-Hanek beyond), Taylor polynomials on [-pi/4, pi/4].
double tvk_reduce_pio2(double ax, out uint q);
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
// ------------------------------ float64: more special functions ------------------------------
// Same algorithms as the float32 versions above, with float64 tables (TVK_*_D: narrower
// windows), plus:
//   TVK_PIO2_PARTS     pi/2 in four 26-bit parts and a remainder (exact k * part for k < 2^26)
//   TVK_TWO_OVER_PI_D  2/pi in 32-bit words (Payne-Hanek reduction of any finite double)
const double TVK_LGAMMA_ROOT_D[48] = double[](-2.4570247382208006lf, -3.7075610815513266e-17lf, 0.045702473822080064lf, -2.7476826467274127lf, 9.055340329338315e-17lf, 0.025231735327258743lf, -3.14358088834998lf, -2.1818179852331714e-16lf, 0.014358088834998006lf, -3.955294284858598lf, -1.999428391746348e-17lf, 0.004470571514140207lf, -4.039361839740537lf, 2.1143995503980602e-16lf, 0.003936183974053688lf, -4.991544640560048lf, 1.5174411760571722e-16lf, 0.0008455359439952278lf, -5.0082181683225935lf, -4.3926353491015815e-17lf, 0.0008218168322593522lf, -5.998607480080875lf, -3.311862478893795e-16lf, 0.00013925199191243707lf, -6.001385294453155lf, 6.415847287933042e-17lf, 0.00013852944531550973lf, -6.999801507890638lf, 1.0550130037400023e-17lf, 1.9849210936230213e-05lf, -7.000198333407325lf, 2.504354173632409e-16lf, 1.983334073247516e-05lf, -7.999975197095821lf, -5.261737128572354e-17lf, 2.4802904179335845e-06lf, -8.000024800270682lf, -4.354586297860107e-16lf, 2.48002706819597e-06lf, -8.999997244250977lf, -2.2185620509727132e-16lf, 2.755749022531806e-07lf, -9.000002755714823lf, -9.491348611623208e-17lf, 2.7557148226503465e-07lf, -9.99999972442663lf, 4.883037618642443e-16lf, 2.7557337083353165e-08lf);
const double TVK_LGAMMA_COEF_D[256] = double[](
    0.06926682690786408lf, 0.010147653256028113lf, 0.00013472113769512085lf, 3.805082616364165e-05lf, 1.1565317965641023e-06lf, 2.2621765494553696e-07lf, 1.0011315792887675e-08lf, 1.5651050961978505e-09lf, 8.755139282563082e-11lf, 1.1784974194151235e-11lf, 7.725195239236689e-13lf, 9.387087798492264e-14lf, 6.873594695267807e-15lf, 7.782750945643529e-16lf, 6.163972754397705e-17lf, 6.646674921625256e-18lf, -0.0483023772070405lf, 0.006095953105412218lf, -0.00032279907945613446lf, 2.53835319083164e-05lf, -1.9918154343304792e-06lf, 1.6692596724501527e-07lf, -1.4278770318092814e-08lf, 1.2502139256904706e-09lf, -1.1110486210177693e-10lf, 1.0000192702408662e-11lf, -9.090850520702903e-13lf, 8.333351550620399e-14lf, -7.692302036184842e-15lf, 7.14285891872218e-16lf, -6.666666107980855e-17lf, 6.250000176876803e-18lf, 0.11173299122515803lf, 0.005325252200065322lf, 0.0003323148198371526lf, 2.502771904744858e-05lf, 1.999794192319952e-06lf, 1.6667107601181384e-07lf, 1.4285667971040436e-08lf, 1.2500008595504184e-09lf, 1.1111110033788557e-10lf, 1.0000000185259993e-11lf, 9.090909065278359e-13lf, 8.333333337570721e-14lf, 7.692307691686592e-15lf, 7.142857142957874e-16lf, 6.666666666651384e-17lf, 6.250000000002464e-18lf, -0.0926528666460726lf, 0.005030772078511088lf, -0.00033332537351594917lf, 2.5000219883617896e-05lf, -1.9999998355250785e-06lf, 1.6666666948724245e-07lf, -1.4285714282432869e-08lf, 1.2500000000429772e-09lf, -1.1111111111104496e-10lf, 1.0000000000000717e-11lf, -9.090909090909083e-13lf, 8.33333333333334e-14lf, -7.692307692307698e-15lf, 7.142857142857148e-16lf, -6.666666666666672e-17lf, 6.250000000000005e-18lf, 0.10545226152121824lf, 0.005023864203184076lf, 0.00033332762434816157lf, 2.5000131598946222e-05lf, 1.9999999234039057e-06lf, 1.66666667968727e-07lf, 1.4285714284535444e-08lf, 1.2500000000152812e-09lf, 1.1111111111109278e-10lf, 1.00000000000002e-11lf, 9.090909090909093e-13lf, 8.333333333333339e-14lf, 7.692307692307698e-15lf, 7.142857142857148e-16lf, 6.666666666666672e-17lf, 6.250000000000005e-18lf, -0.09853519211811228lf, 0.005001111264428425lf, -0.0003333333255804393lf, 2.500000027653486e-05lf, -1.999999999992585e-06lf, 1.6666666666679082e-07lf, -1.4285714285714286e-08lf, 1.2500000000000006e-09lf, -1.1111111111111117e-10lf, 1.0000000000000006e-11lf, -9.090909090909096e-13lf, 8.333333333333339e-14lf, -7.692307692307698e-15lf, 7.142857142857148e-16lf, -6.666666666666672e-17lf, 6.250000000000005e-18lf, 0.10138111973844864lf, 0.005001049968124702lf, 0.000333333320433078lf, 2.5000000246779523e-05lf, 1.9999999999937094e-06lf, 1.6666666666677134e-07lf, 1.4285714285714288e-08lf, 1.2500000000000006e-09lf, 1.1111111111111117e-10lf, 1.0000000000000006e-11lf, 9.090909090909096e-13lf, 8.333333333333339e-14lf, 7.692307692307698e-15lf, 7.142857142857148e-16lf, 6.666666666666672e-17lf, 6.250000000000005e-18lf, -0.09973860288521681lf, 0.00500003040820742lf, -0.00033333333333578817lf, 2.500000000020338e-05lf, -2.0000000000000003e-06lf, 1.6666666666666673e-07lf, -1.4285714285714291e-08lf, 1.2500000000000006e-09lf, -1.1111111111111117e-10lf, 1.0000000000000006e-11lf, -9.090909090909096e-13lf, 8.333333333333339e-14lf, -7.692307692307698e-15lf, 7.142857142857148e-16lf, -6.666666666666672e-17lf, 6.250000000000005e-18lf, 0.1002588338980654lf, 0.005000030094089629lf, 0.00033333333331494027lf, 2.5000000000199193e-05lf, 2.0000000000000003e-06lf, 1.6666666666666673e-07lf, 1.4285714285714291e-08lf, 1.2500000000000006e-09lf, 1.1111111111111117e-10lf, 1.0000000000000006e-11lf, 9.090909090909096e-13lf, 8.333333333333339e-14lf, 7.692307692307698e-15lf, 7.142857142857148e-16lf, 6.666666666666672e-17lf, 6.250000000000005e-18lf, -0.09995997866989681lf, 0.00500000062186146lf, -0.0003333333333333531lf, 2.500000000000009e-05lf, -2.0000000000000008e-06lf, 1.6666666666666673e-07lf, -1.4285714285714291e-08lf, 1.2500000000000006e-09lf, -1.1111111111111117e-10lf, 1.0000000000000006e-11lf, -9.090909090909096e-13lf, 8.333333333333339e-14lf, -7.692307692307698e-15lf, 7.142857142857148e-16lf, -6.666666666666672e-17lf, 6.250000000000005e-18lf, 0.1000399644868577lf, 0.005000000620868835lf, 0.00033333333333330703lf, 2.500000000000009e-05lf, 2.0000000000000008e-06lf, 1.6666666666666673e-07lf, 1.4285714285714291e-08lf, 1.2500000000000006e-09lf, 1.1111111111111117e-10lf, 1.0000000000000006e-11lf, 9.090909090909096e-13lf, 8.333333333333339e-14lf, 7.692307692307698e-15lf, 7.142857142857148e-16lf, 6.666666666666672e-17lf, 6.250000000000005e-18lf, -0.09999469039229572lf, 0.005000000009757914lf, -0.00033333333333333343lf, 2.5000000000000005e-05lf, -2.0000000000000008e-06lf, 1.6666666666666673e-07lf, -1.4285714285714291e-08lf, 1.2500000000000006e-09lf, -1.1111111111111117e-10lf, 1.0000000000000006e-11lf, -9.090909090909096e-13lf, 8.333333333333339e-14lf, -7.692307692307698e-15lf, 7.142857142857148e-16lf, -6.666666666666672e-17lf, 6.250000000000005e-18lf, 0.10000530865369178lf, 0.005000000009755844lf, 0.0003333333333333334lf, 2.5000000000000005e-05lf, 2.0000000000000008e-06lf, 1.6666666666666673e-07lf, 1.4285714285714291e-08lf, 1.2500000000000006e-09lf, 1.1111111111111117e-10lf, 1.0000000000000006e-11lf, 9.090909090909096e-13lf, 8.333333333333339e-14lf, 7.692307692307698e-15lf, 7.142857142857148e-16lf, 6.666666666666672e-17lf, 6.250000000000005e-18lf, -0.09999937947108187lf, 0.005000000000120926lf, -0.0003333333333333334lf, 2.5000000000000005e-05lf, -2.0000000000000008e-06lf, 1.6666666666666673e-07lf, -1.4285714285714291e-08lf, 1.2500000000000006e-09lf, -1.1111111111111117e-10lf, 1.0000000000000006e-11lf, -9.090909090909096e-13lf, 8.333333333333339e-14lf, -7.692307692307698e-15lf, 7.142857142857148e-16lf, -6.666666666666672e-17lf, 6.250000000000005e-18lf, 0.10000062051638021lf, 0.005000000000120923lf, 0.0003333333333333334lf, 2.5000000000000005e-05lf, 2.0000000000000008e-06lf, 1.6666666666666673e-07lf, 1.4285714285714291e-08lf, 1.2500000000000006e-09lf, 1.1111111111111117e-10lf, 1.0000000000000006e-11lf, 9.090909090909096e-13lf, 8.333333333333339e-14lf, 7.692307692307698e-15lf, 7.142857142857148e-16lf, 6.666666666666672e-17lf, 6.250000000000005e-18lf, -0.09999993519193691lf, 0.0050000000000012135lf, -0.0003333333333333334lf, 2.5000000000000005e-05lf, -2.0000000000000008e-06lf, 1.6666666666666673e-07lf, -1.4285714285714291e-08lf, 1.2500000000000006e-09lf, -1.1111111111111117e-10lf, 1.0000000000000006e-11lf, -9.090909090909096e-13lf, 8.333333333333339e-14lf, -7.692307692307698e-15lf, 7.142857142857148e-16lf, -6.666666666666672e-17lf, 6.250000000000005e-18lf);
const double TVK_DIGAMMA_ROOT_D[39] = double[](1.4616321449683622lf, 9.549995429965697e-17lf, 0.14616321449683622lf, -0.5040830082644554lf, -8.15428206243813e-18lf, 0.04959169917355446lf, -1.5734984731623904lf, -1.574185691077347e-17lf, 0.042650152683760954lf, -2.6107208684441447lf, 9.881960746978353e-17lf, 0.03892791315558554lf, -3.635293366436901lf, 5.454396163173039e-17lf, 0.03647066335630989lf, -4.653237761743142lf, -2.5492686201468193e-16lf, 0.034676223825685755lf, -5.6671624415568855lf, -3.2153051074948335e-18lf, 0.033283755844311445lf, -6.678418213073427lf, 3.470798723495241e-16lf, 0.03215817869265733lf, -7.687788325031626lf, -1.351562494643672e-16lf, 0.0312211674968374lf, -8.695764163816401lf, -3.2859903716289447e-16lf, 0.030423583618359874lf, -9.702672540001863lf, -3.2563178405401477e-16lf, 0.02973274599981363lf, -10.708740838254144lf, -6.287211750540301e-16lf, 0.029125916174585535lf, -11.714133061228955lf, 8.598250154343834e-16lf, 0.028586693877104618lf);
const double TVK_DIGAMMA_COEF_D[208] = double[](
    0.14143808597399582lf, -0.009459052992220137lf, 0.0008071874535383623lf, -7.48246062981921e-05lf, 7.1929339373292645e-06lf, -7.039844600607148e-07lf, 6.955439581907455e-08lf, -6.907707832510604e-09lf, 6.880278452750929e-10lf, -6.864350303275796e-11lf, 6.8550363137237125e-12lf, -6.849564295572727e-13lf, 6.846339109666849e-14lf, -6.844433980948968e-15lf, 6.843306881941908e-16lf, -6.842639359046244e-17lf, 0.4433398007997953lf, -0.001990452939833399lf, 0.0039343419719705805lf, -1.669952793130559e-05lf, 3.847526591350173e-05lf, -2.1876095399023702e-07lf, 3.786249203665192e-07lf, -2.757469792485623e-09lf, 3.729116287426729e-09lf, -3.316039620364533e-11lf, 3.6740488348000045e-11lf, -3.857412576272737e-13lf, 3.62077595686272e-13lf, -4.38146959826164e-15lf, 3.569217832922779e-15lf, -4.888693977539857e-17lf, 0.4240070736268546lf, -0.014193195619073177lf, 0.0030964515651057734lf, -0.0001813964495832784lf, 2.7439945416135423e-05lf, -2.049936218159704e-06lf, 2.564252243695361e-07lf, -2.1815389211184407e-08lf, 2.4660044127848764e-09lf, -2.2544301403134768e-10lf, 2.411761651272165e-11lf, -2.2947546380499975e-12lf, 2.3817697613467483e-13lf, -2.3170578216609303e-14lf, 2.365182948721372e-15lf, -2.329393052131912e-16lf, 0.42230280137885284lf, -0.01935253324153171lf, 0.0030213462065150952lf, -0.0002301060066639754lf, 2.7429756237374518e-05lf, -2.4592634252601684e-06lf, 2.6389783087147587e-07lf, -2.5242536400232978e-08lf, 2.5972997732051356e-09lf, -2.5507248838708617e-10lf, 2.580406197798085e-11lf, -2.5614858400989876e-12lf, 2.573545402790799e-13lf, -2.5658584266414206e-14lf, 2.5707581422024988e-15lf, -2.567635010136819e-16lf, 0.4249174871706438lf, -0.02252984013562566lf, 0.003063989491058153lf, -0.00025733231293660803lf, 2.841476788219423e-05lf, -2.685781615698666e-06lf, 2.7743645783276234e-07lf, -2.7233765907312254e-08lf, 2.7525956114394132e-09lf, -2.7358114691663247e-10lf, 2.7454433253833844e-11lf, -2.7399131476012287e-12lf, 2.7430876470795726e-13lf, -2.7412651873171357e-14lf, 2.7423114006955587e-15lf, -2.741710790687572e-16lf, 0.4289323357458761lf, -0.02481476152258737lf, 0.0031341709716607036lf, -0.00027644730337928744lf, 2.949483310429305e-05lf, -2.8497355026856578e-06lf, 2.9020702737209984e-07lf, -2.874180595561951e-08lf, 2.888948117462461e-09lf, -2.8811014241938325e-10lf, 2.885264376101993e-11lf, -2.88305401176296e-12lf, 2.8842272014806014e-13lf, -2.883604394714541e-14lf, 2.883934993216895e-15lf, -2.883759497198943e-16lf, 0.4334013109514202lf, -0.026599403191036673lf, 0.0032098368744730064lf, -0.0002913689577922977lf, 3.051750630483401e-05lf, -2.98150640735031e-06lf, 3.016050903236476e-07lf, -2.998727096678024e-08lf, 3.007341063711143e-09lf, -3.0030378200057914e-10lf, 3.005182938075635e-11lf, -3.004112393675024e-12lf, 3.0046463688713794e-13lf, -3.004379952541692e-14lf, 3.0045128573777237e-15lf, -3.0044465515926146e-16lf, 0.4379574731239637lf, -0.02806546589999758lf, 0.0032842718654529494lf, -0.0003037156683011765lf, 3.1457400746629336e-05lf, -3.093037359734648e-06lf, 3.1175994164482255e-07lf, -3.105879993456966e-08lf, 3.1114122583843875e-09lf, -3.1087851613991503e-10lf, 3.1100291468077573e-11lf, -3.1094391905045176e-12lf, 3.1097187644542205e-13lf, -3.109586224423883e-14lf, 3.1096490462534137e-15lf, -3.1096192666062663e-16lf, 0.44244579956515967lf, -0.02931112867242225lf, 0.0033553249993829868lf, -0.0003143059587246589lf, 3.231719517118193e-05lf, -3.1903508182027887e-06lf, 3.2087673360179495e-07lf, -3.200341027077773e-08lf, 3.2041470509949447e-09lf, -3.2024154729197017e-10lf, 3.203200464392821e-11lf, -3.202843903614151e-12lf, 3.2030057019949845e-13lf, -3.202932243005732e-14lf, 3.2029655854598803e-15lf, -3.202950449391251e-16lf, 0.44679977490697353lf, -0.030395225922497635lf, 0.0034224234906930625lf, -0.00032361224206441217lf, 3.310567406637323e-05lf, -3.276982476880232e-06lf, 3.2913496769967314e-07lf, -3.2850088976342533e-08lf, 3.287765440102106e-09lf, -3.2865568104596535e-10lf, 3.287084462514583e-11lf, -3.2868535546782277e-12lf, 3.286954478402423e-13lf, -3.286910337586702e-14lf, 3.2869296365568636e-15lf, -3.286921197172362e-16lf, 0.4509930452367019lf, -0.03135573802624135lf, 0.0034855800000738227lf, -0.00033193334040513287lf, 3.3832076804414314e-05lf, -3.355223238861487e-06lf, 3.366780383707701e-07lf, -3.36183799755545e-08lf, 3.363915424759277e-09lf, -3.363033570203549e-10lf, 3.3634060118544064e-11lf, -3.3632482669497394e-12lf, 3.3633149784711604e-13lf, -3.363286742285028e-14lf, 3.3632986881985043e-15lf, -3.363293633005061e-16lf, 0.4550183911521761lf, -0.032218594474124lf, 0.003545022643272823lf, -0.0003394712808246461lf, 3.4504654476399e-05lf, -3.426661215495832e-06lf, 3.4361870754316594e-07lf, -3.4322254327928206e-08lf, 3.4338413126952655e-09lf, -3.4331748091788004e-10lf, 3.43344811169917e-11lf, -3.433335670270276e-12lf, 3.4333818484407784e-13lf, -3.4333628648577664e-14lf, 3.4333706647068193e-15lf, -3.433367459001501e-16lf, 0.45887788095874804lf, -0.03300228549378747lf, 0.0036010473380569757lf, -0.00034636966822808324lf, 3.5130424838178055e-05lf, -3.4924521744188027e-06lf, 3.5004605376604137e-07lf, -3.497212103978991e-08lf, 3.498501651612895e-09lf, -3.497983284357731e-10lf, 3.4981902692760956e-11lf, -3.498107304793426e-12lf, 3.4981404902602963e-13lf, -3.49812720072482e-14lf, 3.498132519283286e-15lf, -3.498130389998995e-16lf);
const double TVK_GELU_D_ROOT_D[3] = double[](-0.7517915246935645lf, 1.4956759177009883e-17lf, 0.0625lf);
const double TVK_GELU_D_COEF_D[16] = double[](
    0.02696837451962793lf, 0.0015167382148068437lf, -4.443280370769308e-06lf, -1.7396275832705949e-06lf, -1.40872212870067e-08lf, 1.1576223276966254e-09lf, 1.690994344325891e-11lf, -5.21433089876896e-13lf, -1.083865701620644e-14lf, 1.6947501192802078e-16lf, 4.897599331523322e-18lf, -3.9841481894692665e-20lf, -1.7205040296905326e-21lf, 6.0069319320610705e-24lf, 4.946360143734836e-25lf, -8.697613752398096e-29lf);
const double TVK_GELU_TANH_D_ROOT_D[3] = double[](-0.7524614220710163lf, 3.635560509207687e-17lf, 0.0625lf);
const double TVK_GELU_TANH_D_COEF_D[16] = double[](
    0.026900005689053656lf, 0.0015137439302179256lf, -3.853235723107429e-06lf, -1.7386548321679533e-06lf, -1.5849426596691667e-08lf, 1.1731570637126635e-09lf, 1.9598973001993865e-11lf, -5.640862150758266e-13lf, -1.3496057698220028e-14lf, 2.4004079071056415e-16lf, 7.062924284264103e-18lf, -1.2418926933732207e-19lf, -3.541810594064355e-21lf, 8.213723744063269e-23lf, 2.1107695751236853e-24lf, -5.366067696218163e-26lf);
const double TVK_SILU_D_ROOT_D[3] = double[](-1.2784645427610737lf, -1.0946994183093437e-16lf, 0.0625lf);
const double TVK_SILU_D_COEF_D[16] = double[](
    0.013613231607487506lf, 0.0005728468632693239lf, 4.608108941353104e-06lf, -2.3227928502179004e-07lf, -6.3005343802992785e-09lf, 7.547581796712995e-12lf, 2.974725819527357e-12lf, 4.323833706133649e-14lf, -5.95251074617934e-16lf, -2.7042499107905238e-17lf, -1.6726925701064284e-19lf, 8.334771743761373e-21lf, 1.9095158850276517e-22lf, -4.234452719097699e-25lf, -8.037534448130033e-26lf, -1.0233579883960388e-27lf);
const double TVK_MISH_D_ROOT_D[3] = double[](-1.1924312145154952lf, -4.8484829848031044e-17lf, 0.0625lf);
const double TVK_MISH_D_COEF_D[16] = double[](
    0.016684244628095906lf, 0.0007997315003129135lf, 1.0231401621975066e-05lf, -3.093234667462806e-07lf, -1.5088202058537846e-08lf, -2.003124312772315e-10lf, 4.069527763666903e-12lf, 2.30459985818928e-13lf, 3.6980689599573194e-15lf, -3.816375831929338e-17lf, -3.1735064381795655e-18lf, -6.145935604104267e-20lf, 2.0932947214228672e-22lf, 4.0367985849765507e-23lf, 9.295313674173526e-25lf, 1.4571361617070674e-27lf);
const double TVK_LGAMMA2_D[26] = double[](0.42278433509846713lf, 0.3224670334241132lf, -0.0673523010531981lf, 0.020580808427784546lf, -0.007385551028673986lf, 0.0028905103307415234lf, -0.001192753911703261lf, 0.0005096695247430425lf, -0.00022315475845357939lf, 9.945751278180853e-05lf, -4.492623673813314e-05lf, 2.050721277567069e-05lf, -9.439488275268397e-06lf, 4.374866789907488e-06lf, -2.039215753801366e-06lf, 9.55141213040742e-07lf, -4.492469198764566e-07lf, 2.1207184805554665e-07lf, -1.0043224823968099e-07lf, 4.7698101693639804e-08lf, -2.2711094608943164e-08lf, 1.0838659214896955e-08lf, -5.183475041970047e-09lf, 2.4836745438024785e-09lf, -1.1921401405860912e-09lf, 5.731367241678862e-10lf);
const double TVK_PIO2_PARTS[5] = double[](1.5707963109016418lf, 1.5893254712295857e-08lf, 6.123233932053594e-17lf, 6.368317055225283e-25lf, 1.082856673921914e-32lf);
const uint TVK_TWO_OVER_PI_D[40] = uint[](0xa2f9836eu, 0x4e441529u, 0xfc2757d1u, 0xf534ddc0u, 0xdb629599u, 0x3c439041u, 0xfe5163abu, 0xdebbc561u, 0xb7246e3au, 0x424dd2e0u, 0x06492eeau, 0x09d1921cu, 0xfe1deb1cu, 0xb129a73eu, 0xe88235f5u, 0x2ebb4484u, 0xe99c7026u, 0xb45f7e41u, 0x3991d639u, 0x835339f4u, 0x9c845f8bu, 0xbdf9283bu, 0x1ff897ffu, 0xde05980fu, 0xef2f118bu, 0x5a0a6d1fu, 0x6d367ecfu, 0x27cb09b7u, 0x4f463f66u, 0x9e5fea2du, 0x7527bac7u, 0xebe5f17bu, 0x3d0739f7u, 0x8a5292eau, 0x6bfb5fb1u, 0x1f8d5d08u, 0x56033046u, 0xfc7b6babu, 0xf0cfbc20u, 0x9af4361du);

double tvk_copysign(double a, double b) {
  return uint64BitsToDouble((doubleBitsToUint64(a) & 0x7ffffffffffffffful) |
                            (doubleBitsToUint64(b) & 0x8000000000000000ul));
}
bool tvk_signbit(double a) { return doubleBitsToUint64(a) >= 0x8000000000000000ul; }

bool tvk_is_zero(double x) { return (doubleBitsToUint64(x) & 0x7ffffffffffffffful) == 0ul; }
double tvk_signed_zero_f64(bool negative) {
  return uint64BitsToDouble(negative ? 0x8000000000000000ul : 0ul);
}

double tvk_div_zero(double a, double b) {
  if (tvk_is_zero(a) || tvk_isnan(a)) return TVK_F64_NAN;
  return (tvk_signbit(a) != tvk_signbit(b)) ? -TVK_F64_INF : TVK_F64_INF;
}

void tvk_two_sum(double a, double b, out double s, out double e) {
  precise double ss = a + b;
  precise double bb = ss - a;
  precise double ee = (a - (ss - bb)) + (b - bb);
  s = ss;
  e = ee;
}
void tvk_two_prod(double a, double b, out double p, out double e) {
  precise double ca = 134217729.0lf * a;
  precise double ah = ca - (ca - a);
  precise double al = a - ah;
  precise double cb = 134217729.0lf * b;
  precise double bh = cb - (cb - b);
  precise double bl = b - bh;
  precise double pp = a * b;
  precise double ee = ((ah * bh - pp) + ah * bl + al * bh) + al * bl;
  p = pp;
  e = ee;
}

double tvk_root_series(double d, double c[16]) {
  double p = c[15];
  for (int k = 14; k >= 0; --k) p = p * d + c[k];
  return p * d;
}
double tvk_root_offset(double x, double roots[3]) {
  precise double d0 = x - roots[0];
  if (!(abs(d0) < roots[2])) return TVK_F64_NAN;
  precise double d = d0 - roots[1];
  return d / roots[2];
}

// Exact fmod (11 bits of the exponent difference per step).
double tvk_fmod(double x, double y) {
  uint64_t ux = doubleBitsToUint64(x) & 0x7ffffffffffffffful;
  uint64_t uy = doubleBitsToUint64(y) & 0x7ffffffffffffffful;
  if (ux >= 0x7ff0000000000000ul || uy > 0x7ff0000000000000ul || uy == 0ul) return TVK_F64_NAN;
  if (ux < uy) return x;
  int ex = int(ux >> 52), ey = int(uy >> 52);
  uint64_t mx = ex == 0 ? ux : ((ux & 0xffffffffffffful) | 0x10000000000000ul);
  uint64_t my = ey == 0 ? uy : ((uy & 0xffffffffffffful) | 0x10000000000000ul);
  int d = max(ex, 1) - max(ey, 1);
  uint64_t r = mx % my;
  while (d > 0) {
    int s = min(d, 11);
    r = (r << uint64_t(s)) % my;
    d -= s;
  }
  double m = tvk_ldexp(double(r), max(ey, 1) - 1075);
  return uint64BitsToDouble(doubleBitsToUint64(m) | (doubleBitsToUint64(x) & 0x8000000000000000ul));
}

double tvk_remainder(double a, double b) {
  double m = tvk_fmod(a, b);
  if (!tvk_is_zero(m) && !tvk_isnan(m) && tvk_signbit(b) != tvk_signbit(m)) m += b;
  return m;
}

// Exact quotients for torch.div(rounding_mode=...): as the float32 versions in math.glsl, with
// 53-bit significands. N = ma 2^s needs 106 bits, but only N - Q mb is used and it is small, so
// the wrapping 64-bit arithmetic still gives it exactly.
uint64_t tvk_split_f64(double x, out int e) {
  uint64_t u = doubleBitsToUint64(x) & 0x7ffffffffffffffful;
  int biased = int(u >> 52);
  if (biased != 0) {
    e = biased - 1075;
    return (u & 0xffffffffffffful) | 0x10000000000000ul;
  }
  uint hi = uint(u >> 32), lo = uint(u);
  int msb = hi != 0u ? 32 + findMSB(hi) : findMSB(lo);
  int shift = 52 - msb;
  e = -1074 - shift;
  return u << uint64_t(shift);
}

double tvk_div_rn(double a, double b) {
  int ea, eb;
  uint64_t ma = tvk_split_f64(a, ea);
  uint64_t mb = tvk_split_f64(b, eb);
  int s = ma >= mb ? 52 : 53;
  uint64_t n = ma << uint64_t(s);  // low 64 bits of N
  uint64_t q = uint64_t((double(ma) / double(mb)) * double(1ul << uint64_t(s)));
  int64_t r = int64_t(n - q * mb);
  for (int i = 0; i < 8 && r < 0l; ++i) {
    q -= 1ul;
    r += int64_t(mb);
  }
  for (int i = 0; i < 8 && r >= int64_t(mb); ++i) {
    q += 1ul;
    r -= int64_t(mb);
  }
  if (2l * r > int64_t(mb) || (2l * r == int64_t(mb) && (q & 1ul) == 1ul)) q += 1ul;
  double mag = tvk_ldexp(double(q), ea - eb - s);  // q <= 2^53: exact conversion
  return uint64BitsToDouble(doubleBitsToUint64(mag) |
                            ((doubleBitsToUint64(a) ^ doubleBitsToUint64(b)) & 0x8000000000000000ul));
}

double tvk_div_floor(double a, double b) {
  if (tvk_isnan(a) || tvk_isnan(b)) return TVK_F64_NAN;
  if (tvk_is_zero(b)) return tvk_div_zero(a, b);
  bool negative = tvk_signbit(a) != tvk_signbit(b);
  double m = tvk_fmod(a, b);
  if (tvk_isnan(m)) return TVK_F64_NAN;
  precise double num = a - m;
  double q = (tvk_is_zero(num) || tvk_isinf(b)) ? tvk_signed_zero_f64(tvk_signbit(num) != tvk_signbit(b))
                                                : tvk_div_rn(num, b);
  if (!tvk_is_zero(m) && tvk_signbit(m) != tvk_signbit(b)) q -= 1.0lf;
  if (tvk_is_zero(q)) return tvk_signed_zero_f64(negative);
  if (tvk_isinf(q)) return q;
  double f = floor(q);
  if (q - f > 0.5lf) f += 1.0lf;
  return f;
}

double tvk_div_trunc(double a, double b) {
  if (tvk_isnan(a) || tvk_isnan(b)) return TVK_F64_NAN;
  if (tvk_is_zero(b)) return tvk_div_zero(a, b);
  bool negative = tvk_signbit(a) != tvk_signbit(b);
  if (tvk_isinf(a)) return tvk_isinf(b) ? TVK_F64_NAN : (negative ? -TVK_F64_INF : TVK_F64_INF);
  if (tvk_isinf(b) || tvk_is_zero(a)) return tvk_signed_zero_f64(negative);
  double t = tvk_trunc(tvk_div_rn(a, b));
  return tvk_is_zero(t) ? tvk_signed_zero_f64(negative) : t;
}
// The output dtype only matters for float16 / bfloat16 (math.glsl); float64 has its own kind.
double tvk_div_trunc(double a, double b, int dt) { return tvk_div_trunc(a, b); }
double tvk_div_floor(double a, double b, int dt) { return tvk_div_floor(a, b); }

double tvk_lerp(double a, double b, double w) {
  double r = abs(w) < 0.5lf ? a + w * (b - a) : b - (b - a) * (1.0lf - w);
  if (!tvk_isfinite(r) || !(abs(a) < 1e290lf && abs(b) < 1e290lf && abs(w) < 1e290lf)) return r;
  double dh, dl, ph, pl, sh, sl;
  tvk_two_sum(b, -a, dh, dl);
  tvk_two_prod(w, dh, ph, pl);
  tvk_two_sum(a, ph, sh, sl);
  precise double t = sl + (pl + w * dl);
  precise double res = sh + t;
  return res;
}

double tvk_hypot(double a, double b) {
  if (tvk_isinf(a) || tvk_isinf(b)) return TVK_F64_INF;
  if (tvk_isnan(a) || tvk_isnan(b)) return TVK_F64_NAN;
  double x = max(abs(a), abs(b)), y = min(abs(a), abs(b));
  if (x == 0.0lf) return 0.0lf;
  double r = y / x;
  return x * sqrt(1.0lf + r * r);
}

// ---- trigonometric ----
// Payne-Hanek reduction of |x| >= ~1e8: x * 2/pi mod 4 in 2.62 fixed point from exact
// 64-bit products of 32-bit pieces of x's significand with 32-bit words of 2/pi.
double tvk_reduce_pio2_large(double ax, out uint q) {
  uint64_t bits = doubleBitsToUint64(ax);
  int e = int(bits >> 52) - 1075;  // ax = m * 2^e
  uint64_t m = (bits & 0xffffffffffffful) | 0x10000000000000ul;
  uint64_t mh = m >> 32, ml = m & 0xfffffffful;
  uint64_t y = 0ul;
  int j0 = max(1, (e - 2) / 32), j1 = min(40, (e + 158) / 32 + 1);
  for (int j = j0; j <= j1; ++j) {
    uint64_t t = uint64_t(TVK_TWO_OVER_PI_D[j - 1]);
    int sh = e - 32 * j + 62;  // weight of ml * t in the fixed-point accumulator
    uint64_t p = ml * t;
    if (sh < 64 && sh > -64) y += sh >= 0 ? (p << uint64_t(sh)) : (p >> uint64_t(-sh));
    int sh2 = sh + 32;
    uint64_t p2 = mh * t;
    if (sh2 < 64 && sh2 > -64) y += sh2 >= 0 ? (p2 << uint64_t(sh2)) : (p2 >> uint64_t(-sh2));
  }
  uint64_t k = (y + (1ul << 61)) >> 62;
  q = uint(k & 3ul);
  int64_t f = int64_t(y - (k << 62));
  return double(f) * 2.16840434497100886801e-19lf * 1.5707963267948966lf;
}

// Returns r in [-pi/4, pi/4] and the quadrant q with |x| = q * pi/2 + r: Cody-Waite with
// pi/2 in 26-bit parts below 1e8 (k < 2^26: exact products), Payne-Hanek above.
double tvk_reduce_pio2(double ax, out uint q) {
  if (ax >= 1.0e8lf) return tvk_reduce_pio2_large(ax, q);
  double k = tvk_round_even(ax * 0.6366197723675814lf);
  q = uint(mod(k, 4.0lf));
  precise double r = (((ax - k * TVK_PIO2_PARTS[0]) - k * TVK_PIO2_PARTS[1]) - k * TVK_PIO2_PARTS[2]) -
                     k * TVK_PIO2_PARTS[3];
  precise double r2 = r - k * TVK_PIO2_PARTS[4];
  return r2;
}

double tvk_tan(double x) {
  if (!tvk_isfinite(x)) return TVK_F64_NAN;
  uint q;
  double r = tvk_reduce_pio2(abs(x), q);
  double z = r * r;
  double s = tvk_sin_poly(r, z), c = tvk_cos_poly(z);
  double t = (q & 1u) == 0u ? s / c : -c / s;
  return tvk_signbit(x) ? -t : t;
}

// atan: fdlibm s_atan.c (reduction to |x| < 7/16 by atan(0.5), atan(1), atan(1.5), atan(inf)).
double tvk_atan(double x) {
  if (tvk_isnan(x)) return x;
  double ax = abs(x);
  if (ax >= 7.3786976294838206e19lf) return tvk_copysign(1.5707963267948966lf, x);
  int id;
  double z;
  if (ax < 0.4375lf) {
    id = -1;
    z = ax;
  } else if (ax < 0.6875lf) {
    id = 0;
    z = (2.0lf * ax - 1.0lf) / (2.0lf + ax);
  } else if (ax < 1.1875lf) {
    id = 1;
    z = (ax - 1.0lf) / (ax + 1.0lf);
  } else if (ax < 2.4375lf) {
    id = 2;
    z = (ax - 1.5lf) / (1.0lf + 1.5lf * ax);
  } else {
    id = 3;
    z = -1.0lf / ax;
  }
  double zz = z * z, w = zz * zz;
  double s1 = zz * (3.33333333333329318027e-01lf + w * (1.42857142725034663711e-01lf + w * (9.09088713343650656196e-02lf +
              w * (6.66107313738753120669e-02lf + w * (4.97687799461593236017e-02lf + w * 1.62858201153657823623e-02lf)))));
  double s2 = w * (-1.99999999998764832476e-01lf + w * (-1.11111104054623557880e-01lf + w * (-7.69187620504482999495e-02lf +
              w * (-5.83357013379057348645e-02lf + w * -3.65315727442169155270e-02lf))));
  double hi = id == 0 ? 4.63647609000806093515e-01lf : id == 1 ? 7.85398163397448278999e-01lf
            : id == 2 ? 9.82793723247329054082e-01lf : 1.57079632679489655800e+00lf;
  double lo = id == 0 ? 2.26987774529616870924e-17lf : id == 1 ? 3.06161699786838301793e-17lf
            : id == 2 ? 1.39033110312309984516e-17lf : 6.12323399573676603587e-17lf;
  precise double r = id < 0 ? z - z * (s1 + s2) : hi - ((z * (s1 + s2) - lo) - z);
  return tvk_copysign(r, x);
}

double tvk_atan2(double y, double x) {
  if (tvk_isnan(x) || tvk_isnan(y)) return TVK_F64_NAN;
  double ax = abs(x), ay = abs(y), t;
  bool xneg = tvk_signbit(x);
  if (tvk_isinf(ax) && tvk_isinf(ay)) {
    t = xneg ? 2.356194490192345lf : 0.7853981633974483lf;
  } else if (ay <= ax) {
    double a = ax == 0.0lf ? 0.0lf : tvk_atan(ay / ax);
    t = xneg ? (3.141592653589793lf - a) + 1.2246467991473532e-16lf : a;
  } else {
    double a = tvk_atan(ax / ay);
    t = xneg ? (1.5707963267948966lf + a) + 6.123233995736766e-17lf
             : (1.5707963267948966lf - a) + 6.123233995736766e-17lf;
  }
  return tvk_copysign(t, y);
}

double tvk_asin(double x) {
  if (tvk_isnan(x) || abs(x) > 1.0lf) return TVK_F64_NAN;
  return tvk_atan2(x, sqrt((1.0lf - x) * (1.0lf + x)));
}

double tvk_acos(double x) {
  if (tvk_isnan(x) || abs(x) > 1.0lf) return TVK_F64_NAN;
  return 2.0lf * tvk_atan2(sqrt(1.0lf - x), sqrt(1.0lf + x));
}

// ---- hyperbolic ----
double tvk_sinh(double x) {
  if (tvk_isnan(x)) return x;
  double ax = abs(x), r;
  if (ax > 709.0lf) {
    double h = tvk_exp(0.5lf * ax);
    r = (0.5lf * h) * h;
  } else {
    double e = tvk_expm1(ax);
    r = 0.5lf * (e + e / (e + 1.0lf));
  }
  return tvk_copysign(r, x);
}

double tvk_cosh(double x) {
  if (tvk_isnan(x)) return x;
  double ax = abs(x);
  if (ax > 709.0lf) {
    double h = tvk_exp(0.5lf * ax);
    return (0.5lf * h) * h;
  }
  double e = tvk_exp(ax);
  return 0.5lf * (e + 1.0lf / e);
}

double tvk_asinh(double x) {
  if (!tvk_isfinite(x)) return x;
  double ax = abs(x), r;
  if (ax > 268435456.0lf) {
    r = tvk_log(ax) + 0.6931471805599453lf;
  } else if (ax > 2.0lf) {
    r = tvk_log(2.0lf * ax + 1.0lf / (sqrt(ax * ax + 1.0lf) + ax));
  } else {
    double z = ax * ax;
    r = tvk_log1p(ax + z / (1.0lf + sqrt(1.0lf + z)));
  }
  return tvk_copysign(r, x);
}

double tvk_acosh(double x) {
  if (tvk_isnan(x) || x < 1.0lf) return TVK_F64_NAN;
  if (tvk_isinf(x)) return x;
  if (x > 268435456.0lf) return tvk_log(x) + 0.6931471805599453lf;
  if (x > 2.0lf) return tvk_log(2.0lf * x - 1.0lf / (x + sqrt(x * x - 1.0lf)));
  double t = x - 1.0lf;
  return tvk_log1p(t + sqrt(2.0lf * t + t * t));
}

double tvk_atanh(double x) {
  double ax = abs(x);
  if (tvk_isnan(x) || ax > 1.0lf) return TVK_F64_NAN;
  if (ax == 1.0lf) return tvk_copysign(TVK_F64_INF, x);
  double r = ax < 0.5lf ? 0.5lf * tvk_log1p(2.0lf * ax + 2.0lf * ax * ax / (1.0lf - ax))
                        : 0.5lf * tvk_log1p(2.0lf * ax / (1.0lf - ax));
  return tvk_copysign(r, x);
}

// ---- error function inverse (3 Newton steps) ----
double tvk_erfinv(double y) {
  double ay = abs(y);
  if (tvk_isnan(y) || ay > 1.0lf) return TVK_F64_NAN;
  if (ay == 1.0lf) return tvk_copysign(TVK_F64_INF, y);
  if (ay == 0.0lf) return y;
  double x;
  if (ay <= 0.7lf) {
    double z = ay * ay;
    double num = ((-0.140543331lf * z + 0.914624893lf) * z - 1.645349621lf) * z + 0.886226899lf;
    double dem = (((0.012229801lf * z - 0.329097515lf) * z + 1.442710462lf) * z - 2.118377725lf) * z + 1.0lf;
    x = ay * num / dem;
  } else {
    double z = sqrt(-tvk_log((1.0lf - ay) * 0.5lf));
    double num = ((1.641345311lf * z + 3.429567803lf) * z - 1.624906493lf) * z - 1.970840454lf;
    double dem = (1.637067800lf * z + 3.543889200lf) * z + 1.0lf;
    x = num / dem;
  }
  double c = 1.0lf - ay;
  for (int i = 0; i < 3; ++i) {
    double e = ay <= 0.5lf ? tvk_erf(x) - ay : c - tvk_erfc(x);
    x -= e / (1.1283791670955126lf * tvk_exp(-x * x));
  }
  return tvk_copysign(x, y);
}

// ---- gamma function family ----
double tvk_lgamma2(double p) {
  double s = TVK_LGAMMA2_D[25];
  for (int k = 24; k >= 0; --k) s = s * p + TVK_LGAMMA2_D[k];
  return s * p;
}

double tvk_abs_sinpi(double x) {
  double g = abs(x);
  g -= floor(g);
  if (g > 0.5lf) g = 1.0lf - g;
  return tvk_sin(3.141592653589793lf * g);
}

double tvk_lgamma_pos(double x) {
  if (x < 0.5lf) return tvk_lgamma2(x) - tvk_log(x) - tvk_log1p(x);
  if (x < 1.5lf) return tvk_lgamma2(x - 1.0lf) - tvk_log1p(x - 1.0lf);
  if (x <= 2.5lf) return tvk_lgamma2(x - 2.0lf);
  if (x < 16.0lf) {
    double n = floor(x - 1.5lf);
    double prod = 1.0lf;
    for (double k = 1.0lf; k <= n; k += 1.0lf) prod *= x - k;
    precise double p = (x - n) - 2.0lf;
    return tvk_lgamma2(p) + tvk_log(prod);
  }
  // Stirling with B_2k / (2k (2k - 1) x^(2k-1)), k = 1..7
  double z = 1.0lf / (x * x);
  double s = 7.0lf / 6.0lf / 182.0lf;
  s = s * z - 691.0lf / 2730.0lf / 132.0lf;
  s = s * z + 5.0lf / 66.0lf / 90.0lf;
  s = s * z - 1.0lf / 30.0lf / 56.0lf;
  s = s * z + 1.0lf / 42.0lf / 30.0lf;
  s = s * z - 1.0lf / 30.0lf / 12.0lf;
  s = s * z + 1.0lf / 6.0lf / 2.0lf;
  return (x - 0.5lf) * (tvk_log(x) - 1.0lf) + (0.4189385332046727lf + s / x);
}

double tvk_lgamma(double x) {
  if (tvk_isnan(x)) return x;
  if (tvk_isinf(x)) return TVK_F64_INF;
  if (x > 0.0lf) return tvk_lgamma_pos(x);
  if (x == floor(x)) return TVK_F64_INF;
  if (x > -10.0lf && x < -2.0lf) {
    int m = int(floor(-x));
    int i = 2 * (m - 2) + (x > -double(m) - 0.5lf ? 0 : 1);
    double roots[3] = double[](TVK_LGAMMA_ROOT_D[3 * i], TVK_LGAMMA_ROOT_D[3 * i + 1], TVK_LGAMMA_ROOT_D[3 * i + 2]);
    double d = tvk_root_offset(x, roots);
    if (!tvk_isnan(d)) {
      double c[16];
      for (int k = 0; k < 16; ++k) c[k] = TVK_LGAMMA_COEF_D[16 * i + k];
      return tvk_root_series(d, c);
    }
  }
  double ax = -x;
  return ((1.1447298858494002lf - tvk_log(ax)) - tvk_log(tvk_abs_sinpi(ax))) - tvk_lgamma_pos(ax);
}

double tvk_digamma_pos(double x) {
  double roots[3] = double[](TVK_DIGAMMA_ROOT_D[0], TVK_DIGAMMA_ROOT_D[1], TVK_DIGAMMA_ROOT_D[2]);
  double d = tvk_root_offset(x, roots);
  if (!tvk_isnan(d)) {
    double c[16];
    for (int k = 0; k < 16; ++k) c[k] = TVK_DIGAMMA_COEF_D[k];
    return tvk_root_series(d, c);
  }
  double acc = 0.0lf, y = x;
  for (double k = 1.0lf; y < 10.0lf; k += 1.0lf) {
    acc += 1.0lf / y;
    y = x + k;
  }
  // B_2k / (2k y^2k), k = 1..8
  double z = 1.0lf / (y * y);
  double s = -3617.0lf / 510.0lf / 16.0lf;
  s = s * z + 7.0lf / 6.0lf / 14.0lf;
  s = s * z - 691.0lf / 2730.0lf / 12.0lf;
  s = s * z + 5.0lf / 66.0lf / 10.0lf;
  s = s * z - 1.0lf / 30.0lf / 8.0lf;
  s = s * z + 1.0lf / 42.0lf / 6.0lf;
  s = s * z - 1.0lf / 30.0lf / 4.0lf;
  s = s * z + 1.0lf / 6.0lf / 2.0lf;
  return ((tvk_log(y) - 0.5lf / y) - s * z) - acc;
}

double tvk_digamma(double x) {
  if (tvk_isnan(x)) return x;
  if (x == 0.0lf) return tvk_signbit(x) ? TVK_F64_INF : -TVK_F64_INF;
  if (x > 0.0lf) return tvk_isinf(x) ? x : tvk_digamma_pos(x);
  if (x == floor(x)) return TVK_F64_NAN;
  if (x > -12.0lf) {
    int i = 1 + int(floor(-x));
    double roots[3] = double[](TVK_DIGAMMA_ROOT_D[3 * i], TVK_DIGAMMA_ROOT_D[3 * i + 1], TVK_DIGAMMA_ROOT_D[3 * i + 2]);
    double d = tvk_root_offset(x, roots);
    if (!tvk_isnan(d)) {
      double c[16];
      for (int k = 0; k < 16; ++k) c[k] = TVK_DIGAMMA_COEF_D[16 * i + k];
      return tvk_root_series(d, c);
    }
  }
  double f = x - tvk_round_even(x);
  double pf = 3.141592653589793lf * f;
  double cot = tvk_cos(pf) / tvk_sin(pf);
  return (tvk_digamma_pos(-x) - 1.0lf / x) - 3.141592653589793lf * cot;
}

// ---- activations ----
void tvk_gelu_tanh_v(double x, out double vh, out double vl) {
  const double C1H = 1.5957691216057308lf, C1L = -9.96930880911092e-17lf;
  const double C3H = 0.07135481627260025lf, C3L = -6.175149918155315e-19lf;
  double x2h, x2l, ph, pl, th, tl, wh, wl;
  tvk_square_split(x, x2h, x2l);
  tvk_two_prod(C3H, x2h, ph, pl);
  precise double plc = pl + (C3H * x2l + C3L * x2h);
  tvk_two_sum(C1H, ph, th, tl);
  precise double tlc = tl + (C1L + plc);
  tvk_two_prod(x, th, wh, wl);
  precise double wlc = wl + x * tlc;
  tvk_two_sum(wh, wlc, vh, vl);
}

void tvk_sigmoid2(double vh, double vl, out double s, out double t) {
  double e = tvk_exp(-abs(vh)) * (1.0lf - (vh < 0.0lf ? -vl : vl));
  double r = 1.0lf / (1.0lf + e);
  s = vh >= 0.0lf ? r : e * r;
  t = vh >= 0.0lf ? e * r : r;
}

double tvk_gelu_tanh(double x) {
  if (tvk_isnan(x)) return x;
  double vh, vl, s, t;
  if (abs(x) > 30.0lf) {
    vh = 1.5957691216057308lf * x * (1.0lf + 0.044715lf * x * x);
    vl = 0.0lf;
  } else {
    tvk_gelu_tanh_v(x, vh, vl);
  }
  tvk_sigmoid2(vh, vl, s, t);
  return x * s;
}

double tvk_gelu_tanh_grad(double x) {
  if (tvk_isnan(x)) return x;
  double d = tvk_root_offset(x, TVK_GELU_TANH_D_ROOT_D);
  if (!tvk_isnan(d)) return tvk_root_series(d, TVK_GELU_TANH_D_COEF_D);
  double vh, vl, s, t;
  if (abs(x) > 30.0lf) {
    vh = 1.5957691216057308lf * x * (1.0lf + 0.044715lf * x * x);
    vl = 0.0lf;
  } else {
    tvk_gelu_tanh_v(x, vh, vl);
  }
  tvk_sigmoid2(vh, vl, s, t);
  return s + (s * x) * t * (1.5957691216057308lf * (1.0lf + 0.134145lf * x * x));
}

double tvk_gelu_grad(double x) {
  if (tvk_isnan(x)) return x;
  double d = tvk_root_offset(x, TVK_GELU_D_ROOT_D);
  if (!tvk_isnan(d)) return tvk_root_series(d, TVK_GELU_D_COEF_D);
  if (abs(x) > 40.0lf) return tvk_isinf(x) ? TVK_F64_NAN : (x > 0.0lf ? 1.0lf : 0.0lf);
  double hi, lo;
  tvk_square_split(x, hi, lo);
  double pdf = 0.3989422804014327lf * tvk_exp(-0.5lf * hi) * tvk_exp(-0.5lf * lo);
  double z = 0.7071067811865476lf * abs(x);
  double cdf;
  if (x >= 0.0lf) cdf = 1.0lf - 0.5lf * tvk_erfc(z);
  else cdf = z < 2.0lf ? 0.5lf * (1.0lf - tvk_erf_series(z)) : 0.5lf * tvk_erfc_cf_core(z, 0.5lf * hi, 0.5lf * lo);
  return cdf + x * pdf;
}

double tvk_silu_grad(double x) {
  if (tvk_isnan(x)) return x;
  double d = tvk_root_offset(x, TVK_SILU_D_ROOT_D);
  if (!tvk_isnan(d)) return tvk_root_series(d, TVK_SILU_D_COEF_D);
  double s, t;
  tvk_sigmoid2(x, 0.0lf, s, t);
  return s * (1.0lf + x * t);
}

void tvk_tanh_softplus(double x, out double t, out double omt) {
  if (x <= 0.0lf) {
    double e = tvk_exp(x);
    double n = e * (e + 2.0lf);
    t = n / (n + 2.0lf);
    omt = 2.0lf / (n + 2.0lf);
  } else {
    double e = tvk_exp(-x);
    double den = 1.0lf + 2.0lf * e * (1.0lf + e);
    t = (1.0lf + 2.0lf * e) / den;
    omt = 2.0lf * e * e / den;
  }
}

double tvk_mish(double x) {
  if (tvk_isnan(x)) return x;
  double t, omt;
  tvk_tanh_softplus(x, t, omt);
  return x * t;
}

double tvk_mish_grad(double x) {
  if (tvk_isnan(x)) return x;
  double d = tvk_root_offset(x, TVK_MISH_D_ROOT_D);
  if (!tvk_isnan(d)) return tvk_root_series(d, TVK_MISH_D_COEF_D);
  double t, omt, s, u;
  tvk_tanh_softplus(x, t, omt);
  tvk_sigmoid2(x, 0.0lf, s, u);
  return t + x * s * (omt * (1.0lf + t));
}

double tvk_log_sigmoid(double x) {
  return ((x < 0.0lf || tvk_isnan(x)) ? x : 0.0lf) - tvk_log1p(tvk_exp(-abs(x)));
}

double tvk_log_sigmoid_grad(double x) {
  double z = tvk_exp(-abs(x));
  return x < 0.0lf ? 1.0lf / (1.0lf + z) : z / (1.0lf + z);
}
// Special functions shared with float32 (shaders/special.glsl), float64 instance.
#define TVK_R double
#define TVK_L(x) x
#define TVK_R_INF TVK_F64_INF
#define TVK_R_NAN TVK_F64_NAN
#define TVK_R_DOUBLE 1
#include "special.glsl"
#undef TVK_R_DOUBLE
#undef TVK_R
#undef TVK_L
#undef TVK_R_INF
#undef TVK_R_NAN
#endif  // TVK_FLOAT64

#endif  // TVK_MATH_F64_GLSL
