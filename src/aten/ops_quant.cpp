// Weight-only quantized matmul, PyTorch's own ops on vk (torchao's int8 / int4 weight-only
// kernels; src/kernels/quant_matmul.h):
//
//   _weight_int8pack_mm(A [M, K], B int8 [N, K], scales [N]) -> A x B^T * scales
//   _convert_weight_to_int4pack(uint8 [N, K / 2], innerKTiles) -> int32
//       [N / 8, K / (16 * innerKTiles), 32, innerKTiles / 2], the shape CUDA's and MPS's ops
//       give (torch.compile's meta kernel fixes it); its bytes are the input's, row-major
//       [N, K / 2]: the vk kernel reads the nibbles where torchao packed them (byte j of row n
//       = q[n, 2j] << 4 | q[n, 2j + 1]). Like CUDA's and MPS's, the layout is the device's
//       own: a tensor packed on another device is not valid input here, and the reverse.
//   _weight_int4pack_mm(A [M, K], B packed, qGroupSize, qScaleAndZeros [K / qGroupSize, N, 2])
//       -> A x W^T, W(n, k) = (q - 8) * scale + zero (the CPU's and CUDA's formula).
//
// float32, float16 and bfloat16 activations (CUDA's int4 kernel takes bfloat16 only, MPS's all
// three); float32 accumulation; argument errors raise RuntimeError like the CPU's checks. The
// CPU-only _convert_weight_to_int4pack_for_cpu / _weight_int4pack_mm_for_cpu are not
// implemented on vk (as on CUDA): their layout depends on the CPU's vector ISA.
#include <ATen/ATen.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "aten/vk_common.h"
#include "kernels/quant_matmul.h"

