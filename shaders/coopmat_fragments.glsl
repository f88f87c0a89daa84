// Tiles and fragments of the cooperative-matrix kernels that keep 16-bit tiles in shared memory
// and multiply 16 x 16 x 16 blocks with float32 accumulators (shaders/attention_coopmat.comp,
// attention_backward_coopmat.comp, conv_coopmat.comp), and their emulation (COOPMAT_EMULATE 1:
// scalar code over the same tiles, two 16-bit patterns per 32-bit word).
//
// Include after common.glsl, having declared: the constants SG (lanes per subgroup), WG
// (invocations per workgroup), EPL = 256 / SG, the shared arrays sh_h (16-bit values:
// float16_t, or uint words holding two patterns in the emulation) and sh_f (float), and the
// defines COOPMAT_EMULATE, COOPMAT_BF16, UNROLL; LOAD_TILE also needs DMAX and LDH (the row
// stride of the head-dim tiles it fills). Element offsets into sh_h count 16-bit values;
// fragment offsets and strides must keep 16-byte alignment (multiples of 8 values), as the
// real loads need.
#ifndef TVK_COOPMAT_FRAGMENTS_GLSL
#define TVK_COOPMAT_FRAGMENTS_GLSL

int g_lane, g_warp;

// ---------------------------------------------------------------- 16-bit tiles
// Stores values i .. i + 3 (i a multiple of 4) as raw patterns (lo = values i, i + 1).
void put4(int i, uint lo, uint hi) {
#if COOPMAT_EMULATE
  sh_h[i >> 1] = lo;
  sh_h[(i >> 1) + 1] = hi;
#else
  const f16vec2 a = unpackFloat2x16(lo), b = unpackFloat2x16(hi);
  sh_h[i] = a.x;
  sh_h[i + 1] = a.y;
  sh_h[i + 2] = b.x;
  sh_h[i + 3] = b.y;
#endif
}

// 16-bit value i of the tiles as float (emulation only).
#if COOPMAT_EMULATE
float half_at(int i) {
  const uint bits = (sh_h[i >> 1] >> ((i & 1) * 16)) & 0xffffu;
#if COOPMAT_BF16
  return uintBitsToFloat(bits << 16);
#else
  return tvk_half_to_float(bits);
#endif
}
#endif

// A value's 16-bit pattern in the kernel's dtype.
uint pattern_of(float x) {
#if COOPMAT_BF16
  return tvk_float_to_bf16(x);
#else
  return tvk_float_to_half(x);
#endif
}

layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer RefQuad { uvec2 v; };

// Values d .. d + 3 of a row at element offset `at` whose first `n` values exist (d < n
// assumed): one 8-byte load when `vec` (the launcher checked alignment and n % 4 == 0), else
// scalar loads with zeros past n.
uvec2 load4(uint64_t base, int at, int d, int n, bool vec) {
  if (vec) return RefQuad(tvk_elem_addr(base, at + d, 1)).v;
  uint w[4];
  [[unroll]] for (int u = 0; u < 4; ++u)
    w[u] = d + u < n ? uint(RefU16(tvk_elem_addr(base, at + d + u, 1)).v) : 0u;
  return uvec2(w[0] | (w[1] << 16), w[2] | (w[3] << 16));
}

// Rows r of a [rows x DMAX] tile at `tile` (stride LDH) from a tensor whose row r starts at
// base_of_row(r) (negative: no such row, zeros).
#define LOAD_TILE(tile, rows, base, row_at, n, vec)                               \
  for (int idx = int(gl_LocalInvocationIndex); idx < (rows) * (DMAX / 4); idx += WG) { \
    const int r = idx / (DMAX / 4), d = (idx - r * (DMAX / 4)) * 4;               \
    const int at = row_at;                                                        \
    const uvec2 w = at >= 0 && d < (n) ? load4(base, at, d, n, vec) : uvec2(0u);  \
    put4((tile) + r * LDH + d, w.x, w.y);                                         \
  }

