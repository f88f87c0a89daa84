#version 460
// Complex element-wise family over interleaved (re, im) storage (complex64: float32 pairs,
// complex128: float64 pairs), with broadcasting and arbitrary strides like the element-wise
// ops (the iteration geometry of a TensorIterator, dim 0 fastest).
//   OP (push constant `op`):
//     0  mul         out = a * b
//     1  div         out = a / b    (c10::complex's scaled division, as the CPU computes it)
//     10 exp  11 log  12 sqrt  13 reciprocal  14 sgn (z / |z|, 0 at 0)   complex out
//     15 angle (atan2(im, re))  16 abs (hypot(re, im))                  real out
//     17 conj (conj_physical)
// Math in fp32 for complex64 (KIND 0), fp64 for complex128 (KIND 3; shaderFloat64 only).
//
// Built per kind by tools/build_shaders.py (complex.variants.toml).
// ABI (mirrored by ComplexPush in src/kernels/complex.cpp):
//   Element q in [0, numel): coordinates c_d over geometry dims (dim 0 fastest); operand o
//   is read at sum_d c_d * stride[o][d] scalars from its address (complex operands: the
//   real scalar index of the real part; the imaginary part follows). Operand 0 = out, 1 = a,
//   2 = b. flags bit 0 / 1: a / b carry the conjugate bit (their stored imaginary part is
//   negated on load).
//   Specialization constant 0 = local_size_x. Grid: 1-D, any number of workgroups.
#extension GL_GOOGLE_include_directive : require

#ifndef KIND
#define KIND 0
#endif
#if KIND == 3
#define TVK_FLOAT64 1
#endif
#include "common.glsl"
#include "math.glsl"

#define CX_MAX_DIMS 8

layout(local_size_x_id = 0) in;

layout(buffer_reference, std430, buffer_reference_align = 4) readonly buffer CxGeometry {
  int ndim;
  int sizes[CX_MAX_DIMS];
  int strides[3 * CX_MAX_DIMS];  // [operand][dim]
};

layout(push_constant) uniform Push {
  uint64_t out_addr;  //  0
  uint64_t a_addr;    //  8
  uint64_t b_addr;    // 16 (binary ops)
  uint64_t geo_addr;  // 24 CxGeometry
  int numel;          // 32
  int op;             // 36
  int a_dtype;        // 40 real dtype of a's scalars
  int b_dtype;        // 44
  int out_dtype;      // 48
  int flags;          // 52
} pc;                 // 56 bytes

#if KIND == KIND_FLOAT64
#define T_NAN TVK_F64_NAN
#define T_INF TVK_F64_INF
#else
#define T_NAN TVK_F32_NAN
#define T_INF TVK_F32_INF
#endif

bool cx_signbit(T x) {
#if KIND == KIND_FLOAT64
  return (unpackDouble2x32(x).y & 0x80000000u) != 0u;
#else
  return tvk_signbit(x);
#endif
}
T cx_copysign(T a, T b) { return cx_signbit(b) ? -abs(a) : abs(a); }

T cx_hypot(T a, T b) {
  if (tvk_isinf(a) || tvk_isinf(b)) return T_INF;
  if (tvk_isnan(a) || tvk_isnan(b)) return T_NAN;
  T x = max(abs(a), abs(b)), y = min(abs(a), abs(b));
  if (x == T(0)) return T(0);
  T r = y / x;
  return x * sqrt(T(1) + r * r);
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
  if (tvk_isnan(x) || tvk_isnan(y)) return T_NAN;
  const T PI = T(3.14159265358979323846lf), PI_2 = T(1.57079632679489661923lf);
  T ax = abs(x), ay = abs(y), t;
  bool xneg = cx_signbit(x);
  if (tvk_isinf(ax) && tvk_isinf(ay)) {
    t = xneg ? T(2.35619449019234492885lf) : T(0.78539816339744830962lf);
  } else if (tvk_isinf(ax)) {
    t = xneg ? PI : T(0);
  } else if (tvk_isinf(ay)) {
    t = PI_2;
  } else if (ay <= ax) {  // also ax = ay = 0
    T a = ax == T(0) ? T(0) : cx_atan01(ay / ax);
    t = xneg ? PI - a : a;
  } else {
    T a = cx_atan01(ax / ay);
    t = xneg ? PI_2 + a : PI_2 - a;
  }
  return cx_copysign(t, y);
}

