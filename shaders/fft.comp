#version 460
// One 1-D DFT pass over a batch of transforms of length n:
//   y[b, k] = scale * sum_{j < n} x[b, j] * exp(sign * 2 pi i j k / n),  k < out_count,
// sign = -1 (forward) or +1 (inverse). Complex values are interleaved (re, im) scalars.
//   load_mode 0  complex input, x[b, j] = in[b, j] for j < in_count, 0 beyond (padding)
//   load_mode 1  real input, imaginary part 0
//   load_mode 2  Hermitian half spectrum (c2r): x[b, j] = in[b, j] for j <= n / 2 and
//                conj(in[b, n - j]) above; entries at or past in_count read as 0
//   store_real   1: store only the real part (c2r), else (re, im)
// Twiddles come from a table w[m] = exp(-2 pi i m / n), m < n (computed in float64 on the host,
// rounded once), indexed by the exact integer (j * k) mod n: no accumulated angle error.
// MODE 0 (direct): one invocation per output, grid-stride over batch * out_count. Any n.
// MODE 1 (stockham): one workgroup per transform (grid-stride over the batch), radix-4
//   (plus one radix-2 stage for odd log2 n) Stockham autosort in shared memory (natural order in and out, no bit reversal);
//   n a power of two <= MAX_N.
// MODE 2 (pointwise): no transform; y[b, k] = scale * x[b, k] * table[k] for k < n and 0 for
//   n <= k < out_count (out_count may exceed n here: zero padding). The table is the twiddle
//   operand (conjugated when inverse); tw_addr 0 means a table of ones. The building block of
//   Bluestein (chirp multiplies, padding) and of the four-step twiddle multiply
//   (src/aten/ops_fft.cpp composes them with MODE 1 passes).
// ABI (mirrored by FftPush in src/kernels/fft.cpp); strides and offsets in scalars (floats or
// doubles), all < 2^31. Specialization constant 0 = local_size_x.
#extension GL_GOOGLE_include_directive : require

#ifndef KIND
#define KIND 0
#endif
#if KIND == 3
#define TVK_FLOAT64 1
#endif
#include "common.glsl"

#ifndef MODE
#define MODE 0
#endif
#ifndef MAX_N
#define MAX_N 1024
#endif

#if KIND == KIND_FLOAT64
#define C dvec2
#define DT DT_FLOAT64
#else
#define C vec2
#define DT DT_FLOAT32
#endif

layout(local_size_x_id = 0) in;

layout(push_constant) uniform Push {
  uint64_t in_addr;      //  0
  uint64_t out_addr;     //  8
  uint64_t tw_addr;      // 16: n complex twiddles
  int n;                 // 24
  int batch;             // 28
  int in_batch_stride;   // 32
  int in_stride;         // 36
  int in_count;          // 40
  int out_batch_stride;  // 44
  int out_stride;        // 48
  int out_count;         // 52
  int load_mode;         // 56
  int store_real;        // 60
  int inverse;           // 64
  float scale_hi;        // 68: scale = scale_hi + scale_lo (the pair carries float64 precision)
  float scale_lo;        // 72
  int inner_batch;       // 76: transform b sits at (b / inner_batch) * *_outer_stride +
  int in_outer_stride;   // 80:   (b % inner_batch) * *_batch_stride (two-level batch: the
  int out_outer_stride;  // 84:   strided rows of a four-step pass, without a copy)
} pc;                    // 88 bytes

int in_base(int b) {
  int o = b / pc.inner_batch;
  return o * pc.in_outer_stride + (b - o * pc.inner_batch) * pc.in_batch_stride;
}

int out_base(int b) {
  int o = b / pc.inner_batch;
  return o * pc.out_outer_stride + (b - o * pc.inner_batch) * pc.out_batch_stride;
}

