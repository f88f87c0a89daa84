// Multi-tensor _foreach_* ops (the foreach path of SGD / Adam / AdamW, clip_grad_norm_'s scaling):
// one element-wise dispatch per call (kernels::elementwise_list, at most 256 tensors each)
// instead of one per tensor, with the same op-table expressions as the per-tensor kernels.
//
// The fast route takes exactly the calls CUDA's multi-tensor kernels take
// (at::native::can_use_fast_route: one device, one dtype across all lists, strided,
// non-overlapping and dense, matching sizes and strides, no type promotion by the scalars),
// restricted to floating dtypes. Everything else goes to PyTorch's per-tensor composites
// (foreach_tensor_*_slow), which reach the native per-tensor kernels: same results, more
// dispatches. Argument checks (list lengths, devices) are PyTorch's own
// (check_foreach_api_restrictions), so errors read as on CPU / CUDA.
//
// A dense tensor is read as a flat run of numel elements from its data pointer; tensors of one
// entry share sizes and strides, so the same flat index names the same element in each.
#include <ATen/ATen.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/native/ForeachUtils.h>
#include <ATen/ops/_foreach_abs_native.h>
#include <ATen/ops/_foreach_add_native.h>
#include <ATen/ops/_foreach_addcdiv_native.h>
#include <ATen/ops/_foreach_addcmul_native.h>
#include <ATen/ops/_foreach_div_native.h>
#include <ATen/ops/_foreach_exp_native.h>
#include <ATen/ops/_foreach_lerp_native.h>
#include <ATen/ops/_foreach_mul_native.h>
#include <ATen/ops/_foreach_neg_native.h>
#include <ATen/ops/_foreach_reciprocal_native.h>
#include <ATen/ops/_foreach_sqrt_native.h>
#include <ATen/ops/_foreach_sub_native.h>
#include <ATen/ops/_foreach_zero_native.h>
#include <ATen/ops/_foreach_acos_native.h>
#include <ATen/ops/_foreach_asin_native.h>
#include <ATen/ops/_foreach_atan_native.h>
#include <ATen/ops/_foreach_ceil_native.h>
#include <ATen/ops/_foreach_cos_native.h>
#include <ATen/ops/_foreach_cosh_native.h>
#include <ATen/ops/_foreach_erf_native.h>
#include <ATen/ops/_foreach_erfc_native.h>
#include <ATen/ops/_foreach_expm1_native.h>
#include <ATen/ops/_foreach_floor_native.h>
#include <ATen/ops/_foreach_frac_native.h>
#include <ATen/ops/_foreach_lgamma_native.h>
#include <ATen/ops/_foreach_log_native.h>
#include <ATen/ops/_foreach_log10_native.h>
#include <ATen/ops/_foreach_log1p_native.h>
#include <ATen/ops/_foreach_log2_native.h>
#include <ATen/ops/_foreach_round_native.h>
#include <ATen/ops/_foreach_rsqrt_native.h>
#include <ATen/ops/_foreach_sigmoid_native.h>
#include <ATen/ops/_foreach_sign_native.h>
#include <ATen/ops/_foreach_sin_native.h>
#include <ATen/ops/_foreach_sinh_native.h>
#include <ATen/ops/_foreach_tan_native.h>
#include <ATen/ops/_foreach_tanh_native.h>
#include <ATen/ops/_foreach_trunc_native.h>
#include <ATen/ops/_foreach_clamp_max_native.h>
#include <ATen/ops/_foreach_clamp_min_native.h>
#include <ATen/ops/_foreach_copy_native.h>
#include <ATen/ops/_foreach_maximum_native.h>
#include <ATen/ops/_foreach_minimum_native.h>
#include <ATen/ops/_foreach_pow_native.h>
#include <torch/library.h>

#include <vector>

#include "aten/launch.h"
#include "aten/vk_common.h"
#include "runtime/stream.h"

namespace tvk::aten {
namespace {

using at::TensorList;
using c10::Scalar;
using kernels::ComputeKind;

bool is_floating(at::ScalarType t) {
  return t == at::kFloat || t == at::kHalf || t == at::kBFloat16 || t == at::kDouble;
}

// Whether a call over `lists` (first list: the one written or copied) takes the multi-tensor
// kernel.
bool fast_route(std::vector<TensorList> lists, at::ArrayRef<Scalar> scalars = {}) {
  const TensorList first = lists.front();
  if (first.empty()) return false;
  const at::Tensor& t0 = first[0];
  if (t0.device().type() != c10::DeviceType::PrivateUse1 || !is_floating(t0.scalar_type()))
    return false;
  return at::native::can_use_fast_route(lists, scalars);
}

// A 0-dim vk tensor used as every entry's scalar operand (the .Tensor overloads), when the
// kernel can read it where it is.
bool device_scalar_ok(const at::Tensor& scalar, TensorList self) {
  if (scalar.dim() != 0 || scalar.device() != self[0].device()) return false;
  const at::ScalarType t = scalar.scalar_type();
  if (at::isComplexType(t)) return false;
  // A float64 operand needs the float64 compute kind.
  return t != at::kDouble || self[0].scalar_type() == at::kDouble;
}

// One operand slot of a list launch.
struct Slot {
  // ZeroDimList: a list of 0-dim tensors, each entry's scalar operand read where it is.
  enum class Kind { List, Scalar, ScalarList, DeviceScalar, ZeroDimList } kind;
  TensorList list{};
  Scalar scalar{};
  at::ArrayRef<Scalar> scalars{};
  const at::Tensor* device_scalar = nullptr;

