// Complex functions over (re, im) pairs for the complex kernel family (complex.comp), with the
// results PyTorch's CPU gives: its complex kernels call c10::complex / std::complex, which on
// Linux are glibc's C99 functions (cexp, clog, csqrt, csin, ..., cpow = cexp(y * clog(x)) with
// the C99 Annex G multiplication), plus c10's own formulas for log1p, expm1, division and the
// vectorized log2 / log10. Every function follows the case structure of the C99 / glibc
// definition (infinities, NaN, signed zeros, overflow-free scaling for large arguments, the
// cancellation-free forms near the branch points of the inverse functions), so special values
// come out as on the CPU, and finite results agree to a few ULP (the real functions are
// math.glsl's, accurate to ~1e-7 / ~1e-15 relative).
//
// CT is the complex type of the includer's KIND: vec2 (complex64, fp32 math) or dvec2
// (complex128, fp64 math); .x is the real part, .y the imaginary part.
#ifndef TVK_COMPLEX_MATH_GLSL
#define TVK_COMPLEX_MATH_GLSL

#include "math.glsl"

#if KIND == KIND_FLOAT64
#define CT dvec2
#define CX_NAN TVK_F64_NAN
#define CX_INF TVK_F64_INF
#define CX_MAX 1.7976931348623157e308lf
#define CX_MIN 2.2250738585072014e-308lf   // smallest normal
#define CX_EPS 2.220446049250313080847e-16lf
#define CX_MANT 53
#define CX_EXP_T 709.0lf   // int((max_exp - 1) ln 2): exp(CX_EXP_T) is finite
#define CX_EXP_T2 354.0lf  // int((max_exp - 1) ln 2 / 2)
#else
#define CT vec2
#define CX_NAN TVK_F32_NAN
#define CX_INF TVK_F32_INF
#define CX_MAX 3.40282346638528859812e38
#define CX_MIN 1.17549435082228750797e-38
#define CX_EPS 1.1920928955078125e-7
#define CX_MANT 24
#define CX_EXP_T 88.0
#define CX_EXP_T2 44.0
#endif

// Constants rounded to T from double literals (folded at compile time: no fp64 in fp32 code).
#define CX_PI T(3.14159265358979323846lf)
#define CX_PI_2 T(1.57079632679489661923lf)
#define CX_PI_4 T(0.78539816339744830962lf)
#define CX_LN2 T(0.69314718055994530942lf)
#define CX_LN10 T(2.30258509299404568402lf)

bool cx_signbit(T x) { return tvk_signbit(x); }
T cx_copysign(T a, T b) { return tvk_copysign(a, b); }
T cx_hypot(T a, T b) { return tvk_hypot(a, b); }

// x + 0.0 as IEEE arithmetic gives it (-0 becomes +0), on the bits: compilers may fold a
// literal `x + 0.0` to x.
T cx_plus_zero(T x) {
#if KIND == KIND_FLOAT64
  uint64_t b = doubleBitsToUint64(x);
  return uint64BitsToDouble((b & 0x7ffffffffffffffful) == 0ul ? 0ul : b);
#else
  uint b = floatBitsToUint(x);
  return uintBitsToFloat((b & 0x7fffffffu) == 0u ? 0u : b);
#endif
}

// a / b correctly rounded, as the CPU's division (Vulkan's division may be a few ULP off, and
// is on lavapipe): tvk_div_rn where it is exact (finite operands, a normal quotient), the
// device's division for infinities and NaN (exact there), tvk_div_zero for b = 0.
T cx_fdiv(T a, T b) {
  if (!tvk_isfinite(a) || !tvk_isfinite(b)) return a / b;
  if (b == T(0)) return tvk_div_zero(a, b);
  if (a == T(0)) return tvk_div_rn(a, b);  // a signed zero
  T q = a / b;
  return abs(q) >= T(2) * CX_MIN && abs(q) <= CX_MAX ? tvk_div_rn(a, b) : q;
}

// sin and cos of x; a tiny x gives (x, 1) like glibc (keeps the sign of a zero).
void cx_sincos(T x, out T s, out T c) {
  if (abs(x) > CX_MIN) {
    s = tvk_sin(x);
    c = tvk_cos(x);
  } else {
    s = x;
    c = T(1);
  }
}

