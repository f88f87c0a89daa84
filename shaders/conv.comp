#version 460
// Convolution family: the data-movement halves of an im2col convolution and a direct kernel
// for convolutions with few input channels per group (depthwise). The matrix products
// themselves run on the GEMM family (shaders/gemm.comp); src/kernels/conv.cpp orchestrates.
//
// Geometry (all ops): a convolution over 3 spatial dims (1-D / 2-D problems use size-1 leading
// dims) of X [N, C, ID, IH, IW] with a kernel of KD x KH x KW (K = KD*KH*KW elements) giving
// Y [N, COUT, OD, OH, OW] (L = OD*OH*OW positions). Output position o reads input position
//   i = o * stride - pad + k * dilation          (per spatial dim, k the kernel offset)
// and positions outside [0, I) are zero padding.
//
//   OP 0  im2col   col[n][r][l] = X[n][c][i(l, k)] (0 in the padding), r = c * K + k.
//                  One invocation per column element; l is the fastest index and contiguous
//                  in col, so stores are coalesced.
//   OP 1  col2im   dX[n][c][i] = bias[c] + sum over (k, l) with i(l, k) == i of col[n][c*K+k][l]
//                  A gather (each input element sums the columns that touch it): deterministic,
//                  no atomics. Accumulates in the compute type, rounds once on the store.
//   OP 2  direct   Y[n][co][l] = bias[co] + sum over ci < CG, k < K of
//                                X[n][g * CG + ci][i(l, k)] * W[co][ci][k],  g = co / COUT_G
//                  One invocation per output element: for small CG * K (depthwise) where an
//                  im2col buffer and a GEMM would mostly move data.
//   OP 3  implicit GEMM (KIND 0 only), forward (CONV_MODE 0), input gradient (1) or weight
//                  gradient (2).
//                  Forward: per group g, Y_g = W_g @ col_g (+ bias) as a
//                  tiled GEMM of M = COUT_G rows (output channels), N = NB * L columns (the
//                  batch folded into the output positions, so small images still fill tiles)
//                  and R = CG * K reduced elements, where the B tile is gathered from X
//                  through the im2col index math while it is loaded into shared memory: no
//                  column buffer. The tiles follow the GEMM family's tiled algorithm: a
//                  workgroup of WM x WN invocations owns a BM x BN = (WM * TM) x (WN * TN)
//                  tile of Y, steps over R by BK through shared-memory tiles of A (the
//                  weights, r fastest in memory) and B, and every invocation accumulates a
//                  TM x TN register block (rows tm + i * WM, columns tn + j * WN: neighbouring
//                  invocations own neighbouring output positions, so stores and the gather of
//                  X along the width are coalesced). The next step's tiles are fetched into
//                  registers before the current step's products (one barrier pair per step).
//                  Input gradient: dX_g = W_g^T @ dYcol_g (+ bias per channel of dX), M = CG,
//                  N = NB * I (input positions), R = COUT_G * K, the B tile gathered from dY
//                  at the output position each kernel offset maps an input position onto
//                  (0 between strides): the col2im of the im2col path without its buffer.
//                  Geometry as for col2im (x_stride: dX) with col_stride holding dY's strides
//                  (n, channel, position).
//                  Weight gradient (2): dW_g = dY_g @ im2col(X)_g^T, M = COUT_G, N = CG * K,
//                  R = NB * L (the whole batch in one dispatch: dW is written once, rounded
//                  once from the fp32 sums); src = X, aux = dY, dst = dW.
//                  Grid: x over column tiles, y over row tiles, z over the groups (each loops).
//
// Math in fp32 for float16 / bfloat16 / float32 operands (KIND 0), fp64 for float64 (KIND 3).
// Built per (op, kind) by tools/build_shaders.py (conv.variants.toml).
//
// ABI (mirrored by ConvPush / ConvGeometryBlock in src/kernels/conv.cpp):
//   Push constants: operand addresses, the geometry block's address (Stream::upload_params),
//   the invocation count `total` (< 2^31), the operand dtypes.
//   Element offsets are 32-bit (the launcher checks every reachable offset, chunking the batch
//   and offsetting base addresses on the host).
//   Specialization constants: 0 = local_size_x, 1..4 = src, dst, aux, aux2 dtypes (-1: read
//   from the push constants); OP 3 also 5 = TM, 6 = TN, 7 = WM, 8 = WN, 9 = BK (local_size_x
//   must be WM * WN), 10 = CONV_MODE, and `total` = NB, the samples of the chunk.
//   Grid: 1-D, any number of workgroups (grid-stride loop); OP 3 as above.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require