C cmul(C a, C b) { return C(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }

C twiddle(int m) {
  C w = C(LOAD_T(pc.tw_addr, DT, 2 * m), LOAD_T(pc.tw_addr, DT, 2 * m + 1));
  if (pc.inverse != 0) w.y = -w.y;
  return w;
}

// x[b, j] of the transform whose input starts at `base` (= in_base(b)).
C load_in(int base, int j) {
  if (pc.load_mode == 1) {
    if (j >= pc.in_count) return C(0);
    return C(LOAD_T(pc.in_addr, DT, base + j * pc.in_stride), 0);
  }
  bool mirrored = pc.load_mode == 2 && j > pc.n / 2;
  int idx = mirrored ? pc.n - j : j;
  if (idx >= pc.in_count) return C(0);
  int o = base + idx * pc.in_stride;
  C v = C(LOAD_T(pc.in_addr, DT, o), LOAD_T(pc.in_addr, DT, o + 1));
  if (mirrored) v.y = -v.y;
  return v;
}

// Stores output k of the transform whose output starts at `base` (= out_base(b)).
void store_out(int base, int k, C v) {
#if KIND == KIND_FLOAT64
  v *= double(pc.scale_hi) + double(pc.scale_lo);
#else
  v *= pc.scale_hi;
#endif
  int o = base + k * pc.out_stride;
  STORE_T(pc.out_addr, DT, o, v.x);
  if (pc.store_real == 0) STORE_T(pc.out_addr, DT, o + 1, v.y);
}

#if MODE == 2

void main() {
  int total = pc.batch * pc.out_count;
  int step = int(gl_NumWorkGroups.x * gl_WorkGroupSize.x);
  for (int q = int(gl_GlobalInvocationID.x); q < total; q += step) {
    int b = q / pc.out_count;
    int k = q - b * pc.out_count;
    C v = C(0);
    if (k < pc.n) {
      v = load_in(in_base(b), k);
      if (pc.tw_addr != uint64_t(0)) v = cmul(v, twiddle(k));
    }
    store_out(out_base(b), k, v);
  }
}

#elif MODE == 0

void main() {
  int total = pc.batch * pc.out_count;
  int step = int(gl_NumWorkGroups.x * gl_WorkGroupSize.x);
  for (int q = int(gl_GlobalInvocationID.x); q < total; q += step) {
    int b = q / pc.out_count;
    int k = q - b * pc.out_count;
    int base = in_base(b);
    C acc = C(0);
    int m = 0;  // (j * k) mod n, kept exact
    for (int j = 0; j < pc.n; ++j) {
      acc += cmul(load_in(base, j), twiddle(m));
      m += k;
      if (m >= pc.n) m -= pc.n;
    }
    store_out(out_base(b), k, acc);
  }
}

#else

shared C buf0[MAX_N];
shared C buf1[MAX_N];

// Multiplies by -i (forward) or +i (inverse): the radix-4 butterfly's inner twiddle.
C rotate_quarter(C a) { return pc.inverse != 0 ? C(-a.y, a.x) : C(a.y, -a.x); }

// Stockham stages from `src` to `dst` merge sub-transforms of length ns into length r ns
// (r = 2 or 4): butterfly j < n / r takes src[j + q n / r] (q < r), twiddled by
// w^(q k) with w = exp(-2 pi i / (r ns)), k = j mod ns (table index q k n / (r ns)), and
// writes the r-point DFT to dst[r (j - k) + k + p ns]. Radix 4 halves the stages (and the
// barriers between them); a final radix-2 stage covers odd log2(n).
#define STOCKHAM_RADIX2(src, dst)                                  \
  for (int j = lid; j < half_n; j += wg) {                         \
    int k = j & (ns - 1);                                          \
    C a0 = src[j];                                                 \
    C a1 = cmul(src[j + half_n], twiddle(k * (pc.n / (2 * ns))));  \
    int d = 2 * (j - k) + k;                                       \
    dst[d] = a0 + a1;                                              \
    dst[d + ns] = a0 - a1;                                         \
  }

#define STOCKHAM_RADIX4(src, dst)                                  \
  for (int j = lid; j < quarter_n; j += wg) {                      \
    int k = j & (ns - 1);                                          \
    int step = k * (pc.n / (4 * ns));                              \
    C a0 = src[j];                                                 \
    C a1 = cmul(src[j + quarter_n], twiddle(step));                \
    C a2 = cmul(src[j + 2 * quarter_n], twiddle(2 * step));        \
    C a3 = cmul(src[j + 3 * quarter_n], twiddle(3 * step));        \
    C s02 = a0 + a2, d02 = a0 - a2;                                \
    C s13 = a1 + a3, d13 = rotate_quarter(a1 - a3);                \
    int d = 4 * (j - k) + k;                                       \
    dst[d] = s02 + s13;                                            \
    dst[d + ns] = d02 + d13;                                       \
    dst[d + 2 * ns] = s02 - s13;                                   \
    dst[d + 3 * ns] = d02 - d13;                                   \
  }

void main() {
  int lid = int(gl_LocalInvocationID.x);
  int wg = int(gl_WorkGroupSize.x);
  int half_n = pc.n / 2, quarter_n = pc.n / 4;
  for (int b = int(gl_WorkGroupID.x); b < pc.batch; b += int(gl_NumWorkGroups.x)) {
    int ib = in_base(b), ob = out_base(b);
    for (int j = lid; j < pc.n; j += wg) buf0[j] = load_in(ib, j);
    barrier();
    bool in0 = true;
    int ns = 1;
    for (; 4 * ns <= pc.n; ns *= 4) {
      if (in0) {
        STOCKHAM_RADIX4(buf0, buf1)
      } else {
        STOCKHAM_RADIX4(buf1, buf0)
      }
      barrier();
      in0 = !in0;
    }
    if (ns < pc.n) {  // log2(n) odd: one radix-2 stage (ns == n / 2)
      if (in0) {
        STOCKHAM_RADIX2(buf0, buf1)
      } else {
        STOCKHAM_RADIX2(buf1, buf0)
      }
      barrier();
      in0 = !in0;
    }
    for (int k = lid; k < pc.out_count; k += wg) store_out(ob, k, in0 ? buf0[k] : buf1[k]);
    barrier();
  }
}

#endif
