#version 460
// Sparse family: CSR sparse @ dense (SpMM) for sparse COO tensors whose nonzeros are sorted by
// row (coalesced):
//   out[r, j] = sum_{p in [row_ptr[r], row_ptr[r + 1])} values[p] * dense[cols[p], j]
// One invocation per output element, j fastest: adjacent invocations read adjacent elements of
// a dense row and write adjacent outputs (coalesced); the values / column indices of a row are
// the same for a whole run of invocations (broadcast loads). Each output is summed in a fixed
// order (deterministic, no atomics). Math in fp32 for float16 / bfloat16 / float32 operands
// (KIND_FLOAT32), in fp64 for float64 (KIND_FLOAT64).
//
// Built per kind by tools/build_shaders.py (sparse.variants.toml).
// ABI (mirrored by SpmmPush in src/kernels/sparse.cpp):
//   row_ptr: int64 [rows + 1]; cols: int64 [nnz]; values: [nnz]; dense: contiguous [k, n];
//   out: contiguous [rows, n]. Specialization constants: 0 = local_size_x, 1 = values dtype,
//   2 = dense dtype, 3 = out dtype (-1: read from push constants).
//   Grid: 1-D, any number of workgroups (a grid-stride loop covers rows * n < 2^31).
#extension GL_GOOGLE_include_directive : require

#ifndef KIND
#define KIND 0
#endif
#if KIND == 3
#define TVK_FLOAT64 1
#endif
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const int SPEC_VAL_DT = -1;
layout(constant_id = 2) const int SPEC_DENSE_DT = -1;
layout(constant_id = 3) const int SPEC_OUT_DT = -1;

layout(push_constant) uniform Push {
  uint64_t row_ptr_addr;  //  0: int64 [rows + 1]
  uint64_t cols_addr;     //  8: int64 [nnz]
  uint64_t values_addr;   // 16: [nnz]
  uint64_t dense_addr;    // 24: [k, n]
  uint64_t out_addr;      // 32: [rows, n]
  int rows;               // 40
  int n;                  // 44
  int val_dtype;          // 48
  int dense_dtype;        // 52
  int out_dtype;          // 56
  int pad;                // 60
} pc;                     // 64 bytes

void main() {
  const int val_dt = SPEC_VAL_DT >= 0 ? SPEC_VAL_DT : pc.val_dtype;
  const int dense_dt = SPEC_DENSE_DT >= 0 ? SPEC_DENSE_DT : pc.dense_dtype;
  const int out_dt = SPEC_OUT_DT >= 0 ? SPEC_OUT_DT : pc.out_dtype;
  const uint total = uint(pc.rows) * uint(pc.n);
  const uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint q = gl_GlobalInvocationID.x; q < total; q += step) {
    const int r = int(q / uint(pc.n));
    const int j = int(q % uint(pc.n));
    const int begin = int(load_i64(pc.row_ptr_addr, DT_INT64, r));
    const int end = int(load_i64(pc.row_ptr_addr, DT_INT64, r + 1));
    T acc = T(0);
    for (int p = begin; p < end; ++p) {
      const int col = int(load_i64(pc.cols_addr, DT_INT64, p));
      acc += LOAD_T(pc.values_addr, val_dt, p) * LOAD_T(pc.dense_addr, dense_dt, col * pc.n + j);
    }
    STORE_T(pc.out_addr, out_dt, int(q), acc);
  }
}
