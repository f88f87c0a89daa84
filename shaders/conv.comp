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
//   from the push constants).
//   Grid: 1-D, any number of workgroups (grid-stride loop).
#extension GL_GOOGLE_include_directive : require

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
layout(constant_id = 1) const int SPEC_SRC_DT = -1;
layout(constant_id = 2) const int SPEC_DST_DT = -1;
layout(constant_id = 3) const int SPEC_AUX_DT = -1;
layout(constant_id = 4) const int SPEC_AUX2_DT = -1;

layout(push_constant) uniform Push {
  uint64_t src;       //  0: X (im2col, direct) or col (col2im)
  uint64_t dst;       //  8: col (im2col), dX (col2im) or Y (direct)
  uint64_t aux;       // 16: bias per channel of dX (col2im) or W (direct); 0: none
  uint64_t aux2;      // 24: bias per output channel (direct); 0: none
  uint64_t geometry;  // 32: ConvGeometry
  int total;          // 40: invocations
  int src_dtype;      // 44
  int dst_dtype;      // 48
  int aux_dtype;      // 52
  int aux2_dtype;     // 56
  int pad0;           // 60
} pc;                 // 64 bytes

// Sizes and strides in elements; index 0 = depth, 1 = height, 2 = width. Plain int arrays:
// with ivec4 members, lavapipe returned wrong .w components from this block.
layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer ConvGeometry {
  int in_size[4];      // ID, IH, IW, C       (C: channels of X / dX)
  int out_size[4];     // OD, OH, OW, COUT    (COUT: channels of Y, direct only)
  int ksize[4];        // KD, KH, KW, K
  int stride[4];       // [3] = CG (direct: input channels per group)
  int pad[4];          // [3] = COUT_G (direct: output channels per group)
  int dil[4];
  int x_stride[4];     // X / dX strides of d, h, w, c
  int x_stride_n[4];   // [0] = X / dX stride of n
  int col_stride[4];   // col (or Y): [0] = n, [1] = r (Y: channel); l is contiguous (Y: [2] = l)
};

ivec4 v4(int a[4]) { return ivec4(a[0], a[1], a[2], a[3]); }

int g_src_dt, g_dst_dt, g_aux_dt, g_aux2_dt;

void main() {
  g_src_dt = SPEC_SRC_DT >= 0 ? SPEC_SRC_DT : pc.src_dtype;
  g_dst_dt = SPEC_DST_DT >= 0 ? SPEC_DST_DT : pc.dst_dtype;
  g_aux_dt = SPEC_AUX_DT >= 0 ? SPEC_AUX_DT : pc.aux_dtype;
  g_aux2_dt = SPEC_AUX2_DT >= 0 ? SPEC_AUX2_DT : pc.aux2_dtype;
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