// atan of x in [0, 1]: fp32 Cephes; fp64 refines the fp32 value by two Newton steps on
// sin(t) - x cos(t) = 0 (each doubles the number of correct digits).
T cx_atan01(T x) {
  T t = T(tvk_atan(float(x)));
#if KIND == KIND_FLOAT64
  for (int i = 0; i < 2; ++i) {
    T s = tvk_sin(t), c = tvk_cos(t);
    t -= (s - x * c) / (c + x * s);
  }
#endif
  return t;
}

// atan2 with the C99 special cases (signed zeros, infinities).
T cx_atan2(T y, T x) {
  if (tvk_isnan(x) || tvk_isnan(y)) return CX_NAN;
  T ax = abs(x), ay = abs(y), t;
  bool xneg = cx_signbit(x);
  if (tvk_isinf(ax) && tvk_isinf(ay)) {
    t = xneg ? T(2.35619449019234492885lf) : CX_PI_4;
  } else if (tvk_isinf(ax)) {
    t = xneg ? CX_PI : T(0);
  } else if (tvk_isinf(ay)) {
    t = CX_PI_2;
  } else if (ay <= ax) {  // also ax = ay = 0
    T a = ax == T(0) ? T(0) : cx_atan01(ay / ax);
    t = xneg ? CX_PI - a : a;
  } else {
    T a = cx_atan01(ax / ay);
    t = xneg ? CX_PI_2 + a : CX_PI_2 - a;
  }
  return cx_copysign(t, y);
}

// x^2 + y^2 - 1 without cancellation (exact products and sums, one final rounding of the
// small terms), for x, y >= 0 near the unit circle.
T cx_x2y2m1(T x, T y) {
  T p1, e1, p2, e2, s1, t1, s2, t2;
  tvk_two_prod(x, x, p1, e1);
  tvk_two_prod(y, y, p2, e2);
  tvk_two_sum(p1, T(-1), s1, t1);
  tvk_two_sum(s1, p2, s2, t2);
  precise T small = ((t1 + t2) + e1) + e2;
  precise T r = s2 + small;
  return r;
}

// ---------------------------------------------------------------- arithmetic

// c10::complex's operator* (no Annex G recovery; what PyTorch's mul / square / prod compute).
// `precise`: no fma contraction, as on the CPU.
CT cx_mul(CT z, CT w) {
  precise T re = z.x * w.x - z.y * w.y;
  precise T im = z.x * w.y + z.y * w.x;
  return CT(re, im);
}

// The C99 Annex G product (libgcc's __mulsc3 / __muldc3): the plain product, except that a
// NaN + i NaN result recovers the infinity of an infinite factor (or of an overflowed
// partial product). glibc's cpow multiplies y * clog(x) this way.
CT cx_mul_c99(CT z, CT w) {
  T a = z.x, b = z.y, c = w.x, d = w.y;
  precise T ac = a * c, bd = b * d, ad = a * d, bc = b * c;
  precise T x = ac - bd, y = ad + bc;
  if (tvk_isnan(x) && tvk_isnan(y)) {
    bool recalc = false;
    if (tvk_isinf(a) || tvk_isinf(b)) {  // z infinite: box it, NaNs of w become 0
      a = cx_copysign(tvk_isinf(a) ? T(1) : T(0), a);
      b = cx_copysign(tvk_isinf(b) ? T(1) : T(0), b);
      if (tvk_isnan(c)) c = cx_copysign(T(0), c);
      if (tvk_isnan(d)) d = cx_copysign(T(0), d);
      recalc = true;
    }
    if (tvk_isinf(c) || tvk_isinf(d)) {  // w infinite
      c = cx_copysign(tvk_isinf(c) ? T(1) : T(0), c);
      d = cx_copysign(tvk_isinf(d) ? T(1) : T(0), d);
      if (tvk_isnan(a)) a = cx_copysign(T(0), a);
      if (tvk_isnan(b)) b = cx_copysign(T(0), b);
      recalc = true;
    }
    if (!recalc && (tvk_isinf(ac) || tvk_isinf(bd) || tvk_isinf(ad) || tvk_isinf(bc))) {
      // overflow of a partial product
      if (tvk_isnan(a)) a = cx_copysign(T(0), a);
      if (tvk_isnan(b)) b = cx_copysign(T(0), b);
      if (tvk_isnan(c)) c = cx_copysign(T(0), c);
      if (tvk_isnan(d)) d = cx_copysign(T(0), d);
      recalc = true;
    }
    if (recalc) {
      precise T rx = a * c - b * d, ry = a * d + b * c;
      x = CX_INF * rx;
      y = CX_INF * ry;
    }
  }
  return CT(x, y);
}

