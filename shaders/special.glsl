// Special functions written once for both float kinds: math.glsl includes this file with
// TVK_R = float and math_f64.glsl again with TVK_R = double. Literals are written with the
// `lf` suffix (so double constants keep their precision) and wrapped in TVK_L, which is
// float(...) in the float instance: glslang folds that at compile time, so no float64 type
// reaches the float32 SPIR-V.
// TVK_R_INF / TVK_R_NAN are that type's infinity and NaN. No include guard on purpose.
//
// Contracts follow PyTorch's CPU kernels (ATen/native/Math.h, BinaryOpsKernel.cpp,
// UnaryOpsKernel.cpp): the same special cases for NaN, infinities and zeros.

// log(exp(a) + exp(b)) without overflow; equal infinities return themselves.
TVK_R tvk_logaddexp(TVK_R a, TVK_R b) {
  if (tvk_isinf(a) && a == b) return a;
  if (tvk_isnan(a) || tvk_isnan(b)) return a + b;
  return max(a, b) + tvk_log1p(tvk_exp(-abs(a - b)));
}

// log2(2^a + 2^b).
TVK_R tvk_logaddexp2(TVK_R a, TVK_R b) {
  if (tvk_isinf(a) && a == b) return a;
  if (tvk_isnan(a) || tvk_isnan(b)) return a + b;
  return max(a, b) + tvk_log1p(tvk_exp2(-abs(a - b))) * TVK_L(1.4426950408889634074lf);
}

// x * log(y) with 0 * log(0) = 0; NaN y propagates even for x == 0.
TVK_R tvk_xlogy(TVK_R x, TVK_R y) {
  if (tvk_isnan(y)) return y;
  return x == TVK_L(0.0lf) ? TVK_L(0.0lf) : x * tvk_log(y);
}

TVK_R tvk_xlog1py(TVK_R x, TVK_R y) {
  if (tvk_isnan(y)) return y;
  return x == TVK_L(0.0lf) ? TVK_L(0.0lf) : x * tvk_log1p(y);
}

// -x * log(x) for x > 0, 0 at 0, -inf for negative x.
TVK_R tvk_entr(TVK_R x) {
  if (tvk_isnan(x)) return x;
  if (x > TVK_L(0.0lf)) return -x * tvk_log(x);
  return x == TVK_L(0.0lf) ? TVK_L(0.0lf) : -TVK_R_INF;
}

// sin(pi x) / (pi x), 1 at 0.
TVK_R tvk_sinc(TVK_R x) {
  if (x == TVK_L(0.0lf)) return TVK_L(1.0lf);
  TVK_R product = TVK_L(3.14159265358979323846lf) * x;
  return tvk_sin(product) / product;
}

// NaN-ignoring max / min: a NaN operand yields the other one.
TVK_R tvk_fmax(TVK_R a, TVK_R b) {
  if (tvk_isnan(a)) return b;
  if (tvk_isnan(b)) return a;
  return max(a, b);
}
TVK_R tvk_fmin(TVK_R a, TVK_R b) {
  if (tvk_isnan(a)) return b;
  if (tvk_isnan(b)) return a;
  return min(a, b);
}

// logit with optional clamping: eps < 0 means no clamp.
TVK_R tvk_logit(TVK_R x, TVK_R eps) {
  if (eps >= TVK_L(0.0lf)) {
    TVK_R hi = TVK_L(1.0lf) - eps;
    x = x < eps ? eps : (x > hi ? hi : x);
  }
  return x == TVK_L(1.0lf) ? TVK_R_INF : tvk_log(x / (TVK_L(1.0lf) - x));
}

// d/dx logit: outside [eps, 1 - eps] the gradient is 0 (NaN outside [0, 1] without eps).
TVK_R tvk_logit_backward(TVK_R dy, TVK_R x, TVK_R eps) {
  bool outside = eps < TVK_L(0.0lf) ? (x < TVK_L(0.0lf) || x > TVK_L(1.0lf))
                                  : (x < eps || x > TVK_L(1.0lf) - eps);
  if (outside) return eps < TVK_L(0.0lf) ? TVK_R_NAN : TVK_L(0.0lf);
  if (x == TVK_L(0.0lf) || x == TVK_L(1.0lf)) return dy * TVK_R_INF;
  return dy / (x * (TVK_L(1.0lf) - x));
}

