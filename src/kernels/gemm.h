// L2: the matrix-multiply family (shaders/gemm.comp). No torch headers.
//
//   C[b] = alpha * A[b] @ B[b] + beta * bias[b]      b < batch, A: m x k, B: k x n, C: m x n
//
// Every operand is a strided matrix view (row, column and batch element strides, any sign,
// 0 = broadcast), so transposed, sliced and broadcast operands need no copies: a transposed
// operand is the same view with its row and column strides swapped (GemmMatrix::transposed).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "kernels/kernels.h"

namespace tvk {
class AccessSet;
class Stream;
}

namespace tvk::kernels {

struct GemmMatrix {
  uint64_t address = 0;  // device address of element (0, 0) of batch 0, aligned to its dtype
                         // size; 0 for an absent bias
  DType dtype = DType::Float32;
  int64_t row_stride = 0;    // elements between (r, c) and (r + 1, c)
  int64_t col_stride = 0;    // elements between (r, c) and (r, c + 1)
  int64_t batch_stride = 0;  // elements between batch b and b + 1 (0: the same matrix for all)

  GemmMatrix transposed() const {
    GemmMatrix t = *this;
    std::swap(t.row_stride, t.col_stride);
    return t;
  }
};

// A scalar in both forms; float kinds read `f` (Float32 kernels round it to float), integer
// kinds read `i` (Int32 kernels wrap it to 32 bits).
struct GemmScalar {
  double f = 0;
  int64_t i = 0;
};

struct Gemm {
  // The compute (accumulator) kind: Float32 for float16 / bfloat16 / float32 operands (fp32
  // accumulation, the result rounded once to C's dtype), Float64 (only on devices with
  // shaderFloat64), Int32 (8/16/32-bit integers: wrapping 32-bit math, so narrower outputs
  // wrap exactly as if computed in their own width) or Int64. Loads convert each operand
  // from its own dtype, the store converts to C's dtype.
  ComputeKind kind = ComputeKind::Float32;
  int64_t batch = 1, m = 0, n = 0, k = 0;
  GemmMatrix a;     // m x k
  GemmMatrix b;     // k x n
  GemmMatrix c;     // m x n, written
  GemmMatrix bias;  // m x n view read as C_in (address 0: none). May be C itself (same
                    // address and strides); must not otherwise overlap C.
  GemmScalar alpha{1.0, 1};
  GemmScalar beta{0.0, 0};
  // float32 A and B on the cooperative-matrix kernel (torch.set_float32_matmul_precision):
  // Exact ("highest", the default), BFloat16x3 ("high": each value split into a bfloat16 hi
  // and lo part, a @ b = hi*hi + hi*lo + lo*hi, a relative error of about 1.5 * 2^-14 per
  // product: below TF32's 2^-10, which "high" allows on CUDA) or BFloat16 ("medium": each value rounded to bfloat16).
  // The portable kernels compute float32 exactly whatever this says, as both precisions allow.
  enum class Float32Inputs { Exact, BFloat16x3, BFloat16 };
  Float32Inputs float32_inputs = Float32Inputs::Exact;
};

// Records the product on `stream`. Semantics (as PyTorch's addmm / baddbmm on the CPU):
//   * beta == 0: the bias is not read (NaN / inf in it do not propagate); no bias: beta is
//     ignored.
//   * k == 0 or alpha == 0: the product is not computed: C = beta * bias (or zeros).
//   * batch * m * n == 0 records nothing.
// C must not overlap A or B (callers compute into a temporary). Several dispatches may be
// recorded (split-K for few outputs with a long k: partial products in a temporary buffer,
// then a combine pass).
// Throws std::invalid_argument for negative sizes, sizes beyond the 32-bit index range, element
// offsets inside one matrix beyond the 32-bit range, zero or misaligned addresses, an invalid
// kind, float64 operands without the Float64 kind, and the Float64 kind on a device without
// shaderFloat64 ("float64 is not supported on this device (no shaderFloat64)").
void gemm(Stream& stream, const Gemm& problem);

// A GEMM epilogue (torch.compile fuses the element-wise ops that consume a product into it):
// GLSL appended to gemm.comp built with GEMM_EPILOGUE, defining
//     void gemm_epilogue(uint64_t args, int bt, int m, int n, T v)
// which receives every output element v = alpha * (A @ B)[m][n] + beta * bias[m][n] of batch bt
// in the compute kind (not rounded to C's dtype) instead of the store of C, and stores
// whatever it computes from it. `args` is the device address of the argument block given to
// gemm() (16-byte aligned, valid while the dispatch runs). The source may use common.glsl,
// math.glsl and ops.glsl (included) and must not redefine gemm.comp's names.
// register_gemm_epilogue() returns an id, memoized by text (`name`, for diagnostics, is the
// first registration's); the GEMM variants the launcher picks are compiled with the run-time
// compiler (generated.h) on first use.
// Throws std::runtime_error without a run-time compiler, std::invalid_argument for a compile
// error (at the first gemm() call that needs the variant).
int64_t register_gemm_epilogue(const std::string& glsl, const std::string& name);

struct GemmEpilogueCall {
  int64_t id = -1;            // from register_gemm_epilogue
  const void* args = nullptr; // the argument block (copied to the stream's parameter memory)
  size_t args_bytes = 0;
  // What the epilogue reads and writes through its argument block (hazard tracking, beside
  // the product's own A, B and bias); null: any memory (ordered against everything).
  const AccessSet* accesses = nullptr;
};

// gemm() with an epilogue: C is not written (problem.c gives only its dtype; its address may
// be 0). Float32 compute kind only; the problem is not transposed and k is not split, so
// (m, n) are always those of the problem as given. One dispatch.
void gemm(Stream& stream, const Gemm& problem, const GemmEpilogueCall& epilogue);

// Knobs for tests and benchmarks (process-wide; change them only while nothing is launched).
struct GemmTuning {
  enum class Algo { Auto, Tiled, Direct, Lanes, Texel };
  // TORCH_VK_GEMM_ALGO=tiled|direct|lanes|texel forces one (lanes only where the device can run
  // it: subgroup broadcast; texel only for A and B of one dtype, float32 / float16 / bfloat16,
  // on devices with texel buffers, others use the automatic choice; texel is the automatic
  // choice of CPU devices)
  Algo algo = Algo::Auto;
  // Non-zero: use this tile shape instead of the profile's (tm, tn: register block of one
  // invocation; wm, wn: invocations along M / N; bk: K step of the tiled algorithm, a
  // multiple of 4).
  uint32_t tm = 0, tn = 0, wm = 0, wn = 0, bk = 0;
  uint32_t stages = 0;  // non-zero: tiled shared buffers per operand (1, or 2 double-buffered)
  // The GPU profiles of one vendor (src/kernels/gemm.cpp): Auto picks them by the device's
  // vendor id on GPUs and the CPU profiles on CPU devices; any other value runs that vendor's
  // GPU profiles on every device (TORCH_VK_GEMM_PROFILE=nvidia|amd|intel|mobile|generic).
  enum class Vendor { Auto, Nvidia, Amd, Intel, Mobile, Generic };
  Vendor gpu_vendor = Vendor::Auto;
  bool vector_loads = true;      // 4-element vector loads (tiled, direct) and 64-bit group
                                 // loads (lanes) of suitably aligned float32 / float16 /
                                 // bfloat16 operands; false: scalar loads everywhere
  bool shuffle_rows = true;      // texel: rows of A shared through subgroupShuffle where the
                                 // workgroup is one subgroup (false: every lane loads them)
  bool transpose_output = true;  // compute C^T = B^T A^T when C is column-major or m == 1
  int64_t split_k_min = 4096;    // k from which few-output problems split k (0: never)
  int64_t split_k_chunk = 1024;  // target k per split