  static Slot of(TensorList l) { return {Kind::List, l}; }
  static Slot of(const Scalar& s) { return {Kind::Scalar, {}, s}; }
  static Slot of(at::ArrayRef<Scalar> s) { return {Kind::ScalarList, {}, {}, s}; }
  static Slot of(const at::Tensor& t) { return {Kind::DeviceScalar, {}, {}, {}, &t}; }
  static Slot zero_dim(TensorList l) { return {Kind::ZeroDimList, l}; }
};

// Beyond CUDA's fast route: addcmul / addcdiv whose last list holds one 0-dim tensor per entry
// (ASGD's per-parameter eta and mu) of the same dtype and device, the other lists taking the
// fast route. Each 0-dim tensor is read as that entry's scalar operand (stride 0), so it must
// not share memory with its output (a 0-dim view into it: the per-tensor op raises).
bool zero_dim_route(TensorList self, TensorList t1, TensorList t2, const Scalar& value) {
  if (!fast_route({self, t1}, {value}) || t2.size() != self.size()) return false;
  for (const at::Tensor& t : t2)
    if (t.dim() != 0 || t.device() != self[0].device() || t.scalar_type() != self[0].scalar_type())
      return false;
  for (size_t j = 0; j < self.size(); ++j)
    if (at::get_overlap_status(self[j], t2[j]) != at::MemOverlapStatus::No) return false;
  return true;
}

// Uploads host scalars in the compute type (as launch_elementwise does for CPU scalars) and
// returns the device address of the first.
uint64_t upload_scalars(tvk::Stream& stream, ComputeKind kind, at::ArrayRef<Scalar> values) {
  if (kind == ComputeKind::Float64) {
    std::vector<double> v;
    v.reserve(values.size());
    for (const Scalar& s : values) v.push_back(s.to<double>());
    return stream.upload_params(v.data(), v.size() * sizeof(double));
  }
  std::vector<float> v;
  v.reserve(values.size());
  for (const Scalar& s : values) v.push_back(static_cast<float>(s.to<double>()));
  return stream.upload_params(v.data(), v.size() * sizeof(float));
}

// out[j] = op(inputs[j]...) for every j, in one multi-tensor launch. `per_entry_s0`: the op's
// s0 comes from that scalar list, one value per tensor (addcmul / addcdiv values).
void launch_list(const char* op, TensorList out, std::initializer_list<Slot> inputs,
                 const kernels::Scalars& scalars = {},
                 at::ArrayRef<Scalar> per_entry_s0 = {}) {
  const at::ScalarType dtype = out[0].scalar_type();
  const ComputeKind kind = compute_kind_for(dtype);
  tvk::Stream& stream = current_stream(out[0].device().index());
  const size_t scalar_bytes = kind == ComputeKind::Float64 ? sizeof(double) : sizeof(float);
  const kernels::DType scalar_dtype =
      kind == ComputeKind::Float64 ? kernels::DType::Float64 : kernels::DType::Float32;

  kernels::DType dtypes[kernels::kMaxOperands] = {};
  uint64_t base[kernels::kMaxOperands] = {};
  dtypes[0] = vk_dtype(dtype, op);
  int slot = 1;
  for (const Slot& in : inputs) {
    switch (in.kind) {
      case Slot::Kind::List:
      case Slot::Kind::ZeroDimList:
        dtypes[slot] = vk_dtype(in.list[0].scalar_type(), op);
        break;
      case Slot::Kind::Scalar:
        dtypes[slot] = scalar_dtype;
        base[slot] = upload_scalars(stream, kind, {in.scalar});
        break;
      case Slot::Kind::ScalarList:
        dtypes[slot] = scalar_dtype;
        base[slot] = upload_scalars(stream, kind, in.scalars);
        break;
      case Slot::Kind::DeviceScalar:
        dtypes[slot] = vk_dtype(in.device_scalar->scalar_type(), op);
        base[slot] = reinterpret_cast<uint64_t>(in.device_scalar->const_data_ptr());
        break;
    }
    ++slot;
  }

  std::vector<kernels::ElementwiseListEntry> entries(out.size());
  for (size_t j = 0; j < out.size(); ++j) {
    kernels::ElementwiseListEntry& e = entries[j];
    e.numel = out[j].numel();
    e.address[0] = reinterpret_cast<uint64_t>(out[j].data_ptr());
    e.stride[0] = 1;
    int k = 1;
    for (const Slot& in : inputs) {
      switch (in.kind) {
        case Slot::Kind::List:
          e.address[k] = reinterpret_cast<uint64_t>(in.list[j].const_data_ptr());
          e.stride[k] = 1;
          break;
        case Slot::Kind::ScalarList:
          e.address[k] = base[k] + j * scalar_bytes;
          break;
        case Slot::Kind::ZeroDimList:
          e.address[k] = reinterpret_cast<uint64_t>(in.list[j].const_data_ptr());
          break;
        default:
          e.address[k] = base[k];
          break;
      }
      ++k;
    }
    if (!per_entry_s0.empty()) {
      const Scalar& s = per_entry_s0[j];
      e.s0.f[0] = s.to<double>();
    }
  }
  translate_errors([&] {
    kernels::elementwise_list(stream, op, kind, entries.data(), static_cast<int>(entries.size()),
                              dtypes, slot, scalars, !per_entry_s0.empty());
  });
}

std::vector<at::Tensor> empty_like_all(TensorList self) {
  std::vector<at::Tensor> out;
  out.reserve(self.size());
  for (const at::Tensor& t : self) out.push_back(at::empty_like(t));
  return out;
}

kernels::Scalars s0_of(const Scalar& s) { return make_scalars(s); }

// ---- binary ops with a scalar or a scalar list: add / sub (alpha 1), mul, div ----
// `op` reads a (self) and b (the other operand); add / sub scale b by s0 = alpha.
#define TVK_FOREACH_BINARY_SCALAR(NAME, OP, S0)                                             \
  void NAME##_scalar_(TensorList self, const Scalar& scalar) {                              \
    at::native::check_foreach_api_restrictions(self);                                      \
    if (!fast_route({self}, {scalar}))                                                      \
      return at::native::foreach_tensor_##NAME##_scalar_kernel_slow_(self, scalar);         \
    launch_list(OP, self, {Slot::of(self), Slot::of(scalar)}, S0);                         \
  }                                                                                         \
  std::vector<at::Tensor> NAME##_scalar(TensorList self, const Scalar& scalar) {            \
    at::native::check_foreach_api_restrictions(self);                                      \
    if (!fast_route({self}, {scalar}))                                                      \
      return at::native::foreach_tensor_##NAME##_scalar_kernel_slow(self, scalar);          \
    auto out = empty_like_all(self);                                                        \
    launch_list(OP, out, {Slot::of(self), Slot::of(scalar)}, S0);                          \
    return out;                                                                             \
  }                                                                                         \
  void NAME##_scalarlist_(TensorList self, at::ArrayRef<Scalar> scalars) {                  \
    at::native::check_foreach_api_restrictions(self, scalars);                             \
    if (!fast_route({self}, scalars))                                                       \
      return at::native::foreach_tensor_##NAME##_scalarlist_kernel_slow_(self, scalars);    \
    launch_list(OP, self, {Slot::of(self), Slot::of(scalars)}, S0);                        \
  }                                                                                         \
  std::vector<at::Tensor> NAME##_scalarlist(TensorList self, at::ArrayRef<Scalar> scalars) { \
    at::native::check_foreach_api_restrictions(self, scalars);                             \
    if (!fast_route({self}, scalars))                                                       \
      return at::native::foreach_tensor_##NAME##_scalarlist_kernel_slow(self, scalars);     \
    auto out = empty_like_all(self);                                                        \
    launch_list(OP, out, {Slot::of(self), Slot::of(scalars)}, S0);                         \
    return out;                                                                             \
  }

