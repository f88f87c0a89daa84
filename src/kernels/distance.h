// L2: pairwise distances (shaders/distance.comp). No torch headers.
//
// cdist: p-norm distances between the rows of x1 [B, R1, M] and x2 [B, R2, M]; pdist: between
// the rows of x [N, M], one per pair i < j in row-major order; and the gradients with respect to
// x1 / x. All operands contiguous and of one dtype (Float32 or Float64).
#pragma once

#include <cstdint>

#include "kernels/kernels.h"

namespace tvk {
class Stream;
}

namespace tvk::kernels {

struct Distance {
  ComputeKind kind = ComputeKind::Float32;  // Float32 or Float64 (with shaderFloat64)
  double p = 2;                              // >= 0; infinity for the max norm
  int64_t batch = 1, r1 = 0, r2 = 0, m = 0;  // pdist: r1 = r2 = N, batch = 1
};

// out [B, R1, R2] = ||x1[b, i] - x2[b, j]||_p.
void cdist_forward(Stream& stream, const Distance& problem, Operand x1, Operand x2, Operand out);
// grad_x1 [B, R1, M] from grad and dist [B, R1, R2] (the CPU's subgradients: 0 where dist = 0).
void cdist_backward(Stream& stream, const Distance& problem, Operand grad, Operand x1, Operand x2, Operand dist,
                    Operand grad_x1);
// out [N (N - 1) / 2] = ||x[i] - x[j]||_p for i < j.
void pdist_forward(Stream& stream, const Distance& problem, Operand x, Operand out);
// grad_x [N, M] from grad and dist [N (N - 1) / 2].
void pdist_backward(Stream& stream, const Distance& problem, Operand grad, Operand x, Operand dist, Operand grad_x);

}  // namespace tvk::kernels