// c10::complex<T>::operator/= (scaled by the larger of |re w|, |im w|; 0 / 0 parts give
// inf / NaN like the CPU).
CT cx_div(CT z, CT w) {
  T a = z.x, b = z.y, c = w.x, d = w.y;
  T abs_c = abs(c), abs_d = abs(d);
  if (abs_c >= abs_d) {
    if (abs_c == T(0) && abs_d == T(0)) {
      // a / 0 and b / 0, spelled out (no reliance on the device's division by zero)
      return CT(tvk_div_zero(a, abs_c), tvk_div_zero(b, abs_c));
    }
    T rat = cx_fdiv(d, c);
    T scl = cx_fdiv(T(1), c + d * rat);
    return CT((a + b * rat) * scl, (b - a * rat) * scl);
  }
  T rat = cx_fdiv(c, d);
  T scl = cx_fdiv(T(1), d + c * rat);
  return CT((a * rat + b) * scl, (b * rat - a) * scl);
}

// 1 / z as c10 computes it; 1 / 0 = (1 / 0, 0 / 0) = inf + i NaN spelled out (a constant
// numerator through cx_div's zero branch crashes glslc 2023.2's optimizer).
CT cx_reciprocal(CT z) {
  if (z.x == T(0) && z.y == T(0)) return CT(CX_INF, CX_NAN);
  T c = z.x, d = z.y;
  if (abs(c) >= abs(d)) {
    T rat = cx_fdiv(d, c);
    T scl = cx_fdiv(T(1), c + d * rat);
    return CT(scl, cx_plus_zero(-rat) * scl);  // c10's (1 + 0 rat) scl, (0 - 1 rat) scl
  }
  T rat = cx_fdiv(c, d);
  T scl = cx_fdiv(T(1), d + c * rat);
  return CT(cx_plus_zero(rat) * scl, -scl);
}

// ---------------------------------------------------------------- exp / log / sqrt

// glibc cexp: exp(x) (cos y + i sin y), with exp(x) split for large x (no overflow while
// cos y or sin y is small) and the C99 special cases.
CT cx_exp(CT z) {
  T x = z.x, y = z.y;
  if (tvk_isfinite(x)) {
    if (!tvk_isfinite(y)) return CT(CX_NAN, CX_NAN);
    T s, c;
    cx_sincos(y, s, c);
    const T t = CX_EXP_T;
    if (x > t) {
      T et = tvk_exp(t);
      x -= t;
      s *= et;
      c *= et;
      if (x > t) {
        x -= t;
        s *= et;
        c *= et;
      }
    }
    if (x > t) return CT(CX_MAX * c, CX_MAX * s);  // overflow (x > 3t)
    T e = tvk_exp(x);
    return CT(e * c, e * s);
  }
  if (tvk_isinf(x)) {
    if (tvk_isfinite(y)) {
      T v = cx_signbit(x) ? T(0) : CX_INF;
      if (y == T(0)) return CT(v, y);
      T s, c;
      cx_sincos(y, s, c);
      return CT(cx_copysign(v, c), cx_copysign(v, s));
    }
    if (!cx_signbit(x)) return CT(CX_INF, CX_NAN);
    return CT(T(0), cx_copysign(T(0), y));
  }
  return CT(CX_NAN, y == T(0) ? y : CX_NAN);  // x NaN
}

// glibc clog: log|z| computed without cancellation near |z| = 1 (log1p of x^2 + y^2 - 1) and
// without overflow / underflow for huge or tiny parts; atan2(y, x).
CT cx_log(CT z) {
  T x = z.x, y = z.y;
  if (x == T(0) && y == T(0)) return CT(-CX_INF, cx_copysign(cx_signbit(x) ? CX_PI : T(0), y));
  if (tvk_isnan(x) || tvk_isnan(y))
    return CT((tvk_isinf(x) || tvk_isinf(y)) ? CX_INF : CX_NAN, CX_NAN);
  T ax = abs(x), ay = abs(y);
  if (ax < ay) {
    T t = ax;
    ax = ay;
    ay = t;
  }
  int scale = 0;
  if (ax > CX_MAX / T(2)) {
    scale = -1;
    ax *= T(0.5);
    ay = ay >= CX_MIN * T(2) ? ay * T(0.5) : T(0);
  } else if (ax < CX_MIN && ay < CX_MIN) {
    scale = CX_MANT;
    ax = tvk_ldexp(ax, CX_MANT);
    ay = tvk_ldexp(ay, CX_MANT);
  }
  T re;
  if (ax == T(1) && scale == 0) {
    re = tvk_log1p(ay * ay) * T(0.5);
  } else if (ax > T(1) && ax < T(2) && ay < T(1) && scale == 0) {
    T d2m1 = (ax - T(1)) * (ax + T(1));
    if (ay >= CX_EPS) d2m1 += ay * ay;
    re = tvk_log1p(d2m1) * T(0.5);
  } else if (ax < T(1) && ax >= T(0.5) && ay < CX_EPS / T(2) && scale == 0) {
    re = tvk_log1p((ax - T(1)) * (ax + T(1))) * T(0.5);
  } else if (ax < T(1) && ax >= T(0.5) && scale == 0 && ax * ax + ay * ay >= T(0.5)) {
    re = tvk_log1p(cx_x2y2m1(ax, ay)) * T(0.5);
  } else {
    re = tvk_log(cx_hypot(ax, ay)) - T(scale) * CX_LN2;
  }
  return CT(re, cx_atan2(y, x));
}

