// L2 (internal to src/kernels/conv*.cpp): the cooperative-matrix implicit-GEMM convolution
// (shaders/conv_coopmat.comp): when it applies, its tile, and its self-check. No torch headers.
#pragma once
#include <cstdint>

#include "kernels/kernels.h"

namespace tvk {
class Stream;
struct ShaderBinary;
}  // namespace tvk

namespace tvk::kernels::detail {

// The kernel and tile chosen for one implicit GEMM (spec constants 5..9 and 11 of the shader).
struct ConvCoopmatPlan {
  const ShaderBinary* shader = nullptr;
  uint32_t bm = 0, bn = 0, bk = 0, warps_m = 0, warps_n = 0, sg = 0;
  bool emulated = false;
  uint32_t workgroup() const { return warps_m * warps_n * sg; }
};

// Whether the cooperative-matrix kernel runs an implicit GEMM of `dtype` operands with m rows,
// about n columns and r reduced elements (the real kernel: on devices with the 16 x 16 x 16
// shape, for products large enough to fill its tiles, once the self-check passed, which may
// run now), and with which tile.
bool conv_coopmat_plan(Stream& stream, DType dtype, int64_t m, int64_t n, int64_t r,
                       ConvCoopmatPlan* plan);

// Loop iterations of one invocation (DeviceCapabilities::max_loop_iterations, counted as if
// nothing were unrolled) owning `tiles` tiles with a reduction of `r` elements each.
int64_t conv_coopmat_loop_cost(const ConvCoopmatPlan& plan, int64_t tiles, int64_t r);

// True while the self-check records its problems: the implicit GEMM then runs whatever the
// algorithm settings (conv.cpp's use_implicit), on the portable or the cooperative-matrix kernel.
bool conv_coopmat_checking();

void set_last_conv_algorithm(const char* name);

}  // namespace tvk::kernels::detail