const kernels::Scalars kAlphaOne = make_scalars(1, 0);

TVK_FOREACH_BINARY_SCALAR(add, "add", kAlphaOne)
TVK_FOREACH_BINARY_SCALAR(sub, "sub", kAlphaOne)
TVK_FOREACH_BINARY_SCALAR(mul, "mul", kernels::Scalars{})
TVK_FOREACH_BINARY_SCALAR(div, "div", kernels::Scalars{})
#undef TVK_FOREACH_BINARY_SCALAR

// add / sub with a tensor list and alpha.
#define TVK_FOREACH_ALPHA_LIST(NAME, OP)                                                     \
  void NAME##_list_(TensorList self, TensorList other, const Scalar& alpha) {               \
    at::native::check_foreach_api_restrictions(self, other);                               \
    if (!fast_route({self, other}, {alpha}))                                                \
      return at::native::foreach_tensor_##NAME##_list_kernel_slow_(self, other, alpha);     \
    launch_list(OP, self, {Slot::of(self), Slot::of(other)}, s0_of(alpha));                \
  }                                                                                         \
  std::vector<at::Tensor> NAME##_list(TensorList self, TensorList other, const Scalar& alpha) { \
    at::native::check_foreach_api_restrictions(self, other);                               \
    if (!fast_route({self, other}, {alpha}))                                                \
      return at::native::foreach_tensor_##NAME##_list_kernel_slow(self, other, alpha);      \
    auto out = empty_like_all(self);                                                        \
    launch_list(OP, out, {Slot::of(self), Slot::of(other)}, s0_of(alpha));                 \
    return out;                                                                             \
  }
TVK_FOREACH_ALPHA_LIST(add, "add")
TVK_FOREACH_ALPHA_LIST(sub, "sub")
#undef TVK_FOREACH_ALPHA_LIST

// mul / div with a tensor list. SLOW names PyTorch's composite.
#define TVK_FOREACH_LIST(NAME, OP, SLOW)                                                     \
  void NAME##_list_(TensorList self, TensorList other) {                                    \
    at::native::check_foreach_api_restrictions(self, other);                               \
    if (!fast_route({self, other})) return at::native::SLOW##_(self, other);                \
    launch_list(OP, self, {Slot::of(self), Slot::of(other)});                              \
  }                                                                                         \
  std::vector<at::Tensor> NAME##_list(TensorList self, TensorList other) {                  \
    at::native::check_foreach_api_restrictions(self, other);                               \
    if (!fast_route({self, other})) return at::native::SLOW(self, other);                   \
    auto out = empty_like_all(self);                                                        \
    launch_list(OP, out, {Slot::of(self), Slot::of(other)});                               \
    return out;                                                                             \
  }
TVK_FOREACH_LIST(mul, "mul", foreach_tensor_mul_list_kernel_slow)
TVK_FOREACH_LIST(div, "div", foreach_tensor_div_list_kernel_slow)
#undef TVK_FOREACH_LIST