// glibc csqrt: principal branch, the sign of the imaginary part kept (also for zeros);
// scaled so that hypot(x, y) neither overflows nor underflows.
CT cx_sqrt(CT z) {
  T x = z.x, y = z.y;
  if (!tvk_isfinite(x) || !tvk_isfinite(y)) {
    if (tvk_isinf(y)) return CT(CX_INF, y);
    if (tvk_isinf(x)) {
      if (x < T(0)) return CT(tvk_isnan(y) ? CX_NAN : T(0), cx_copysign(CX_INF, y));
      return CT(x, tvk_isnan(y) ? CX_NAN : cx_copysign(T(0), y));
    }
    return CT(CX_NAN, CX_NAN);
  }
  if (y == T(0)) {
    if (x < T(0)) return CT(T(0), cx_copysign(sqrt(-x), y));
    // sqrt(-0) is -0; the explicit zero (not abs(sqrt(x)), which Mesa 25 folds to sqrt(x)
    // despite SignedZeroInfNanPreserve) gives glibc's +0 real part.
    return CT(x == T(0) ? T(0) : sqrt(x), cx_copysign(T(0), y));
  }
  if (x == T(0)) {
    T r = abs(y) >= T(2) * CX_MIN ? sqrt(T(0.5) * abs(y)) : T(0.5) * sqrt(T(2) * abs(y));
    return CT(r, cx_copysign(r, y));
  }
  int scale = 0;
  if (abs(x) > CX_MAX / T(4)) {
    scale = 1;
    x = tvk_ldexp(x, -2);
    y = tvk_ldexp(y, -2);
  } else if (abs(y) > CX_MAX / T(4)) {
    scale = 1;
    x = abs(x) >= T(4) * CX_MIN ? tvk_ldexp(x, -2) : T(0);
    y = tvk_ldexp(y, -2);
  } else if (abs(x) < T(2) * CX_MIN && abs(y) < T(2) * CX_MIN) {
    scale = -((CX_MANT + 1) / 2);
    x = tvk_ldexp(x, -2 * scale);
    y = tvk_ldexp(y, -2 * scale);
  }
  T d = cx_hypot(x, y), r, s;
  // 2 re(res) im(res) = im(z): the smaller part from the larger one (no cancellation).
  if (x > T(0)) {
    r = sqrt(T(0.5) * (d + x));
    if (scale == 1 && abs(y) < T(1)) {
      s = y / r;
      r = tvk_ldexp(r, scale);
      scale = 0;
    } else {
      s = T(0.5) * (y / r);
    }
  } else {
    s = sqrt(T(0.5) * (d - x));
    if (scale == 1 && abs(y) < T(1)) {
      r = abs(y / s);
      s = tvk_ldexp(s, scale);
      scale = 0;
    } else {
      r = abs(T(0.5) * (y / s));
    }
  }
  if (scale != 0) {
    r = tvk_ldexp(r, scale);
    s = tvk_ldexp(s, scale);
  }
  return CT(r, cx_copysign(s, y));
}

// cpow(x, y) = cexp(y * clog(x)) with the Annex G product (glibc; also 0^0 = NaN + i NaN:
// PyTorch's tensor ^ 0 fills ones before it gets here).
CT cx_pow(CT x, CT y) { return cx_exp(cx_mul_c99(y, cx_log(x))); }