// ---------------------------------------------------------------- fragments
#if COOPMAT_EMULATE
// A fragment is where it lies in sh_h (element (r, c) at off + r * rs + c * cs); an
// accumulator is EPL values per lane, lane l holding elements e = l + j * SG (row e / 16,
// column e % 16) of the 16 x 16 block.
struct Frag { int off; int rs; int cs; };
struct Acc { float v[EPL]; };
#define FRAG_A_T Frag
#define FRAG_B_T Frag
#define ACC_T Acc
#else
#define FRAG_A_T coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA>
#define FRAG_B_T coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseB>
#define ACC_T coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>
#endif

void acc_zero(out ACC_T acc) {
#if COOPMAT_EMULATE
  UNROLL for (int j = 0; j < EPL; ++j) acc.v[j] = 0.0;
#else
  acc = ACC_T(0.0);
#endif
}

// The fragment loaders, from the 16-bit tiles in sh_h at element offset `off` with stride `ld`:
//   load_a(f, off, ld)       A, row-major: element (m, k) at off + m * ld + k;
//   load_a_cols(f, off, ld)  A, column-major: element (m, k) at off + k * ld + m (tiles
//                            stored transposed);
//   load_b_rows(f, off, ld)  B, row-major: element (k, n) at off + k * ld + n (v: keys along
//                            k, head dim along n);
//   load_b_cols(f, off, ld)  B, column-major: element (k, n) at off + n * ld + k (k^T from the
//                            row-major k tile).
// The emulation's fragment records where the block lies: (row stride, column stride).
#if COOPMAT_EMULATE
#define TVK_FRAG_LOADER(NAME, FRAG_T, LAYOUT, ROW_STRIDE, COL_STRIDE) \
  void NAME(out FRAG_T f, int off, int ld) { f = Frag(off, ROW_STRIDE, COL_STRIDE); }
#else
#define TVK_FRAG_LOADER(NAME, FRAG_T, LAYOUT, ROW_STRIDE, COL_STRIDE)    \
  void NAME(out FRAG_T f, int off, int ld) {                            \
    coopMatLoad(f, sh_h, uint(off), uint(ld), gl_CooperativeMatrixLayout##LAYOUT); \
  }
#endif
TVK_FRAG_LOADER(load_a, FRAG_A_T, RowMajor, ld, 1)
TVK_FRAG_LOADER(load_a_cols, FRAG_A_T, ColumnMajor, 1, ld)
TVK_FRAG_LOADER(load_b_rows, FRAG_B_T, RowMajor, ld, 1)
TVK_FRAG_LOADER(load_b_cols, FRAG_B_T, ColumnMajor, 1, ld)
#undef TVK_FRAG_LOADER

void mul_add(inout ACC_T acc, FRAG_A_T a, FRAG_B_T b) {
#if COOPMAT_EMULATE
  UNROLL for (int j = 0; j < EPL; ++j) {
    const int e = g_lane + j * SG;
    const int r = e >> 4, c = e & 15;
    float s = acc.v[j];
    [[unroll]] for (int k = 0; k < 16; ++k)
      s += half_at(a.off + r * a.rs + k * a.cs) * half_at(b.off + k * b.rs + c * b.cs);
    acc.v[j] = s;
  }
#else
  acc = coopMatMulAdd(a, b, acc);
#endif
}

// The accumulator into sh_f at `off`, row-major with row stride `ld`.
void store_acc(ACC_T acc, int off, int ld) {
#if COOPMAT_EMULATE
  UNROLL for (int j = 0; j < EPL; ++j) {
    const int e = g_lane + j * SG;
    sh_f[off + (e >> 4) * ld + (e & 15)] = acc.v[j];
  }
#else
  coopMatStore(acc, sh_f, uint(off), uint(ld), gl_CooperativeMatrixLayoutRowMajor);
#endif
}

// Orders a subgroup's shared-memory writes before its reads (and the reads before later
// writes). Called in uniform control flow.
void subgroup_sync() {
#if COOPMAT_EMULATE
  barrier();
#else
  subgroupMemoryBarrierShared();
  subgroupBarrier();
#endif
}

#endif  // TVK_COOPMAT_FRAGMENTS_GLSL