  // The cooperative-matrix kernel (shaders/gemm_coopmat.comp) for float16 A and B:
  //   Auto     where the device has VK_KHR_cooperative_matrix with a float16 -> float32 shape
  //            and the kernel passed its self-check (below), for products of >= 2^18
  //            multiply-adds with m, n >= 16;
  //   Off      never (TORCH_VK_GEMM_COOPMAT=0; TORCH_VK_DISABLE_COOPMAT=1 also hides the
  //            extension from the whole process);
  //   Emulate  the emulated variant (the same tiles and epilogue, scalar code for the matrix
  //            operations) on any device and every float16 product with k > 0
  //            (TORCH_VK_GEMM_COOPMAT=emulate; tests on devices without cooperative matrices).
  // Self-check: before a device's first cooperative-matrix product, a 70 x 52 x 88 product of
  // exactly representable values is run on it and on the portable kernel and the results are
  // compared bit for bit (the one host wait of this path); a mismatch or an error while
  // building the pipeline disables the kernel on that device for the process, with a warning.
  enum class Coopmat { Auto, Off, Emulate };
  Coopmat coopmat = Coopmat::Auto;
  // Non-zero bm: this profile instead of the automatic one (TORCH_VK_GEMM_COOPMAT_TILE=
  // bm,bn,bk,warps_m,warps_n[,cm,cn,ck]; cm / cn / ck only for the emulated kernel, the real
  // one uses a shape the device lists).
  uint32_t coopmat_bm = 0, coopmat_bn = 0, coopmat_bk = 0, coopmat_warps_m = 0,
           coopmat_warps_n = 0, coopmat_cm = 0, coopmat_cn = 0, coopmat_ck = 0;
  // Tests: the self-check sees one wrong element (TORCH_VK_GEMM_COOPMAT_SELF_CHECK=fail).
  bool coopmat_fail_self_check = false;
};
GemmTuning& gemm_tuning();

// The cooperative-matrix kernel's state on a device for A / B of `dtype` (Float16, BFloat16,
// or Float32: float32 operands converted to bfloat16, Gemm::float32_inputs): "unavailable" (no extension or shape for it, no shader in this build, or
// GemmTuning::coopmat Off), "unchecked" (not used yet), "passed" or "failed" (its self-check);
// `shape` gets the M x N x K it uses (0s when unavailable).
const char* gemm_coopmat_state(Stream& stream, uint32_t shape[3], DType dtype = DType::Float16);
// Tests: forgets the self-check results of `stream`'s device, both element types (the next
// product checks again).
void gemm_coopmat_forget_self_check(Stream& stream);

// The algorithm ("tiled", "direct", "lanes", "texel", "coopmat", "coopmat_emulated") of the last product dispatch recorded
// by gemm() on this thread, "" before the first: tests check which path they covered.
const char* last_gemm_algorithm();

// The compute kind PyTorch uses for a matmul in `dtype` (fp32 for float16 / bfloat16).
ComputeKind gemm_kind_for(DType dtype);

}  // namespace tvk::kernels