// c10's log1p (its CPU formula): log(u) * (z / (u - 1)) with u = 1 + z, which cancels the
// rounding of u; z itself where u rounds to 1.
CT cx_log1p(CT z) {
  precise T ur = z.x + T(1);
  if (ur == T(1) && z.y == T(0)) return z;
  CT lu = cx_log(CT(ur, z.y));
  precise T um1 = ur - T(1);
  if (um1 == z.x && !tvk_isnan(z.y)) return lu;  // u - 1 == z (equal imaginary parts unless NaN)
  return cx_mul(lu, cx_div(z, CT(um1, z.y)));
}

// c10's expm1: (expm1(x) cos y - 2 sin^2(y / 2)) + i exp(x) sin y.
CT cx_expm1(CT z) {
  // sin / expm1 of a zero return that zero (its sign), as the C functions do
  T sy = z.y == T(0) ? z.y : tvk_sin(z.y);
  T a = z.y == T(0) ? z.y : tvk_sin(z.y / T(2));
  T em1 = z.x == T(0) ? z.x : tvk_expm1(z.x);
  T re = em1 * tvk_cos(z.y) - T(2) * a * a;
  return CT(re, tvk_exp(z.x) * sy);
}

// ---------------------------------------------------------------- hyperbolic / trigonometric

// glibc csinh: sinh x cos y + i cosh x sin y, with exp(|x|) split for large |x|.
CT cx_sinh(CT z) {
  T x = z.x, y = z.y;
  bool neg = cx_signbit(x);
  T ax = abs(x);
  if (tvk_isfinite(x)) {
    if (tvk_isfinite(y)) {
      T s, c;
      cx_sincos(y, s, c);
      if (neg) c = -c;
      const T t = CX_EXP_T;
      if (ax > t) {
        T et = tvk_exp(t), rx = ax - t;
        s *= et / T(2);
        c *= et / T(2);
        if (rx > t) {
          rx -= t;
          s *= et;
          c *= et;
        }
        if (rx > t) return CT(CX_MAX * c, CX_MAX * s);  // overflow (|x| > 3t)
        T e = tvk_exp(rx);
        return CT(e * c, e * s);
      }
      return CT(tvk_sinh(ax) * c, tvk_cosh(ax) * s);
    }
    if (x == T(0)) return CT(x, CX_NAN);
    return CT(CX_NAN, CX_NAN);
  }
  if (tvk_isinf(x)) {
    if (tvk_isfinite(y) && y != T(0)) {
      T s, c;
      cx_sincos(y, s, c);
      T re = cx_copysign(CX_INF, c);
      return CT(neg ? -re : re, cx_copysign(CX_INF, s));
    }
    if (y == T(0)) return CT(neg ? -CX_INF : CX_INF, y);
    return CT(CX_INF, CX_NAN);
  }
  return CT(CX_NAN, y == T(0) ? y : CX_NAN);
}

// glibc ccosh: cosh x cos y + i sinh x sin y, with exp(|x|) split for large |x|.
CT cx_cosh(CT z) {
  T x = z.x, y = z.y;
  if (tvk_isfinite(x)) {
    if (tvk_isfinite(y)) {
      T s, c;
      cx_sincos(y, s, c);
      const T t = CX_EXP_T;
      T ax = abs(x);
      if (ax > t) {
        T et = tvk_exp(t), rx = ax - t;
        if (cx_signbit(x)) s = -s;
        s *= et / T(2);
        c *= et / T(2);
        if (rx > t) {
          rx -= t;
          s *= et;
          c *= et;
        }
        if (rx > t) return CT(CX_MAX * c, CX_MAX * s);
        T e = tvk_exp(rx);
        return CT(e * c, e * s);
      }
      return CT(tvk_cosh(x) * c, tvk_sinh(x) * s);
    }
    return CT(CX_NAN, x == T(0) ? T(0) : CX_NAN);
  }
  if (tvk_isinf(x)) {
    if (tvk_isfinite(y) && y != T(0)) {
      T s, c;
      cx_sincos(y, s, c);
      return CT(cx_copysign(CX_INF, c), cx_copysign(CX_INF, s) * cx_copysign(T(1), x));
    }
    if (y == T(0)) return CT(CX_INF, y * cx_copysign(T(1), x));
    return CT(CX_INF, CX_NAN);
  }
  return CT(CX_NAN, y == T(0) ? y : CX_NAN);
}