// Trigamma (the derivative of digamma): reflection below 1/2, recurrence up to x >= 6.5, then
// the asymptotic series.
TVK_R tvk_trigamma(TVK_R x) {
  TVK_R sign = TVK_L(1.0lf);
  TVK_R result = TVK_L(0.0lf);
  if (x < TVK_L(0.5lf)) {
    sign = TVK_L(-1.0lf);
    TVK_R s = tvk_sin(TVK_L(3.14159265358979323846lf) * x);
    result -= TVK_L(9.86960440108935861883lf) / (s * s);
    x = TVK_L(1.0lf) - x;
  }
  for (int i = 0; i < 6; ++i) {
    result += TVK_L(1.0lf) / (x * x);
    x += TVK_L(1.0lf);
  }
  TVK_R ixx = TVK_L(1.0lf) / (x * x);
  result += (TVK_L(1.0lf) + TVK_L(1.0lf) / (TVK_L(2.0lf) * x) +
             ixx * (TVK_L(1.0lf) / TVK_L(6.0lf) -
                    ixx * (TVK_L(1.0lf) / TVK_L(30.0lf) - ixx * (TVK_L(1.0lf) / TVK_L(42.0lf))))) / x;
  return sign * result;
}

// Hurwitz zeta(x, q) = sum_k (k + q)^-x: direct sum of the first terms, then Euler-Maclaurin
// with the Bernoulli-number coefficients (2k)! / B_2k.
TVK_R tvk_zeta(TVK_R x, TVK_R q) {
  const TVK_R kMachEp = TVK_L(1.11022302462515654042e-16lf);
  const TVK_R kCoeff[12] = TVK_R[](
      TVK_L(12.0lf), TVK_L(-720.0lf), TVK_L(30240.0lf), TVK_L(-1209600.0lf), TVK_L(47900160.0lf),
      TVK_L(-1.8924375803183791606e9lf), TVK_L(7.47242496e10lf), TVK_L(-2.950130727918164224e12lf),
      TVK_L(1.1646782814350067249e14lf), TVK_L(-4.5979787224074726105e15lf),
      TVK_L(1.8152105401943546773e17lf), TVK_L(-7.1661652561756670113e18lf));
  if (x == TVK_L(1.0lf)) return TVK_R_INF;
  if (x < TVK_L(1.0lf)) return TVK_R_NAN;
  if (q <= TVK_L(0.0lf)) {
    if (q == floor(q)) return TVK_R_INF;
    if (x != floor(x)) return TVK_R_NAN;
  }
  TVK_R s = tvk_pow(q, -x);
  TVK_R a = q;
  TVK_R b = TVK_L(0.0lf);
  int i = 0;
  while (i < 9 || a <= TVK_L(9.0lf)) {
    i += 1;
    a += TVK_L(1.0lf);
    b = tvk_pow(a, -x);
    s += b;
    if (-kMachEp * s < b && b < kMachEp * s) return s;
  }
  TVK_R w = a;
  s += b * w / (x - TVK_L(1.0lf));
  s -= TVK_L(0.5lf) * b;
  a = TVK_L(1.0lf);
  TVK_R k = TVK_L(0.0lf);
  for (int j = 0; j < 12; ++j) {
    a *= x + k;
    b /= w;
    TVK_R t = a * b / kCoeff[j];
    s += t;
    if (abs(t / s) < kMachEp) return s;
    k += TVK_L(1.0lf);
    a *= x + k;
    b /= w;
    k += TVK_L(1.0lf);
  }
  return s;
}

// polygamma(n, x) for integral n >= 0 (passed as a value of the compute type).
TVK_R tvk_polygamma(TVK_R n, TVK_R x) {
  if (n == TVK_L(0.0lf)) return tvk_digamma(x);
  if (n == TVK_L(1.0lf)) return tvk_trigamma(x);
  TVK_R sign = mod(n, TVK_L(2.0lf)) == TVK_L(1.0lf) ? TVK_L(1.0lf) : TVK_L(-1.0lf);
  return sign * tvk_exp(tvk_lgamma(n + TVK_L(1.0lf))) * tvk_zeta(n + TVK_L(1.0lf), x);
}
