// L2 private: helpers shared by the launchers (argument checks, dimension coalescing, the
// 32-bit index range check) and the tuning knobs that tests use to force each code path.
// Not part of the public kernels.h contract.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "kernels/kernels.h"
#include "runtime/device.h"
#include "runtime/stream.h"

namespace tvk::kernels {

// Process-wide knobs. Defaults are the production choices; tests flip them to cover every
// path on one device. Not synchronized: change them only while no kernel is being launched.
struct Tuning {
  // Pass operand dtypes as specialization constants (one pipeline per dtype combination, the
  // dtype switches fold away). false: one pipeline per variant, dtypes read at run time.
  bool specialize_dtypes = true;
  uint32_t elementwise_workgroup = 256;
  // Contiguous element-wise calls of 32- / 16-bit floats move four elements per access
  // (shaders/elementwise.comp, SPEC_VEC). false: one element per invocation.
  bool elementwise_vec4 = true;
  uint32_t reduce_workgroup = 128;  // a power of two
  // Upper bound on workgroups per dispatch (the device limit applies too); small values
  // exercise the grid-stride loops.
  uint32_t max_workgroups = 65535;
  enum class ReduceStrategy { Auto, Workgroup, Thread, Split };
  ReduceStrategy reduce_strategy = ReduceStrategy::Auto;
  uint32_t reduce_split_chunk = 4096;  // reduced elements per partial in split mode
  bool reduce_subgroups = true;        // use the subgroup variants when the device has them
};
Tuning& tuning();

// Throws std::invalid_argument("<where>: <message>").
[[noreturn]] void invalid(const char* where, const std::string& message);

constexpr int64_t kMaxIndex = INT32_MAX;

// A geometry in the launchers' own form: dims with size > 1 only, `nstrides` stride arrays.
struct Dims {
  int ndim = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t strides[kMaxOperands][kMaxDims] = {};
};

// Validates ndim and sizes of `g` against `numel`, drops size-1 dims and merges dims that are
// contiguous in every one of the first `nstrides` stride arrays (dim 0 fastest). Throws when
// the sizes do not multiply to `numel`.
Dims coalesce(const char* where, const Geometry& g, int nstrides, int64_t numel);

// Largest reachable |element offset| of stride array `k` (sum of (size - 1) * |stride|),
// saturated at INT64_MAX / 4.
int64_t max_offset(const Dims& d, int k);

// Throws unless every offset of stride array `k` fits in int32.
void check_offsets(const char* where, const Dims& d, int k, const char* what);

void check_dtype(const char* where, DType dtype, const char* what);

// Validates an operand of a launcher: a known dtype, a non-null address aligned to the element
// size, and no float64 operand unless the launch computes in float64 (`f64`). Throws
// std::invalid_argument("<where>: <what>: ...").
void check_operand(const char* where, const Operand& op, const std::string& what, bool f64);

// Workgroup count for `items` work items of `per_group` each, capped by the device and Tuning.
uint32_t group_count(Stream& stream, int64_t items, uint32_t per_group);

// Loop iterations a launcher may plan for one invocation (DeviceCapabilities::
// max_loop_iterations less a margin for the loops of helpers it does not count exactly), or
// INT64_MAX where the device has no limit. Launchers whose per-invocation loop count grows
// with the problem size split the work (successive dispatches carrying state through memory,
// or more invocations) so that their count stays below this.
int64_t loop_budget(Stream& stream);

// Items per chunk when `per_item` loop iterations of every item and `fixed` iterations per
// invocation must fit loop_budget(); at least 1. `total` when the budget allows all of it.
int64_t loop_chunk(Stream& stream, int64_t total, int64_t per_item, int64_t fixed = 0);

// ---- the memory a dispatch touches (Stream::dispatch's `accesses`, hazard tracking) ----
// Adds the span of a strided operand: from its lowest to its highest element (the elements it
// skips in between count too), `ndim` sizes and element strides (any sign). Nothing when a
// size is 0 or the address is 0.
void add_strided(AccessSet& set, uint64_t address, DType dtype, int ndim, const int64_t* sizes,
                 const int64_t* strides, bool write);
// Stride array `k` of `d`.
void add_dims(AccessSet& set, uint64_t address, DType dtype, const Dims& d, int k, bool write);
// `elements` contiguous elements.
void add_dense(AccessSet& set, uint64_t address, DType dtype, int64_t elements, bool write);

}  // namespace tvk::kernels