namespace tvk::aten {
namespace {

void check_activations(const at::Tensor& A, const char* op) {
  TORCH_CHECK(A.scalar_type() == at::kBFloat16 || A.scalar_type() == at::kHalf ||
                  A.scalar_type() == at::kFloat,
              op, " : expect A to be either 32-bit or 16-bit float tensor.");
  TORCH_CHECK(A.dim() == 2, op, " : expect A to be 2D tensor.");
  TORCH_CHECK(A.size(1) <= 1 || A.stride(1) == 1, op,
              " : A must be contiguous on the last dimension.");
}

void check_same_device(const at::Tensor& A, const at::Tensor& t, const char* op,
                       const char* what) {
  TORCH_CHECK(t.device() == A.device(), op, " : expected ", what, " on ", A.device(),
              ", got a tensor on ", t.device());
}

at::Tensor run(const at::Tensor& A, const at::Tensor& weight_bytes, const at::Tensor& scales,
               kernels::QuantWeights kind, int64_t N, int64_t group_size, const char* op) {
  const int64_t M = A.size(0), K = A.size(1);
  at::Tensor C = at::empty({M, N}, A.options());
  if (M == 0 || N == 0) return C;
  if (K == 0) return C.zero_();
  kernels::WeightOnlyMatmul p;
  p.weights = kind;
  p.M = M;
  p.N = N;
  p.K = K;
  p.lda = M > 1 ? A.stride(0) : K;  // a one-row view may carry any row stride
  p.ldc = N;
  p.group_size = group_size;
  p.a = operand(A, op);
  p.weight = operand(weight_bytes, op);
  p.scales = operand(scales, op);
  p.c = operand(C, op);
  const c10::DeviceGuard guard(A.device());
  tvk::Stream& stream = current_stream(A.device().index());
  translate_errors([&] { kernels::weight_only_matmul(stream, p); });
  return C;
}

at::Tensor weight_int8pack_mm(const at::Tensor& A, const at::Tensor& B, const at::Tensor& scales) {
  const char* op = "_weight_int8pack_mm";
  (void)A.size(1);  // the CPU reads it first: a 1-D A raises IndexError there too
  check_activations(A, op);
  check_same_device(A, B, op, "B");
  check_same_device(A, scales, op, "scales");
  const int64_t N = B.size(0), K = A.size(1);
  TORCH_CHECK(B.scalar_type() == at::kChar, op, " : expect B to be int8 tensor.");
  TORCH_CHECK(B.dim() == 2, op, " : expect B to be 2D tensor.");
  TORCH_CHECK(B.is_contiguous(), op, " : expect B to be contiguous.");
  TORCH_CHECK(B.size(1) == K, op, " : expect B.size(1) == ", K);
  TORCH_CHECK(scales.dim() == 1 && scales.size(0) == N, op,
              " : expect scales to be 1d tensor with size ", N);
  TORCH_CHECK(scales.scalar_type() == A.scalar_type(), op, " : expect scales to be ",
              A.scalar_type(), ", got ", scales.scalar_type());
  return run(A, B, scales.contiguous(), kernels::QuantWeights::Int8, N, 0, op);
}

at::Tensor convert_weight_to_int4pack(const at::Tensor& in, int64_t innerKTiles) {
  const char* op = "_convert_weight_to_int4pack";
  TORCH_CHECK(in.dim() == 2, op, " : expect weight to be 2D tensor.");
  TORCH_CHECK(in.scalar_type() == at::kByte, op, " : expect weight to be kByte.");
  TORCH_CHECK(innerKTiles == 2 || innerKTiles == 4 || innerKTiles == 8, op,
              " : innerKTiles need to be 2, 4, or 8, got ", innerKTiles);
  const int64_t N = in.size(0), K = in.size(1) * 2;
  TORCH_CHECK(N % 8 == 0, op, " : expect N to be a multiple of 8, got ", N);
  TORCH_CHECK(K % (16 * innerKTiles) == 0, op, " : expect K to be a multiple of ",
              16 * innerKTiles, ", got ", K);
  at::Tensor packed = at::empty({N / 8, K / (16 * innerKTiles), 32, innerKTiles / 2},
                                in.options().dtype(at::kInt));
  if (packed.numel() == 0) return packed;
  // Same bytes, row-major [N, K / 2] (int32 view of 4 bytes each: little-endian order kept).
  packed.view(at::kByte).view({N, K / 2}).copy_(in);
  return packed;
}

at::Tensor weight_int4pack_mm(const at::Tensor& A, const at::Tensor& B, int64_t qGroupSize,
                              const at::Tensor& qScaleAndZeros) {
  const char* op = "_weight_int4pack_mm";
  check_activations(A, op);
  check_same_device(A, B, op, "B");
  check_same_device(A, qScaleAndZeros, op, "qScaleAndZeros");
  TORCH_CHECK(B.scalar_type() == at::kInt, op, " : expect B to be int32 tensor.");
  TORCH_CHECK(B.is_contiguous(), op, " : expect B to be contiguous.");
  TORCH_CHECK(B.dim() == 4, op, " : expect B to 4d tensor.");
  TORCH_CHECK(qGroupSize == 32 || qGroupSize == 64 || qGroupSize == 128 || qGroupSize == 256,
              op, ": expect qGroupSize to be 32, 64, 128 or 256, got ", qGroupSize);
  const int64_t N = B.size(0) * 8, K = A.size(1);
  TORCH_CHECK(B.numel() * 8 == N * K, op, " : B holds ", B.numel() * 8, " int4 values, expected N * K = ",
              N * K, " (B packed for K = ", K, "?)");
  TORCH_CHECK(K % qGroupSize == 0, op, " : expect K (", K, ") to be a multiple of qGroupSize");
  TORCH_CHECK(qScaleAndZeros.dim() == 3 && qScaleAndZeros.size(0) == K / qGroupSize &&
                  qScaleAndZeros.size(1) == N && qScaleAndZeros.size(2) == 2,
              op, ": expect qScaleAndZeros to be 3d tensor with sizes [", K / qGroupSize, ", ", N,
              ", 2]");
  TORCH_CHECK(qScaleAndZeros.scalar_type() == A.scalar_type(), op,
              " : expect qScaleAndZeros to be ", A.scalar_type(), ", got ",
              qScaleAndZeros.scalar_type());
  return run(A, B.view(at::kByte), qScaleAndZeros.contiguous(), kernels::QuantWeights::Int4, N,
             qGroupSize, op);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_weight_int8pack_mm", TORCH_FN(weight_int8pack_mm));
  m.impl("_convert_weight_to_int4pack", TORCH_FN(convert_weight_to_int4pack));
  m.impl("_weight_int4pack_mm", TORCH_FN(weight_int4pack_mm));
}

}  // namespace tvk::aten