// c10::complex<T>::operator/= (scaled by the larger of |re b|, |im b|).
void cx_div(T a, T b, T c, T d, out T re, out T im) {
  T abs_c = abs(c), abs_d = abs(d);
  if (abs_c >= abs_d) {
    if (abs_c == T(0) && abs_d == T(0)) {
      re = a / abs_c;
      im = b / abs_c;
    } else {
      T rat = d / c;
      T scl = T(1) / (c + d * rat);
      re = (a + b * rat) * scl;
      im = (b - a * rat) * scl;
    }
  } else {
    T rat = c / d;
    T scl = T(1) / (d + c * rat);
    re = (a * rat + b) * scl;
    im = (b * rat - a) * scl;
  }
}

void main() {
  CxGeometry geo = CxGeometry(pc.geo_addr);
  const int nd = geo.ndim;
  const int stride_step = int(gl_NumWorkGroups.x * gl_WorkGroupSize.x);
  for (int q = int(gl_GlobalInvocationID.x); q < pc.numel; q += stride_step) {
    int rest = q, off_out = 0, off_a = 0, off_b = 0;
    for (int d = 0; d < nd; ++d) {
      int size = geo.sizes[d];
      int c = rest % size;
      rest /= size;
      off_out += c * geo.strides[d];
      off_a += c * geo.strides[CX_MAX_DIMS + d];
      off_b += c * geo.strides[2 * CX_MAX_DIMS + d];
    }
    T xr = LOAD_T(pc.a_addr, pc.a_dtype, off_a);
    T xi = LOAD_T(pc.a_addr, pc.a_dtype, off_a + 1);
    if ((pc.flags & 1) != 0) xi = -xi;
    T rr = T(0), ri = T(0);
    bool real_out = false;
    if (pc.op < 10) {
      T yr = LOAD_T(pc.b_addr, pc.b_dtype, off_b);
      T yi = LOAD_T(pc.b_addr, pc.b_dtype, off_b + 1);
      if ((pc.flags & 2) != 0) yi = -yi;
      if (pc.op == 0) {
        rr = xr * yr - xi * yi;
        ri = xr * yi + xi * yr;
      } else {
        cx_div(xr, xi, yr, yi, rr, ri);
      }
    } else if (pc.op == 10) {  // exp
      T e = tvk_exp(xr);
      if (xi == T(0)) {  // exact for real arguments (also e = inf)
        rr = e;
        ri = xi;
      } else {
        rr = e * tvk_cos(xi);
        ri = e * tvk_sin(xi);
      }
    } else if (pc.op == 11) {  // log
      rr = tvk_log(cx_hypot(xr, xi));
      ri = cx_atan2(xi, xr);
    } else if (pc.op == 12) {  // sqrt (principal branch, the sign of the imaginary part kept)
      if (xr == T(0) && xi == T(0)) {
        rr = T(0);
        ri = xi;
      } else if (tvk_isinf(xi)) {  // C99: sqrt(x + i inf) = inf + i inf for every x
        rr = T_INF;
        ri = xi;
      } else {
        T t = sqrt((abs(xr) + cx_hypot(xr, xi)) * T(0.5));
        if (xr >= T(0)) {
          rr = t;
          ri = xi / (T(2) * t);
        } else {
          rr = abs(xi) / (T(2) * t);
          ri = cx_copysign(t, xi);
        }
      }
    } else if (pc.op == 13) {  // reciprocal
      if (xr == T(0) && xi == T(0)) {  // c10: (1 / 0, 0 / 0), spelled out (no constant folding)
        rr = T_INF;
        ri = T_NAN;
      } else {
        cx_div(T(1), T(0), xr, xi, rr, ri);
      }
    } else if (pc.op == 14) {  // sgn
      T m = cx_hypot(xr, xi);
      if (m != T(0)) {
        rr = xr / m;
        ri = xi / m;
      }
    } else if (pc.op == 15) {  // angle
      rr = cx_atan2(xi, xr);
      real_out = true;
    } else if (pc.op == 16) {  // abs
      rr = cx_hypot(xr, xi);
      real_out = true;
    } else {  // conj
      rr = xr;
      ri = -xi;
    }
    STORE_T(pc.out_addr, pc.out_dtype, off_out, rr);
    if (!real_out) STORE_T(pc.out_addr, pc.out_dtype, off_out + 1, ri);
  }
}