// mul / div / add by a 0-dim tensor (clip_grad_norm_'s clip coefficient).
void add_tensor_(TensorList self, const at::Tensor& other, const Scalar& alpha) {
  at::native::check_foreach_api_restrictions(self);
  if (!fast_route({self}, {alpha}) || !device_scalar_ok(other, self))
    return at::native::foreach_tensor_add_tensor_kernel_slow_(self, other, alpha);
  launch_list("add", self, {Slot::of(self), Slot::of(other)}, s0_of(alpha));
}
std::vector<at::Tensor> add_tensor(TensorList self, const at::Tensor& other,
                                   const Scalar& alpha) {
  at::native::check_foreach_api_restrictions(self);
  if (!fast_route({self}, {alpha}) || !device_scalar_ok(other, self))
    return at::native::foreach_tensor_add_tensor_kernel_slow(self, other, alpha);
  auto out = empty_like_all(self);
  launch_list("add", out, {Slot::of(self), Slot::of(other)}, s0_of(alpha));
  return out;
}
#define TVK_FOREACH_TENSOR(NAME, OP)                                                         \
  void NAME##_tensor_(TensorList self, const at::Tensor& other) {                           \
    at::native::check_foreach_api_restrictions(self);                                      \
    if (!fast_route({self}) || !device_scalar_ok(other, self))                              \
      return at::native::foreach_tensor_##NAME##_tensor_kernel_slow_(self, other);          \
    launch_list(OP, self, {Slot::of(self), Slot::of(other)});                              \
  }                                                                                         \
  std::vector<at::Tensor> NAME##_tensor(TensorList self, const at::Tensor& other) {         \
    at::native::check_foreach_api_restrictions(self);                                      \
    if (!fast_route({self}) || !device_scalar_ok(other, self))                              \
      return at::native::foreach_tensor_##NAME##_tensor_kernel_slow(self, other);           \
    auto out = empty_like_all(self);                                                        \
    launch_list(OP, out, {Slot::of(self), Slot::of(other)});                               \
    return out;                                                                             \
  }
TVK_FOREACH_TENSOR(mul, "mul")
TVK_FOREACH_TENSOR(div, "div")
#undef TVK_FOREACH_TENSOR

// ---- addcmul / addcdiv: self + value * (t1 op t2), value = s0 ----
#define TVK_FOREACH_ADDC(NAME)                                                              \
  void NAME##_scalar_(TensorList self, TensorList t1, TensorList t2, const Scalar& value) { \
    at::native::check_foreach_api_restrictions(self, t1, t2);                              \
    const bool dense = fast_route({self, t1, t2}, {value});                                 \
    if (!dense && !zero_dim_route(self, t1, t2, value))                                     \
      return at::native::foreach_tensor_##NAME##_scalar_slow_(self, t1, t2, value);         \
    launch_list(#NAME, self,                                                                \
                {Slot::of(self), Slot::of(t1), dense ? Slot::of(t2) : Slot::zero_dim(t2)},  \
                s0_of(value));                                                              \
  }                                                                                         \
  std::vector<at::Tensor> NAME##_scalar(TensorList self, TensorList t1, TensorList t2,      \
                                        const Scalar& value) {                              \
    at::native::check_foreach_api_restrictions(self, t1, t2);                              \
    const bool dense = fast_route({self, t1, t2}, {value});                                 \
    if (!dense && !zero_dim_route(self, t1, t2, value))                                     \
      return at::native::foreach_tensor_##NAME##_scalar_slow(self, t1, t2, value);          \
    auto out = empty_like_all(self);                                                        \
    launch_list(#NAME, out,                                                                 \
                {Slot::of(self), Slot::of(t1), dense ? Slot::of(t2) : Slot::zero_dim(t2)},  \
                s0_of(value));                                                              \
    return out;                                                                             \
  }                                                                                         \
  void NAME##_scalarlist_(TensorList self, TensorList t1, TensorList t2,                    \
                          at::ArrayRef<Scalar> values) {                                    \
    at::native::check_foreach_api_restrictions(self, t1, t2, values);                      \
    if (!fast_route({self, t1, t2}, values))                                                \
      return at::native::foreach_tensor_##NAME##_scalarlist_slow_(self, t1, t2, values);    \
    launch_list(#NAME, self, {Slot::of(self), Slot::of(t1), Slot::of(t2)}, {}, values);    \
  }                                                                                         \
  std::vector<at::Tensor> NAME##_scalarlist(TensorList self, TensorList t1, TensorList t2,  \
                                            at::ArrayRef<Scalar> values) {                  \
    at::native::check_foreach_api_restrictions(self, t1, t2, values);                      \
    if (!fast_route({self, t1, t2}, values))                                                \
      return at::native::foreach_tensor_##NAME##_scalarlist_slow(self, t1, t2, values);     \
    auto out = empty_like_all(self);                                                        \
    launch_list(#NAME, out, {Slot::of(self), Slot::of(t1), Slot::of(t2)}, {}, values);     \
    return out;                                                                             \
  }                                                                                         \
  /* values as a 1-D CPU tensor (the .Tensor overload) */                                   \
  void NAME##_tensor_(TensorList self, TensorList t1, TensorList t2,                        \
                      const at::Tensor& values) {                                           \
    at::native::check_foreach_api_restrictions(self, t1, t2);                              \
    const auto list = at::native::convert_tensor_to_scalar_list(values, self.size());       \
    NAME##_scalarlist_(self, t1, t2, list);                                                 \
  }                                                                                         \
  std::vector<at::Tensor> NAME##_tensor(TensorList self, TensorList t1, TensorList t2,      \
                                        const at::Tensor& values) {                         \
    at::native::check_foreach_api_restrictions(self, t1, t2);                              \
    const auto list = at::native::convert_tensor_to_scalar_list(values, self.size());       \
    return NAME##_scalarlist(self, t1, t2, list);                                           \
  }
