// L3 helpers shared by the reduction-family op files (ops_reduce.cpp, ops_softmax.cpp):
// running a structured op's meta function (PyTorch's own shape / dtype / error logic) with
// outputs that are allocated here or supplied by the caller (out=), and launching the L2
// reduction over a dim mask.
#pragma once

#include <ATen/ATen.h>
#include <ATen/TensorMeta.h>
#include <ATen/native/Resize.h>

#include <array>
#include <bitset>

#include "aten/torch_compat.h"
#include "kernels/kernels.h"

namespace tvk::aten {

// The checks and resizing of the out= wrappers that PyTorch generates for structured kernels.
inline void resize_out(const at::Tensor& out, at::IntArrayRef sizes, at::IntArrayRef strides,
                       const at::TensorOptions& options) {
  TORCH_CHECK(options.dtype() == out.dtype(), "Expected out tensor to have dtype ",
              options.dtype(), ", but got ", out.dtype(), " instead");
  TORCH_CHECK(options.device() == out.device(), "Expected out tensor to have device ",
              options.device(), ", but got ", out.device(), " instead");
  const bool resized = at::native::resize_output(out, sizes);
  if (resized && !strides.empty()) out.as_strided_(sizes, strides);
}

// Runs `Meta::meta(...)` (e.g. at::meta::structured_amax) and holds its outputs: allocated
// here (functional variants) or the caller's tensors, checked and resized (out= variants).
//   Structured<at::meta::structured_amax> s;      s.meta(self, dim, keepdim);  s.outs[0] ...
//   Structured<at::meta::structured_amax> s(out); ...
template <class Meta, size_t N = 1>
struct Structured final : Meta {
  std::array<at::Tensor, N> outs;
  std::array<bool, N> given{};

  Structured() = default;
  template <class... Ts>
  explicit Structured(const Ts&... out) : outs{out...} {
    static_assert(sizeof...(Ts) == N);
    for (size_t i = 0; i < N; ++i) given[i] = true;
  }
  void set_output_raw_strided(int64_t i, at::IntArrayRef sizes, at::IntArrayRef strides,
                              at::TensorOptions options TVK_META_NAMES_PARAM) override {
    if (given[i])
      resize_out(outs[i], sizes, strides, options);
    else
      outs[i] = strides.empty() ? at::empty(sizes, options) : at::empty_strided(sizes, strides, options);
  }
  void set_output_strided(int64_t i, at::IntArrayRef sizes, at::IntArrayRef strides,
                          at::TensorOptions options TVK_META_NAMES_PARAM) override {
    set_output_raw_strided(i, sizes, strides, options);
  }
  const at::Tensor& maybe_get_output(int64_t i) override { return outs[i]; }
};

using DimMask = std::bitset<64>;

// Accumulator kind for reading `in` into `out` (fp32 for float16 / bfloat16 / float32, fp64
// when either side is float64, int64 for integer outputs).
kernels::ComputeKind reduce_acc_kind(at::ScalarType in, at::ScalarType out);

// Records out = post(scale * op over the dims in `mask` of pre(self)) on the current stream.
// `out` has the reduced shape (with or without the reduced dims, per `keepdim`) and any
// strides; extra.center, when used, must be laid out like `out`.
void launch_reduce(const at::Tensor& self, const DimMask& mask, bool keepdim,
                   const at::Tensor& out, kernels::ReduceOp op, kernels::ComputeKind acc,
                   double scale, const kernels::ReduceExtra& extra, const char* name);

}  // namespace tvk::aten