#ifndef KIND
#define KIND 0
#endif
#if KIND == 3
#define TVK_FLOAT64 1
#endif
#include "common.glsl"

#ifndef OP
#define OP 0
#endif

layout(local_size_x_id = 0) in;
#include "conv_params.glsl"

#if OP == 3
// ---------------------------------------------------------------- implicit GEMM (OP 3)
layout(constant_id = 5) const int TM = 4;
layout(constant_id = 6) const int TN = 4;
layout(constant_id = 7) const int WM = 16;
layout(constant_id = 8) const int WN = 16;
layout(constant_id = 9) const int BK = 16;
const int BM = WM * TM;
const int BN = WN * TN;
const int WG = WM * WN;
// Tile elements each invocation fetches per step (A: BM x BK, B: BK x BN).
const int A_PER = (BM * BK + WG - 1) / WG;
const int B_PER = (BK * BN + WG - 1) / WG;

shared float As[BK * BM];  // As[k * BM + m]
shared float Bs[BK * BN];  // Bs[k * BN + n]

layout(constant_id = 10) const int CONV_MODE = 0;  // 0 forward, 1 input, 2 weight gradient
#include "conv_implicit.glsl"

// Tile elements of the next reduction step, fetched into registers before the current step's
// products so that the loads are in flight while the invocation computes.
float a_next[A_PER], b_next[B_PER];

float load_a(int grp, int m, int r) { return load_f32(pc.aux, g_aux_dt, a_offset(grp, m, r)); }
float load_b(int grp, int r, int j) {
  const int at = b_offset(grp, r, j);
  return at < 0 ? 0.0 : load_f32(pc.src, g_src_dt, at);
}

// Fetches the A and B tiles of reduction elements r0 .. r0 + BK - 1 for rows m0.. and columns
// j0.. into a_next / b_next (0 outside the problem).
void fetch(int lid, int grp, int m0, int j0, int r0) {
  [[unroll]] for (int e = 0; e < A_PER; ++e) {
    const int idx = lid + e * WG;
    const int kk = idx % BK, mm = idx / BK;  // r fastest: consecutive weights per row
    const int m = m0 + mm, r = r0 + kk;
    a_next[e] = idx < BM * BK && m < g_M && r < g_R ? load_a(grp, m, r) : 0.0;
  }
  [[unroll]] for (int e = 0; e < B_PER; ++e) {
    const int idx = lid + e * WG;
    const int nn = idx % BN, kk = idx / BN;  // positions fastest: coalesced along the width
    const int j = j0 + nn, r = r0 + kk;
    b_next[e] = idx < BK * BN && j < g_N && r < g_R ? load_b(grp, r, j) : 0.0;
  }
}