TVK_FOREACH_ADDC(addcmul)
TVK_FOREACH_ADDC(addcdiv)
#undef TVK_FOREACH_ADDC

// ---- lerp: self + weight * (end - self); weight a scalar, a scalar list or a tensor list ----
void lerp_scalar_(TensorList self, TensorList end, const Scalar& weight) {
  at::native::check_foreach_api_restrictions(self, end);
  if (!fast_route({self, end}, {weight}))
    return at::native::foreach_tensor_lerp_list_kernel_slow_(self, end, weight);
  launch_list("lerp", self, {Slot::of(self), Slot::of(end), Slot::of(weight)});
}
std::vector<at::Tensor> lerp_scalar(TensorList self, TensorList end, const Scalar& weight) {
  at::native::check_foreach_api_restrictions(self, end);
  if (!fast_route({self, end}, {weight}))
    return at::native::foreach_tensor_lerp_list_kernel_slow(self, end, weight);
  auto out = empty_like_all(self);
  launch_list("lerp", out, {Slot::of(self), Slot::of(end), Slot::of(weight)});
  return out;
}
void lerp_scalarlist_(TensorList self, TensorList end, at::ArrayRef<Scalar> weights) {
  at::native::check_foreach_api_restrictions(self, end, weights);
  if (!fast_route({self, end}, weights))
    return at::native::foreach_tensor_lerp_scalarlist_kernel_slow_(self, end, weights);
  launch_list("lerp", self, {Slot::of(self), Slot::of(end), Slot::of(weights)});
}
std::vector<at::Tensor> lerp_scalarlist(TensorList self, TensorList end,
                                        at::ArrayRef<Scalar> weights) {
  at::native::check_foreach_api_restrictions(self, end, weights);
  if (!fast_route({self, end}, weights))
    return at::native::foreach_tensor_lerp_scalarlist_kernel_slow(self, end, weights);
  auto out = empty_like_all(self);
  launch_list("lerp", out, {Slot::of(self), Slot::of(end), Slot::of(weights)});
  return out;
}
void lerp_list_(TensorList self, TensorList end, TensorList weights) {
  at::native::check_foreach_api_restrictions(self, end, weights);
  if (!fast_route({self, end, weights}))
    return at::native::foreach_tensor_ternary_lerp_slow_(self, end, weights);
  launch_list("lerp", self, {Slot::of(self), Slot::of(end), Slot::of(weights)});
}
std::vector<at::Tensor> lerp_list(TensorList self, TensorList end, TensorList weights) {
  at::native::check_foreach_api_restrictions(self, end, weights);
  if (!fast_route({self, end, weights}))
    return at::native::foreach_tensor_ternary_lerp_slow(self, end, weights);
  auto out = empty_like_all(self);
  launch_list("lerp", out, {Slot::of(self), Slot::of(end), Slot::of(weights)});
  return out;
}