// glibc ctanh: (sinh x cosh x + i sin y cos y) / (sinh^2 x + cos^2 y); for large |x| the
// real part is +-1 and the imaginary part 4 sin y cos y / exp(2|x|), computed in steps.
CT cx_tanh(CT z) {
  T x = z.x, y = z.y;
  if (!tvk_isfinite(x) || !tvk_isfinite(y)) {
    if (tvk_isinf(x)) {
      T im = cx_copysign(T(0), y);
      if (tvk_isfinite(y) && abs(y) > T(1)) im = cx_copysign(T(0), tvk_sin(y) * tvk_cos(y));
      return CT(cx_copysign(T(1), x), im);
    }
    if (y == T(0)) return z;
    return CT(x == T(0) ? x : CX_NAN, CX_NAN);
  }
  T s, c;
  cx_sincos(y, s, c);
  const T t = CX_EXP_T2;
  if (abs(x) > t) {
    T e2t = tvk_exp(T(2) * t);
    T im = T(4) * s * c / e2t;
    T rx = abs(x) - t;
    im /= rx > t ? e2t : tvk_exp(T(2) * rx);
    return CT(cx_copysign(T(1), x), im);
  }
  T sh = x, ch = T(1);
  if (abs(x) > CX_MIN) {
    sh = tvk_sinh(x);
    ch = tvk_cosh(x);
  }
  T den = abs(sh) > abs(c) * CX_EPS ? sh * sh + c * c : c * c;
  return CT(sh * ch / den, s * c / den);
}

// sin z = swap(sinh(swap z)), tan z = swap(tanh(swap z)) (swap: (x, y) -> (y, x)), and
// cos z = cosh(-y + i x): the identities glibc's csin / ctan / ccos are written from, case by
// case (special values included).
CT cx_sin(CT z) { return cx_sinh(z.yx).yx; }
CT cx_cos(CT z) { return cx_cosh(CT(-z.y, z.x)); }
CT cx_tan(CT z) { return cx_tanh(z.yx).yx; }

// glibc's __kernel_casinh: asinh of a finite nonzero z, with the imaginary part subtracted
// from pi/2 when `adj` (for acos / acosh). Works in the first quadrant (no cancellation) and
// picks per region a form without cancellation near the branch points +-i.
CT cx_kernel_asinh(CT z, bool adj) {
  T rx = abs(z.x), ix = abs(z.y);
  CT res;
  if (rx >= T(1) / CX_EPS || ix >= T(1) / CX_EPS) {
    // z + sqrt(1 + z^2) ~ 2z: log(2z) without squaring
    CT w = adj ? CT(cx_copysign(ix, z.y), rx) : CT(rx, ix);
    res = cx_log(w);
    res.x += CX_LN2;
  } else if (rx >= T(0.5) && ix < CX_EPS / T(8)) {
    T s = cx_hypot(T(1), rx);
    res.x = tvk_log(rx + s);
    res.y = adj ? cx_atan2(s, z.y) : cx_atan2(ix, s);
  } else if (rx < CX_EPS / T(8) && ix >= T(1.5)) {
    T s = sqrt((ix + T(1)) * (ix - T(1)));
    res.x = tvk_log(ix + s);
    res.y = adj ? cx_atan2(rx, cx_copysign(s, z.y)) : cx_atan2(s, rx);
  } else if (ix > T(1) && ix < T(1.5) && rx < T(0.5)) {
    T ix2m1 = (ix + T(1)) * (ix - T(1));
    if (rx < CX_EPS * CX_EPS) {
      T s = sqrt(ix2m1);
      res.x = tvk_log1p(T(2) * (ix2m1 + ix * s)) / T(2);
      res.y = adj ? cx_atan2(rx, cx_copysign(s, z.y)) : cx_atan2(s, rx);
    } else {
      T rx2 = rx * rx;
      T f = rx2 * (T(2) + rx2 + T(2) * ix * ix);
      T d = sqrt(ix2m1 * ix2m1 + f);
      T dp = d + ix2m1;
      T dm = f / dp;
      T r1 = sqrt((dm + rx2) / T(2));
      T r2 = rx * ix / r1;
      res.x = tvk_log1p(rx2 + dp + T(2) * (rx * r1 + ix * r2)) / T(2);
      res.y = adj ? cx_atan2(rx + r1, cx_copysign(ix + r2, z.y)) : cx_atan2(ix + r2, rx + r1);
    }
  } else if (ix == T(1) && rx < T(0.5)) {
    if (rx < CX_EPS / T(8)) {
      T sr = sqrt(rx);
      res.x = tvk_log1p(T(2) * (rx + sr)) / T(2);
      res.y = adj ? cx_atan2(sr, cx_copysign(T(1), z.y)) : cx_atan2(T(1), sr);
    } else {
      T d = rx * sqrt(T(4) + rx * rx);
      T s1 = sqrt((d + rx * rx) / T(2));
      T s2 = sqrt((d - rx * rx) / T(2));
      res.x = tvk_log1p(rx * rx + d + T(2) * (rx * s1 + s2)) / T(2);
      res.y = adj ? cx_atan2(rx + s1, cx_copysign(T(1) + s2, z.y)) : cx_atan2(T(1) + s2, rx + s1);
    }
  } else if (ix < T(1) && rx < T(0.5)) {
    if (ix >= CX_EPS) {
      T onemix2 = (T(1) + ix) * (T(1) - ix);
      if (rx < CX_EPS * CX_EPS) {
        T s = sqrt(onemix2);
        res.x = tvk_log1p(T(2) * rx / s) / T(2);
        res.y = adj ? cx_atan2(s, z.y) : cx_atan2(ix, s);
      } else {
        T rx2 = rx * rx;
        T f = rx2 * (T(2) + rx2 + T(2) * ix * ix);
        T d = sqrt(onemix2 * onemix2 + f);
        T dp = d + onemix2;
        T dm = f / dp;
        T r1 = sqrt((dp + rx2) / T(2));
        T r2 = rx * ix / r1;
        res.x = tvk_log1p(rx2 + dm + T(2) * (rx * r1 + ix * r2)) / T(2);
        res.y = adj ? cx_atan2(rx + r1, cx_copysign(ix + r2, z.y)) : cx_atan2(ix + r2, rx + r1);
      }
    } else {
      T s = cx_hypot(T(1), rx);
      res.x = tvk_log1p(T(2) * rx * (rx + s)) / T(2);
      res.y = adj ? cx_atan2(s, z.y) : cx_atan2(ix, s);
    }
  } else {
    // log(z + sqrt(1 + z^2)) in the first quadrant
    CT w = cx_sqrt(CT((rx - ix) * (rx + ix) + T(1), T(2) * rx * ix)) + CT(rx, ix);
    if (adj) w = CT(cx_copysign(w.y, z.y), w.x);
    res = cx_log(w);
  }
  return CT(cx_copysign(res.x, z.x), cx_copysign(res.y, adj ? T(1) : z.y));
}

