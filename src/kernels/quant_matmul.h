// L2: weight-only quantized matmul (shaders/quant_matmul.comp), the kernels of PyTorch's
// _weight_int8pack_mm and _weight_int4pack_mm on vk. No torch headers.
#pragma once

#include <cstdint>

#include "kernels/kernels.h"

namespace tvk {
class Stream;
}

namespace tvk::kernels {

enum class QuantWeights { Int8, Int4 };

// C [M, N] = A [M, K] x W^T with W dequantized on the fly (float32 accumulation):
//   Int8: weight int8 [N, K] (row n at byte n * K), scales [N]: C = (A x q^T) * scales.
//   Int4: weight uint8 [N, K / 2] (row n at byte n * K / 2; byte j holds k = 2j in its high
//         nibble, 2j + 1 in its low one), scales [K / group_size, N, 2] (scale, zero) pairs:
//         W(n, k) = (q - 8) * scale + zero; group_size in {32, 64, 128, 256}, K % group_size == 0.
// A: float32 / float16 / bfloat16, rows lda elements apart (unit stride along K); scales and C
// (contiguous, rows ldc apart) have A's dtype.
struct WeightOnlyMatmul {
  QuantWeights weights = QuantWeights::Int8;
  int64_t M = 0, N = 0, K = 0, lda = 0, ldc = 0, group_size = 0;
  Operand a, weight, scales, c;
};

// Rows up to which the decode (GEMV) kernel is used: it reads each weight byte once for all rows.
constexpr int64_t kQuantGemvMaxRows = 8;

// Strategies: Tiled (GPUs: the GEMV kernel up to kQuantGemvMaxRows rows, the tiled kernel
// beyond) and Rows (one invocation per output element: decode on CPU devices such as
// lavapipe, where barriers are coroutine switches). By default Rows for up to
// kQuantGemvMaxRows rows on devices of type "cpu", Tiled otherwise;
// TORCH_VK_QUANT_MATMUL_ALGO=rows|tiled forces one (read at every launch).
enum class QuantMatmulAlgo { Rows, Tiled };
QuantMatmulAlgo quant_matmul_algorithm(Stream& stream, int64_t rows);

// Records the matmul (nothing when M or N is 0; C = 0 when K is 0). Throws
// std::invalid_argument for unsupported dtypes or group sizes, null or misaligned addresses,
// sizes beyond the 32-bit index range, or K beyond the device's loop budget.
void weight_only_matmul(Stream& stream, const WeightOnlyMatmul& problem);

}  // namespace tvk::kernels