// ---- unary ops ----
#define TVK_FOREACH_UNARY(NAME)                                                             \
  void NAME##_(TensorList self) {                                                           \
    at::native::check_foreach_api_restrictions(self);                                      \
    if (!fast_route({self})) return at::native::foreach_tensor_##NAME##_slow_(self);        \
    launch_list(#NAME, self, {Slot::of(self)});                                             \
  }                                                                                         \
  std::vector<at::Tensor> NAME(TensorList self) {                                           \
    at::native::check_foreach_api_restrictions(self);                                      \
    if (!fast_route({self})) return at::native::foreach_tensor_##NAME##_slow(self);         \
    auto out = empty_like_all(self);                                                        \
    launch_list(#NAME, out, {Slot::of(self)});                                              \
    return out;                                                                             \
  }
TVK_FOREACH_UNARY(sqrt)
TVK_FOREACH_UNARY(neg)
TVK_FOREACH_UNARY(abs)
TVK_FOREACH_UNARY(exp)
TVK_FOREACH_UNARY(reciprocal)
TVK_FOREACH_UNARY(acos)
TVK_FOREACH_UNARY(asin)
TVK_FOREACH_UNARY(atan)
TVK_FOREACH_UNARY(ceil)
TVK_FOREACH_UNARY(cos)
TVK_FOREACH_UNARY(cosh)
TVK_FOREACH_UNARY(erf)
TVK_FOREACH_UNARY(erfc)
TVK_FOREACH_UNARY(expm1)
TVK_FOREACH_UNARY(floor)
TVK_FOREACH_UNARY(frac)
TVK_FOREACH_UNARY(lgamma)
TVK_FOREACH_UNARY(log)
TVK_FOREACH_UNARY(log10)
TVK_FOREACH_UNARY(log1p)
TVK_FOREACH_UNARY(log2)
TVK_FOREACH_UNARY(round)
TVK_FOREACH_UNARY(rsqrt)
TVK_FOREACH_UNARY(sigmoid)
TVK_FOREACH_UNARY(sign)
TVK_FOREACH_UNARY(sin)
TVK_FOREACH_UNARY(sinh)
TVK_FOREACH_UNARY(tan)
TVK_FOREACH_UNARY(tanh)
TVK_FOREACH_UNARY(trunc)
#undef TVK_FOREACH_UNARY

// ---- maximum / minimum and their aliases clamp_min / clamp_max: NaN-propagating, with a
// scalar, a scalar list or a tensor list (PyTorch's slow routes are the clamp_* ones) ----
#define TVK_FOREACH_MINMAX(NAME, OP)                                                        \
  void NAME##_scalar_(TensorList self, const Scalar& scalar) {                              \
    at::native::check_foreach_api_restrictions(self);                                      \
    if (!fast_route({self}, {scalar}))                                                      \
      return at::native::foreach_tensor_##NAME##_scalar_kernel_slow_(self, scalar);         \
    launch_list(OP, self, {Slot::of(self), Slot::of(scalar)});                             \
  }                                                                                         \
  std::vector<at::Tensor> NAME##_scalar(TensorList self, const Scalar& scalar) {            \
    at::native::check_foreach_api_restrictions(self);                                      \
    if (!fast_route({self}, {scalar}))                                                      \
      return at::native::foreach_tensor_##NAME##_scalar_kernel_slow(self, scalar);          \
    auto out = empty_like_all(self);                                                        \
    launch_list(OP, out, {Slot::of(self), Slot::of(scalar)});                              \
    return out;                                                                             \
  }                                                                                         \
  void NAME##_scalarlist_(TensorList self, at::ArrayRef<Scalar> scalars) {                  \
    at::native::check_foreach_api_restrictions(self, scalars);                             \
    if (!fast_route({self}, scalars))                                                       \
      return at::native::foreach_tensor_##NAME##_scalarlist_kernel_slow_(self, scalars);    \
    launch_list(OP, self, {Slot::of(self), Slot::of(scalars)});                            \
  }                                                                                         \
  std::vector<at::Tensor> NAME##_scalarlist(TensorList self, at::ArrayRef<Scalar> scalars) { \
    at::native::check_foreach_api_restrictions(self, scalars);                             \
    if (!fast_route({self}, scalars))                                                       \
      return at::native::foreach_tensor_##NAME##_scalarlist_kernel_slow(self, scalars);     \
    auto out = empty_like_all(self);                                                        \
    launch_list(OP, out, {Slot::of(self), Slot::of(scalars)});                             \
    return out;                                                                             \
  }                                                                                         \
  void NAME##_list_(TensorList self, TensorList other) {                                    \
    at::native::check_foreach_api_restrictions(self, other);                               \
    if (!fast_route({self, other}))                                                         \
      return at::native::foreach_tensor_##NAME##_list_kernel_slow_(self, other);            \
    launch_list(OP, self, {Slot::of(self), Slot::of(other)});                              \
  }                                                                                         \
  std::vector<at::Tensor> NAME##_list(TensorList self, TensorList other) {                  \
    at::native::check_foreach_api_restrictions(self, other);                               \
    if (!fast_route({self, other}))                                                         \
      return at::native::foreach_tensor_##NAME##_list_kernel_slow(self, other);             \
    auto out = empty_like_all(self);                                                        \
    launch_list(OP, out, {Slot::of(self), Slot::of(other)});                               \
    return out;                                                                             \
  }
TVK_FOREACH_MINMAX(clamp_min, "maximum")
TVK_FOREACH_MINMAX(clamp_max, "minimum")
#undef TVK_FOREACH_MINMAX

// ---- pow: list ** scalar / scalar list / list, and scalar ** list ----
void pow_scalar_(TensorList self, const Scalar& exponent) {
  at::native::check_foreach_api_restrictions(self);
  if (!fast_route({self}, {exponent}))
    return at::native::foreach_tensor_pow_scalar_kernel_slow_(self, exponent);
  launch_list("pow", self, {Slot::of(self), Slot::of(exponent)});
}
std::vector<at::Tensor> pow_scalar(TensorList self, const Scalar& exponent) {
  at::native::check_foreach_api_restrictions(self);
  if (!fast_route({self}, {exponent}))
    return at::native::foreach_tensor_pow_scalar_kernel_slow(self, exponent);
  auto out = empty_like_all(self);
  launch_list("pow", out, {Slot::of(self), Slot::of(exponent)});
  return out;
}
void pow_scalarlist_(TensorList self, at::ArrayRef<Scalar> exponents) {
  at::native::check_foreach_api_restrictions(self, exponents);
  if (!fast_route({self}, exponents))
    return at::native::foreach_tensor_pow_scalarlist_kernel_slow_(self, exponents);
  launch_list("pow", self, {Slot::of(self), Slot::of(exponents)});
}
std::vector<at::Tensor> pow_scalarlist(TensorList self, at::ArrayRef<Scalar> exponents) {
  at::native::check_foreach_api_restrictions(self, exponents);
  if (!fast_route({self}, exponents))
    return at::native::foreach_tensor_pow_scalarlist_kernel_slow(self, exponents);
  auto out = empty_like_all(self);
  launch_list("pow", out, {Slot::of(self), Slot::of(exponents)});
  return out;
}
void pow_list_(TensorList self, TensorList exponents) {
  at::native::check_foreach_api_restrictions(self, exponents);
  if (!fast_route({self, exponents}))
    return at::native::foreach_tensor_pow_list_kernel_slow_(self, exponents);
  launch_list("pow", self, {Slot::of(self), Slot::of(exponents)});
}
std::vector<at::Tensor> pow_list(TensorList self, TensorList exponents) {
  at::native::check_foreach_api_restrictions(self, exponents);
  if (!fast_route({self, exponents}))
    return at::native::foreach_tensor_pow_list_kernel_slow(self, exponents);
  auto out = empty_like_all(self);
  launch_list("pow", out, {Slot::of(self), Slot::of(exponents)});
  return out;
}
// base ** exponents[j] (functional only).
std::vector<at::Tensor> scalar_pow_list(const Scalar& base, TensorList exponents) {
  at::native::check_foreach_api_restrictions(exponents);
  if (!fast_route({exponents}, {base}))
    return at::native::foreach_scalar_pow_list_kernel_slow(base, exponents);
  auto out = empty_like_all(exponents);
  launch_list("pow", out, {Slot::of(base), Slot::of(exponents)});
  return out;
}