// glibc casinh.
CT cx_asinh(CT z) {
  T x = z.x, y = z.y;
  if (!tvk_isfinite(x) || !tvk_isfinite(y)) {
    if (tvk_isinf(y)) {
      T im = tvk_isnan(x) ? CX_NAN : cx_copysign(tvk_isfinite(x) ? CX_PI_2 : CX_PI_4, y);
      return CT(cx_copysign(CX_INF, x), im);
    }
    if (!tvk_isfinite(x)) {
      bool zero_im = (tvk_isinf(x) && tvk_isfinite(y)) || (tvk_isnan(x) && y == T(0));
      return CT(x, zero_im ? cx_copysign(T(0), y) : CX_NAN);
    }
    return CT(CX_NAN, CX_NAN);
  }
  if (x == T(0) && y == T(0)) return z;
  return cx_kernel_asinh(z, false);
}

// glibc cacosh.
CT cx_acosh(CT z) {
  T x = z.x, y = z.y;
  if (!tvk_isfinite(x) || !tvk_isfinite(y)) {
    if (tvk_isinf(y)) {
      T a = tvk_isinf(x) ? (x < T(0) ? CX_PI - CX_PI_4 : CX_PI_4) : CX_PI_2;
      return CT(CX_INF, tvk_isnan(x) ? CX_NAN : cx_copysign(a, y));
    }
    if (tvk_isinf(x))
      return CT(CX_INF, tvk_isfinite(y) ? cx_copysign(cx_signbit(x) ? CX_PI : T(0), y) : CX_NAN);
    return CT(CX_NAN, x == T(0) ? CX_PI_2 : CX_NAN);
  }
  if (x == T(0) && y == T(0)) return CT(T(0), cx_copysign(CX_PI_2, y));
  CT w = cx_kernel_asinh(CT(-y, x), true);
  return cx_signbit(y) ? CT(w.x, -w.y) : CT(-w.x, w.y);
}

