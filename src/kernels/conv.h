// L2: the convolution family (shaders/conv.comp + the GEMM family). No torch headers.
//
// Three primitives of a regular (not transposed) N-d convolution, 1 to 3 spatial dims:
//   forward           Y  = conv(X, W) + bias
//   backward_input    dX = conv^T(dY, W) (+ bias per channel of dX)
//   backward_weight   dW = sum over n, l of dY[n, co, l] * X[n, ci, i(l, k)]
// with X [N, C, *in], W [COUT, C / groups, *kernel], Y [N, COUT, *out]. A transposed
// convolution is the adjoint of a regular one: its forward is backward_input (with the bias),
// its input gradient is forward, its weight gradient is backward_weight with the roles of X and
// dY exchanged (see src/aten/ops_conv.cpp).
//
// Algorithms (src/kernels/conv.cpp): implicit GEMMs for the forward, input and weight
// gradients (GPUs: tiles gathered from X / dY, no column buffer); im2col into a column buffer chunked over the batch, then
// the strided batched GEMM per group; col2im as a gather (deterministic, no atomics); 1x1
// stride-1 unpadded convolutions are plain GEMMs on X; a direct kernel for small
// (C / groups) * kernel volume (depthwise). fp32 accumulation for float16 / bfloat16.
#pragma once

#include <cstdint>

#include "kernels/kernels.h"

namespace tvk {
class Stream;
}

namespace tvk::kernels {

struct ConvShape {
  int spatial = 2;  // 1, 2 or 3
  int64_t batch = 0, in_channels = 0, out_channels = 0, groups = 1;
  // Per spatial dim. `output` is given, not derived (a transposed convolution's output
  // padding makes the input larger than the formula's minimum); every output position must
  // read at least one valid input position or padding, as PyTorch checks.
  int64_t input[3] = {1, 1, 1}, output[3] = {1, 1, 1}, kernel[3] = {1, 1, 1};
  int64_t stride[3] = {1, 1, 1}, padding[3] = {0, 0, 0}, dilation[3] = {1, 1, 1};
};

// An [N, C, *spatial] tensor with any element strides (n, c, then the spatial dims).
struct ConvTensor {
  uint64_t address = 0;
  DType dtype = DType::Float32;
  int64_t strides[5] = {};
};

// Operand dtypes: float16, bfloat16, float32 (fp32 math) or float64 (fp64 math; devices with
// shaderFloat64). All operands of one call share the dtype. Empty problems record nothing
// (backward_weight of an empty batch writes zeros). Throws std::invalid_argument for invalid
// shapes, dtypes, addresses, or offsets beyond the 32-bit index range that chunking cannot
// avoid.
//
// y: any strides whose spatial dims collapse to one stride (contiguous or channels-last).
// w: contiguous [COUT, C / groups, *kernel]. bias: COUT elements or address 0.
void conv_forward(Stream& stream, const ConvShape& shape, const ConvTensor& y, const ConvTensor& x,
                  Operand w, Operand bias);
// dx: any strides. dy: strides whose spatial dims collapse. bias: C elements (added to dX:
// the bias of a transposed convolution) or address 0.
void conv_backward_input(Stream& stream, const ConvShape& shape, const ConvTensor& dx,
                         const ConvTensor& dy, Operand w, Operand bias);
// dw: contiguous [COUT, C / groups, *kernel], overwritten. x: any strides. dy: strides whose
// spatial dims collapse.
void conv_backward_weight(Stream& stream, const ConvShape& shape, Operand dw, const ConvTensor& x,
                          const ConvTensor& dy);

// Knobs for tests (process-wide; change only while nothing is launched).
struct ConvTuning {
  enum class Algo { Auto, Im2col, Direct, Implicit };
  Algo algo = Algo::Auto;              // TORCH_VK_CONV_ALGO=im2col|direct|implicit forces the forward's
  int64_t column_budget = 64ll << 20;  // bytes of column buffer per chunk (TORCH_VK_CONV_COLUMN_BYTES)
  bool gemm_1x1 = true;                // 1x1 stride-1 unpadded convolutions without im2col
  int64_t direct_max_reduction = 32;   // Auto: direct forward when (C / groups) * K <= this
  // The implicit GEMM's tile (shaders/conv.comp OP 3): a workgroup of wm x wn invocations,
  // each with a tm x tn register block, over reduction steps of bk.
  struct ImplicitTile {
    uint32_t tm = 4, tn = 4, wm = 16, wn = 16, bk = 16;
  } implicit_tile;
  // The implicit weight gradient's batch splits (partials summed afterwards): 0 automatic
  // (few output tiles over a long reduction), 1 never, n > 1 that many (at most the batch;
  // TORCH_VK_CONV_WEIGHT_SPLITS).
  int64_t weight_splits = 0;
  // The implicit GEMM on cooperative matrices (shaders/conv_coopmat.comp) for float16 /
  // bfloat16 operands, all three modes:
  //   Auto     on devices listing the 16 x 16 x 16 subgroup shape for the dtype, once its
  //            self-check passed there (TORCH_VK_DISABLE_COOPMAT=1 hides the shapes)
  //   Off      never (TORCH_VK_CONV_COOPMAT=0)
  //   Emulate  the emulated kernel on any device, after the same self-check (tests;
  //            TORCH_VK_CONV_COOPMAT=emulate)
  enum class Coopmat { Auto, Off, Emulate };
  Coopmat coopmat = Coopmat::Auto;
  // Its tile: bm x bn of C per workgroup of warps_m x warps_n subgroups of sg lanes, bk per
  // reduction step; 0: the defaults (TORCH_VK_CONV_COOPMAT_TILE=bm,bn,bk,warps_m,warps_n,sg;
  // the real kernel takes the device's subgroup size).
  struct CoopmatTile {
    uint32_t bm = 0, bn = 0, bk = 0, warps_m = 0, warps_n = 0, sg = 0;
  } coopmat_tile;
  // Makes the self-check fail (tests; TORCH_VK_CONV_COOPMAT_SELF_CHECK=fail).
  bool coopmat_fail_self_check = false;
};
ConvTuning& conv_tuning();

// "unavailable" (no kernel for `dtype` on the device, or Off), "unchecked", "passed" or
// "failed": the cooperative-matrix convolution's self-check on `stream`'s device.
const char* conv_coopmat_state(Stream& stream, DType dtype);
// Forgets its results on the device (tests).
void conv_coopmat_forget_self_check(Stream& stream);
// The kernel of the last convolution primitive recorded in this process: "direct", "gemm" (1x1
// as a GEMM), "im2col", "implicit", "coopmat" or "coopmat_emulated".
const char* last_conv_algorithm();

}  // namespace tvk::kernels