// ---- copy_: self[j] <- src[j] (one dtype, one device, dense matching layouts on the fast
// route; a CPU source or a dtype change takes the per-tensor copies) ----
void copy_(TensorList self, TensorList src, bool non_blocking) {
  at::native::check_foreach_api_restrictions(self, src);
  if (!fast_route({self, src}))
    return at::native::foreach_tensor_copy_list_kernel_slow_(self, src, non_blocking);
  launch_list("copy", self, {Slot::of(src)});
}

void zero_(TensorList self) {
  at::native::check_foreach_api_restrictions(self);
  if (!fast_route({self})) return at::native::foreach_tensor_zero_slow_(self);
  launch_list("fill", self, {}, make_scalars(0, 0));
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
#define TVK_REG(NAME, FN) m.impl(NAME, TORCH_FN(FN));
  TVK_REG("_foreach_add.Scalar", add_scalar)
  TVK_REG("_foreach_add_.Scalar", add_scalar_)
  TVK_REG("_foreach_add.ScalarList", add_scalarlist)
  TVK_REG("_foreach_add_.ScalarList", add_scalarlist_)
  TVK_REG("_foreach_add.List", add_list)
  TVK_REG("_foreach_add_.List", add_list_)
  TVK_REG("_foreach_add.Tensor", add_tensor)
  TVK_REG("_foreach_add_.Tensor", add_tensor_)
  TVK_REG("_foreach_sub.Scalar", sub_scalar)
  TVK_REG("_foreach_sub_.Scalar", sub_scalar_)
  TVK_REG("_foreach_sub.ScalarList", sub_scalarlist)
  TVK_REG("_foreach_sub_.ScalarList", sub_scalarlist_)
  TVK_REG("_foreach_sub.List", sub_list)
  TVK_REG("_foreach_sub_.List", sub_list_)
  TVK_REG("_foreach_mul.Scalar", mul_scalar)
  TVK_REG("_foreach_mul_.Scalar", mul_scalar_)
  TVK_REG("_foreach_mul.ScalarList", mul_scalarlist)
  TVK_REG("_foreach_mul_.ScalarList", mul_scalarlist_)
  TVK_REG("_foreach_mul.List", mul_list)
  TVK_REG("_foreach_mul_.List", mul_list_)
  TVK_REG("_foreach_mul.Tensor", mul_tensor)
  TVK_REG("_foreach_mul_.Tensor", mul_tensor_)
  TVK_REG("_foreach_div.Scalar", div_scalar)
  TVK_REG("_foreach_div_.Scalar", div_scalar_)
  TVK_REG("_foreach_div.ScalarList", div_scalarlist)
  TVK_REG("_foreach_div_.ScalarList", div_scalarlist_)
  TVK_REG("_foreach_div.List", div_list)
  TVK_REG("_foreach_div_.List", div_list_)
  TVK_REG("_foreach_div.Tensor", div_tensor)
  TVK_REG("_foreach_div_.Tensor", div_tensor_)
  TVK_REG("_foreach_addcmul.Scalar", addcmul_scalar)
  TVK_REG("_foreach_addcmul_.Scalar", addcmul_scalar_)
  TVK_REG("_foreach_addcmul.ScalarList", addcmul_scalarlist)
  TVK_REG("_foreach_addcmul_.ScalarList", addcmul_scalarlist_)
  TVK_REG("_foreach_addcmul.Tensor", addcmul_tensor)
  TVK_REG("_foreach_addcmul_.Tensor", addcmul_tensor_)
  TVK_REG("_foreach_addcdiv.Scalar", addcdiv_scalar)
  TVK_REG("_foreach_addcdiv_.Scalar", addcdiv_scalar_)
  TVK_REG("_foreach_addcdiv.ScalarList", addcdiv_scalarlist)
  TVK_REG("_foreach_addcdiv_.ScalarList", addcdiv_scalarlist_)
  TVK_REG("_foreach_addcdiv.Tensor", addcdiv_tensor)
  TVK_REG("_foreach_addcdiv_.Tensor", addcdiv_tensor_)
  TVK_REG("_foreach_lerp.Scalar", lerp_scalar)
  TVK_REG("_foreach_lerp_.Scalar", lerp_scalar_)
  TVK_REG("_foreach_lerp.ScalarList", lerp_scalarlist)
  TVK_REG("_foreach_lerp_.ScalarList", lerp_scalarlist_)
  TVK_REG("_foreach_lerp.List", lerp_list)
  TVK_REG("_foreach_lerp_.List", lerp_list_)
  TVK_REG("_foreach_sqrt", sqrt)
  TVK_REG("_foreach_sqrt_", sqrt_)
  TVK_REG("_foreach_neg", neg)
  TVK_REG("_foreach_neg_", neg_)
  TVK_REG("_foreach_abs", abs)
  TVK_REG("_foreach_abs_", abs_)
  TVK_REG("_foreach_exp", exp)
  TVK_REG("_foreach_exp_", exp_)
  TVK_REG("_foreach_reciprocal", reciprocal)
  TVK_REG("_foreach_reciprocal_", reciprocal_)
  TVK_REG("_foreach_zero_", zero_)
  TVK_REG("_foreach_acos", acos)
  TVK_REG("_foreach_acos_", acos_)
  TVK_REG("_foreach_asin", asin)
  TVK_REG("_foreach_asin_", asin_)
  TVK_REG("_foreach_atan", atan)
  TVK_REG("_foreach_atan_", atan_)
  TVK_REG("_foreach_ceil", ceil)
  TVK_REG("_foreach_ceil_", ceil_)
  TVK_REG("_foreach_cos", cos)
  TVK_REG("_foreach_cos_", cos_)
  TVK_REG("_foreach_cosh", cosh)
  TVK_REG("_foreach_cosh_", cosh_)
  TVK_REG("_foreach_erf", erf)
  TVK_REG("_foreach_erf_", erf_)
  TVK_REG("_foreach_erfc", erfc)
  TVK_REG("_foreach_erfc_", erfc_)
  TVK_REG("_foreach_expm1", expm1)
  TVK_REG("_foreach_expm1_", expm1_)
  TVK_REG("_foreach_floor", floor)
  TVK_REG("_foreach_floor_", floor_)
  TVK_REG("_foreach_frac", frac)
  TVK_REG("_foreach_frac_", frac_)
  TVK_REG("_foreach_lgamma", lgamma)
  TVK_REG("_foreach_lgamma_", lgamma_)
  TVK_REG("_foreach_log", log)
  TVK_REG("_foreach_log_", log_)
  TVK_REG("_foreach_log10", log10)
  TVK_REG("_foreach_log10_", log10_)
  TVK_REG("_foreach_log1p", log1p)
  TVK_REG("_foreach_log1p_", log1p_)
  TVK_REG("_foreach_log2", log2)
  TVK_REG("_foreach_log2_", log2_)
  TVK_REG("_foreach_round", round)
  TVK_REG("_foreach_round_", round_)
  TVK_REG("_foreach_rsqrt", rsqrt)
  TVK_REG("_foreach_rsqrt_", rsqrt_)
  TVK_REG("_foreach_sigmoid", sigmoid)
  TVK_REG("_foreach_sigmoid_", sigmoid_)
  TVK_REG("_foreach_sign", sign)
  TVK_REG("_foreach_sign_", sign_)
  TVK_REG("_foreach_sin", sin)
  TVK_REG("_foreach_sin_", sin_)
  TVK_REG("_foreach_sinh", sinh)
  TVK_REG("_foreach_sinh_", sinh_)
  TVK_REG("_foreach_tan", tan)
  TVK_REG("_foreach_tan_", tan_)
  TVK_REG("_foreach_tanh", tanh)
  TVK_REG("_foreach_tanh_", tanh_)
  TVK_REG("_foreach_trunc", trunc)
  TVK_REG("_foreach_trunc_", trunc_)
  TVK_REG("_foreach_clamp_min.Scalar", clamp_min_scalar)
  TVK_REG("_foreach_clamp_min_.Scalar", clamp_min_scalar_)
  TVK_REG("_foreach_clamp_min.ScalarList", clamp_min_scalarlist)
  TVK_REG("_foreach_clamp_min_.ScalarList", clamp_min_scalarlist_)
  TVK_REG("_foreach_clamp_min.List", clamp_min_list)
  TVK_REG("_foreach_clamp_min_.List", clamp_min_list_)
  TVK_REG("_foreach_clamp_max.Scalar", clamp_max_scalar)
  TVK_REG("_foreach_clamp_max_.Scalar", clamp_max_scalar_)
  TVK_REG("_foreach_clamp_max.ScalarList", clamp_max_scalarlist)
  TVK_REG("_foreach_clamp_max_.ScalarList", clamp_max_scalarlist_)
  TVK_REG("_foreach_clamp_max.List", clamp_max_list)
  TVK_REG("_foreach_clamp_max_.List", clamp_max_list_)
  TVK_REG("_foreach_maximum.Scalar", clamp_min_scalar)
  TVK_REG("_foreach_maximum_.Scalar", clamp_min_scalar_)
  TVK_REG("_foreach_maximum.ScalarList", clamp_min_scalarlist)
  TVK_REG("_foreach_maximum_.ScalarList", clamp_min_scalarlist_)
  TVK_REG("_foreach_maximum.List", clamp_min_list)
  TVK_REG("_foreach_maximum_.List", clamp_min_list_)
  TVK_REG("_foreach_minimum.Scalar", clamp_max_scalar)
  TVK_REG("_foreach_minimum_.Scalar", clamp_max_scalar_)
  TVK_REG("_foreach_minimum.ScalarList", clamp_max_scalarlist)
  TVK_REG("_foreach_minimum_.ScalarList", clamp_max_scalarlist_)
  TVK_REG("_foreach_minimum.List", clamp_max_list)
  TVK_REG("_foreach_minimum_.List", clamp_max_list_)
  TVK_REG("_foreach_pow.Scalar", pow_scalar)
  TVK_REG("_foreach_pow_.Scalar", pow_scalar_)
  TVK_REG("_foreach_pow.ScalarList", pow_scalarlist)
  TVK_REG("_foreach_pow_.ScalarList", pow_scalarlist_)
  TVK_REG("_foreach_pow.List", pow_list)
  TVK_REG("_foreach_pow_.List", pow_list_)
  TVK_REG("_foreach_pow.ScalarAndTensor", scalar_pow_list)
  TVK_REG("_foreach_copy_", copy_)
#undef TVK_REG
}

}  // namespace tvk::aten