// glibc catanh: re = log((1 + x)^2 + y^2) / ((1 - x)^2 + y^2)) / 4 (log1p form when the
// ratio is not small), im = atan2(2y, 1 - x^2 - y^2) / 2 with the denominator computed
// without cancellation near the unit circle.
CT cx_atanh(CT z) {
  T x = z.x, y = z.y;
  if (!tvk_isfinite(x) || !tvk_isfinite(y)) {
    if (tvk_isinf(y)) return CT(cx_copysign(T(0), x), cx_copysign(CX_PI_2, y));
    if (tvk_isinf(x) || x == T(0))
      return CT(cx_copysign(T(0), x), tvk_isfinite(y) ? cx_copysign(CX_PI_2, y) : CX_NAN);
    return CT(CX_NAN, CX_NAN);
  }
  if (x == T(0) && y == T(0)) return z;
  T re, im;
  if (abs(x) >= T(16) / CX_EPS || abs(y) >= T(16) / CX_EPS) {
    im = cx_copysign(CX_PI_2, y);
    if (abs(y) <= T(1)) {
      re = T(1) / x;
    } else if (abs(x) <= T(1)) {
      re = x / y / y;
    } else {
      T h = cx_hypot(x / T(2), y / T(2));
      re = x / h / h / T(4);
    }
    return CT(re, im);
  }
  if (abs(x) == T(1) && abs(y) < CX_EPS * CX_EPS) {
    re = cx_copysign(T(0.5), x) * (CX_LN2 - tvk_log(abs(y)));
  } else {
    T i2 = abs(y) >= CX_EPS * CX_EPS ? y * y : T(0);
    T num = T(1) + x;
    num = i2 + num * num;
    T den = T(1) - x;
    den = i2 + den * den;
    T f = num / den;
    re = f < T(0.5) ? T(0.25) * tvk_log(f) : T(0.25) * tvk_log1p(T(4) * x / den);
  }
  T ax = abs(x), ay = abs(y);
  if (ax < ay) {
    T t = ax;
    ax = ay;
    ay = t;
  }
  T den;
  if (ay < CX_EPS / T(2)) {
    den = (T(1) - ax) * (T(1) + ax);
    if (den == T(0)) den = abs(den);  // +0: atan2(+-0, +0) = +-0
  } else if (ax >= T(1)) {
    den = (T(1) - ax) * (T(1) + ax) - ay * ay;
  } else if (ax >= T(0.75) || ay >= T(0.5)) {
    den = -cx_x2y2m1(ax, ay);
  } else {
    den = (T(1) - ax) * (T(1) + ax) - ay * ay;
  }
  return CT(re, T(0.5) * cx_atan2(T(2) * y, den));
}

// atan z = swap(atanh(swap z)) (glibc's catan is catanh with the parts exchanged).
CT cx_atan(CT z) { return cx_atanh(z.yx).yx; }

// glibc casin: asin z = -i asinh(i z), with its own NaN cases.
CT cx_asin(CT z) {
  T x = z.x, y = z.y;
  if (tvk_isnan(x) || tvk_isnan(y)) {
    if (x == T(0)) return z;
    if (tvk_isinf(x) || tvk_isinf(y)) return CT(CX_NAN, cx_copysign(CX_INF, y));
    return CT(CX_NAN, CX_NAN);
  }
  CT w = cx_asinh(CT(-y, x));
  return CT(w.y, -w.x);
}

// glibc cacos: pi/2 - asin z for special values, else from the adjusted asinh kernel.
// complex64 only: for complex128 PyTorch's AVX2 / AVX-512 kernels compute
// (pi/2, 0) - asin z instead (cx_acos_vec).
CT cx_acos(CT z) {
  T x = z.x, y = z.y;
  if (!tvk_isfinite(x) || !tvk_isfinite(y) || (x == T(0) && y == T(0))) {
    CT w = cx_asin(z);
    T re = CX_PI_2 - w.x;
    if (re == T(0)) re = abs(re);  // +0
    return CT(re, -w.y);
  }
  CT w = cx_kernel_asinh(CT(-y, x), true);
  return CT(w.y, w.x);
}

// acos of PyTorch's x86 complex128 kernels (Vectorized<complex<double>>::acos):
// (pi/2 - re asin z) + i (0 - im asin z).
CT cx_acos_vec(CT z) {
  CT w = cx_asin(z);
  return CT(CX_PI_2 - w.x, cx_plus_zero(-w.y));
}

#endif  // TVK_COMPLEX_MATH_GLSL