void main() {
  read_dtypes();
  setup_implicit();
  const int lid = int(gl_LocalInvocationID.x);
  const int tn = lid % WN, tm = lid / WN;
  const int col_tiles = (g_N + BN - 1) / BN, row_tiles = (g_M + BM - 1) / BM;

  // Uniform loop bounds per workgroup: every invocation reaches the same barriers.
  for (int gz = int(gl_WorkGroupID.z); gz < g_groups * g_splits; gz += int(gl_NumWorkGroups.z)) {
    const int grp = select_group(gz);
    for (int rt = int(gl_WorkGroupID.y); rt < row_tiles; rt += int(gl_NumWorkGroups.y)) {
      const int m0 = rt * BM;
      for (int ct = int(gl_WorkGroupID.x); ct < col_tiles; ct += int(gl_NumWorkGroups.x)) {
        const int j0 = ct * BN;
        float acc[TM][TN];
        [[unroll]] for (int i = 0; i < TM; ++i)
          [[unroll]] for (int j = 0; j < TN; ++j) acc[i][j] = 0.0;
        fetch(lid, grp, m0, j0, 0);
        for (int r0 = 0; r0 < g_R; r0 += BK) {
          barrier();  // the previous step's products are done with the shared tiles
          [[unroll]] for (int e = 0; e < A_PER; ++e) {
            const int idx = lid + e * WG;
            if (idx < BM * BK) As[(idx % BK) * BM + idx / BK] = a_next[e];
          }
          [[unroll]] for (int e = 0; e < B_PER; ++e) {
            const int idx = lid + e * WG;
            if (idx < BK * BN) Bs[idx] = b_next[e];  // Bs[(idx / BN) * BN + idx % BN]
          }
          barrier();
          if (r0 + BK < g_R) fetch(lid, grp, m0, j0, r0 + BK);
          [[unroll]] for (int kk = 0; kk < BK; ++kk) {
            float av[TM], bv[TN];
            [[unroll]] for (int i = 0; i < TM; ++i) av[i] = As[kk * BM + tm + i * WM];
            [[unroll]] for (int j = 0; j < TN; ++j) bv[j] = Bs[kk * BN + tn + j * WN];
            [[unroll]] for (int i = 0; i < TM; ++i)
              [[unroll]] for (int j = 0; j < TN; ++j) acc[i][j] += av[i] * bv[j];
          }
        }
        [[unroll]] for (int i = 0; i < TM; ++i) {
          const int m = m0 + tm + i * WM;
          if (m >= g_M) continue;
          [[unroll]] for (int j = 0; j < TN; ++j) {
            const int jj = j0 + tn + j * WN;
            if (jj < g_N) store_c(grp, m, jj, acc[i][j]);
          }
        }
      }
    }
  }
}
#else
void main() {
  read_dtypes();
  ConvGeometry g = ConvGeometry(pc.geometry);
  const ivec4 in_size = v4(g.in_size), out_size = v4(g.out_size), ksize = v4(g.ksize);
  const ivec4 stride = v4(g.stride), pad = v4(g.pad), dil = v4(g.dil);
  const ivec4 cs = v4(g.col_stride);
  const ivec3 isz = in_size.xyz;
  const ivec3 osz = out_size.xyz;
  const ivec3 ks = ksize.xyz;
  const ivec3 st = stride.xyz;
  const ivec3 pd = pad.xyz;
  const ivec3 dl = dil.xyz;
  const ivec4 xs = v4(g.x_stride);
  const int xsn = g.x_stride_n[0];
  const int C = in_size.w;
  const int K = ksize.w;
  const int L = osz.x * osz.y * osz.z;
  const int step = int(gl_NumWorkGroups.x * gl_WorkGroupSize.x);

#if OP == 0
  // ---- im2col: e = ((n * C + c) * K + k) * L + l ----
  const int CK = C * K;
  for (int e = int(gl_GlobalInvocationID.x); e < pc.total; e += step) {
    int l = e % L;
    int q = e / L;
    int r = q % CK;
    int n = q / CK;
    int c = r / K, k = r - (r / K) * K;
    int kw = k % ks.z, kh = (k / ks.z) % ks.y, kd = k / (ks.z * ks.y);
    int ow = l % osz.z, oh = (l / osz.z) % osz.y, od = l / (osz.z * osz.y);
    ivec3 i = ivec3(od, oh, ow) * st - pd + ivec3(kd, kh, kw) * dl;
    T v = T(0);
    if (all(greaterThanEqual(i, ivec3(0))) && all(lessThan(i, isz)))
      v = LOAD_T(pc.src, g_src_dt, n * xsn + c * xs.w + i.x * xs.x + i.y * xs.y + i.z * xs.z);
    STORE_T(pc.dst, g_dst_dt, n * cs.x + r * cs.y + l, v);
  }
#elif OP == 1
  // ---- col2im (gather): e = ((n * C + c) * ID + id) * IH + ih) * IW + iw ----
  const int I = isz.x * isz.y * isz.z;
  for (int e = int(gl_GlobalInvocationID.x); e < pc.total; e += step) {
    int p = e % I;
    int q = e / I;
    int c = q % C;
    int n = q / C;
    ivec3 i = ivec3(p / (isz.z * isz.y), (p / isz.z) % isz.y, p % isz.z);
    T acc = pc.aux != 0ul ? LOAD_T(pc.aux, g_aux_dt, c) : T(0);
    int base = n * cs.x + c * K * cs.y;
    for (int kd = 0; kd < ks.x; ++kd) {
      int td = i.x + pd.x - kd * dl.x;
      if (td < 0) break;  // decreasing in kd
      int od = td / st.x;
      if (od * st.x != td || od >= osz.x) continue;
      for (int kh = 0; kh < ks.y; ++kh) {
        int th = i.y + pd.y - kh * dl.y;
        if (th < 0) break;
        int oh = th / st.y;
        if (oh * st.y != th || oh >= osz.y) continue;
        for (int kw = 0; kw < ks.z; ++kw) {
          int tw = i.z + pd.z - kw * dl.z;
          if (tw < 0) break;
          int ow = tw / st.z;
          if (ow * st.z != tw || ow >= osz.z) continue;
          int k = (kd * ks.y + kh) * ks.z + kw;
          int l = (od * osz.y + oh) * osz.z + ow;
          acc += LOAD_T(pc.src, g_src_dt, base + k * cs.y + l);
        }
      }
    }
    STORE_T(pc.dst, g_dst_dt, n * xsn + c * xs.w + i.x * xs.x + i.y * xs.y + i.z * xs.z, acc);
  }
#else
  // ---- direct: e = (n * COUT + co) * L + l ----
  const int COUT = out_size.w;
  const int CG = stride.w;
  const int COUT_G = pad.w;
  for (int e = int(gl_GlobalInvocationID.x); e < pc.total; e += step) {
    int l = e % L;
    int q = e / L;
    int co = q % COUT;
    int n = q / COUT;
    int ow = l % osz.z, oh = (l / osz.z) % osz.y, od = l / (osz.z * osz.y);
    ivec3 i0 = ivec3(od, oh, ow) * st - pd;
    int c0 = (co / COUT_G) * CG;
    T acc = pc.aux2 != 0ul ? LOAD_T(pc.aux2, g_aux2_dt, co) : T(0);
    for (int ci = 0; ci < CG; ++ci) {
      int xb = n * xsn + (c0 + ci) * xs.w;
      int wb = (co * CG + ci) * K;
      for (int kd = 0; kd < ks.x; ++kd) {
        int id = i0.x + kd * dl.x;
        if (id < 0 || id >= isz.x) continue;
        for (int kh = 0; kh < ks.y; ++kh) {
          int ih = i0.y + kh * dl.y;
          if (ih < 0 || ih >= isz.y) continue;
          for (int kw = 0; kw < ks.z; ++kw) {
            int iw = i0.z + kw * dl.z;
            if (iw < 0 || iw >= isz.z) continue;
            T x = LOAD_T(pc.src, g_src_dt, xb + id * xs.x + ih * xs.y + iw * xs.z);
            T w = LOAD_T(pc.aux, g_aux_dt, wb + (kd * ks.y + kh) * ks.z + kw);
            acc += x * w;
          }
        }
      }
    }
    STORE_T(pc.dst, g_dst_dt, n * cs.x + co * cs.y + l * cs.z, acc);
  }
#endif
}
#endif  // OP == 3
