// L2, internal to the GEMM family: what gemm.cpp (portable algorithms) and gemm_coopmat.cpp
// (cooperative matrices) share. No torch headers.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/gemm.h"
#include "runtime/device.h"
#include "runtime/stream.h"

namespace tvk::kernels::detail {

// Mirrors `Push` in shaders/gemm.comp and shaders/gemm_coopmat.comp (std430).
struct GemmPush {
  uint64_t a, b, c, bias;
  int64_t a_bs, b_bs, c_bs, bias_bs;
  uint64_t alpha_bits;  // float / int32 in the low 4 bytes, or double / int64
  uint64_t beta_bits;
  int32_t m, n, k, batch;
  int32_t a_rs, a_cs, b_rs, b_cs, c_rs, c_cs, bias_rs, bias_cs;
};
static_assert(sizeof(GemmPush) == 128);
static_assert(sizeof(GemmPush) <= kMaxPushConstantBytes);
static_assert(offsetof(GemmPush, alpha_bits) == 64);
static_assert(offsetof(GemmPush, m) == 80);
static_assert(offsetof(GemmPush, a_rs) == 96);

inline int64_t abs64(int64_t v) { return v < 0 ? -v : v; }

// Workgroups along grid dimension `dim` for `items` tiles: at least 1, at most the device's
// and tuning().max_workgroups' limit (the GEMM kernels loop over the rest).
uint32_t grid_groups(const DeviceCapabilities& caps, int64_t items, int dim);

// `s` in the bit layout of compute kind `kind` (low 4 bytes for the 32-bit kinds).
uint64_t scalar_bits(ComputeKind kind, const GemmScalar& s);

// The push block of a validated, normalized problem (no bias: its fields are 0).
GemmPush gemm_push(const Gemm& p);

// Records `p` (validated, normalized, k > 0) with the portable algorithms only (no split-K,
// no cooperative matrices).
void record_portable(Stream& stream, const Gemm& p);

void set_last_gemm_algorithm(const char* name);

// What a dispatch of `p` (validated, normalized) reads and writes: A, B and the bias read, C
// written, over every batch.
AccessSet gemm_accesses(const Gemm& p);

// Records `p` (validated, normalized, k > 0) on the cooperative-matrix kernel when the device
// has one that passed its self-check and the problem suits it (gemm_coopmat.cpp). False:
// nothing was recorded.
bool try_gemm_coopmat(Stream& stream, const Gemm& p);

}  // namespace tvk::kernels::detail
