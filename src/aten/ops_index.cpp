// Native indexing ops: gather, scatter (src / value / reduce), scatter_add, scatter_reduce,
// index_select, index.Tensor, _index_put_impl_, index_add, index_reduce, index_copy, index_fill_,
// masked_fill_, masked_select, masked_scatter_, nonzero, nonzero_static, take, put_ and
// embedding_dense_backward. Shape / dtype checks come from PyTorch's meta functions where
// they exist, otherwise they repeat the CPU's checks and messages.
//
// Every op is one src/kernels/index.h call (plus small native helpers). Index values are
// checked on the device: a bad one is skipped and reported at the next host wait on the
// stream (runtime/error.h), with the CPU's wording and exception type. Ops whose output size
// depends on data (nonzero, masked_select, indexing with bool masks) read a count back from
// the device, as CUDA does; nothing else waits.
//
// Index spaces list PyTorch dims last-first (kernel dim 0 is the fastest, see kernels.h).
#include <ATen/ATen.h>
#include <ATen/Dispatch_v2.h>
#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ScalarOps.h>
#include <ATen/native/TensorAdvancedIndexingUtils.h>
#include <ATen/ops/gather_meta.h>
#include <ATen/ops/index_add_meta.h>
#include <ATen/ops/index_copy_meta.h>
#include <ATen/ops/index_reduce_meta.h>
#include <ATen/ops/scatter_add_meta.h>
#include <ATen/ops/scatter_meta.h>
#include <ATen/ops/scatter_reduce_meta.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <algorithm>
#include <cstring>
#include <sstream>
#include <limits>

#include "aten/complex_storage.h"
#include "aten/launch.h"
#include "aten/ops_reduce.h"
#include "aten/vk_common.h"
#include "kernels/index.h"
#include "runtime/error.h"
#include "runtime/stream.h"

namespace tvk::aten {
namespace {

using kernels::AccumulateOp;
using kernels::IndexMode;
using kernels::IndexProblem;
using tvk::DeviceErrorCode;

uint32_t code(DeviceErrorCode c) { return static_cast<uint32_t>(c); }

int64_t size_at(const at::Tensor& t, int64_t d) { return t.dim() == 0 ? 1 : t.size(d); }
int64_t stride_at(const at::Tensor& t, int64_t d) { return t.dim() == 0 ? 0 : t.stride(d); }

// Index space of `shape` (PyTorch dims last-first).
void set_space(IndexProblem& p, at::IntArrayRef shape, const char* op) {
  TORCH_CHECK(shape.size() <= static_cast<size_t>(kernels::kMaxDims), "torch-vk: ", op,
              " supports at most ", kernels::kMaxDims, " dimensions, got ", shape.size());
  p.ndim = static_cast<int32_t>(shape.size());
  for (int d = 0; d < p.ndim; ++d) p.sizes[d] = shape[p.ndim - 1 - d];
}

// Element strides of `t` over an index space of `ndim` dims (t has ndim dims, or 0 dims:
// broadcast). The stride of PyTorch dim `skip` is set to 0.
void set_strides(int64_t* out, const at::Tensor& t, int ndim, int64_t skip = -1) {
  for (int d = 0; d < ndim; ++d) {
    const int64_t torch_dim = ndim - 1 - d;
    out[d] = (t.dim() == 0 || torch_dim == skip) ? 0 : t.stride(torch_dim);
  }
}

void run(const IndexProblem& p, c10::Device device) {
  const c10::DeviceGuard guard(device);
  tvk::Stream& stream = current_stream(device.index());
  translate_errors([&] { kernels::index(stream, p); });
}

// The bytes of `value` as `dtype`, in the stream's parameter memory (valid for the kernels
// recorded next).
kernels::Operand upload_scalar(const c10::Scalar& value, at::ScalarType dtype, c10::Device device,
                               const char* op) {
  uint64_t bits = 0;
  AT_DISPATCH_V2(dtype, "index_scalar_vk", AT_WRAP([&] {
    const scalar_t v = value.to<scalar_t>();
    std::memcpy(&bits, &v, sizeof(scalar_t));
  }), AT_EXPAND(AT_ALL_TYPES), at::kHalf, at::kBool, at::kBFloat16);
  tvk::Stream& stream = current_stream(device.index());
  return {stream.upload_params(&bits, sizeof bits), vk_dtype(dtype, op)};
}

void check_vk(const at::Tensor& t, const at::Tensor& self, const char* what, const char* op) {
  TORCH_CHECK(t.device() == self.device(), op, ": expected ", what, " to be on ", self.device(),
              " but got a tensor on ", t.device());
}

AccumulateOp accumulate_op(std::string_view reduce, const char* op) {
  if (reduce == "sum" || reduce == "add" || reduce == "mean") return AccumulateOp::Add;
  if (reduce == "prod" || reduce == "multiply") return AccumulateOp::Mul;
  if (reduce == "amax") return AccumulateOp::Max;
  if (reduce == "amin") return AccumulateOp::Min;
  TORCH_CHECK(false, op, ": unknown reduce '", reduce, "'");
  return AccumulateOp::Add;
}

kernels::ComputeKind accumulate_kind(at::ScalarType dtype) {
  switch (dtype) {
    case at::kHalf:
    case at::kBFloat16:
    case at::kFloat: return kernels::ComputeKind::Float32;
    case at::kDouble: return kernels::ComputeKind::Float64;
    case at::kLong: return kernels::ComputeKind::Int64;
    default: return kernels::ComputeKind::Int32;
  }
}

// ---------------------------------------------------------------- gather / scatter

// out[i] = self[i with dim replaced by index[i]] over the shape of `index`.
void launch_gather(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& out) {
  if (index.numel() == 0) return;
  if (self.is_complex()) {  // the same gather of both (re, im) parts: a trailing dim of 2
    dim = at::maybe_wrap_dim(dim, self.dim());
    const bool scalar = self.dim() == 0;  // as 1-element vectors: the real view's last dim is (re, im)
    const at::Tensor s = scalar ? self.unsqueeze(0) : self, o = scalar ? out.unsqueeze(0) : out;
    const at::Tensor i = (scalar ? index.reshape({1}) : index).unsqueeze(-1);
    std::vector<int64_t> shape = i.sizes().vec();
    shape.back() = 2;
    return launch_gather(at::view_as_real(s.resolve_conj().resolve_neg()), dim, i.expand(shape),
                         raw_real_view(o));
  }
  dim = at::maybe_wrap_dim(dim, self.dim());
  IndexProblem p;
  p.mode = IndexMode::Gather;
  set_space(p, index.sizes(), "gather");
  p.dst = operand(out, "gather");
  set_strides(p.dst_strides, out, p.ndim);
  p.src = operand(self, "gather");
  set_strides(p.src_strides, self, p.ndim, dim);
  p.num_indices = 1;
  auto& t = p.indices[0];
  t.values = operand(index, "gather");
  set_strides(t.strides, index, p.ndim);
  t.size = size_at(self, dim);
  t.stride = stride_at(self, dim);
  t.error_dim = static_cast<int32_t>(dim);
  p.error_code = code(DeviceErrorCode::ScatterGatherOutOfBounds);
  run(p, self.device());
}

at::Tensor& gather_out(const at::Tensor& self, int64_t dim, const at::Tensor& index, bool sparse_grad,
                       at::Tensor& out) {
  Structured<at::meta::structured_gather> s(out);
  s.meta(self, dim, index, sparse_grad);
  launch_gather(self, dim, index, out);
  return out;
}

at::Tensor gather(const at::Tensor& self, int64_t dim, const at::Tensor& index, bool sparse_grad) {
  Structured<at::meta::structured_gather> s;
  s.meta(self, dim, index, sparse_grad);
  launch_gather(self, dim, index, s.outs[0]);
  return s.outs[0];
}

// out[index[i] along dim, other coordinates of i] (op)= src[i] over the shape of `index`.
// `src` undefined: the scalar `value`. `out` already holds self's values.
void launch_scatter(const at::Tensor& out, int64_t dim, const at::Tensor& index, const at::Tensor& src,
                    const c10::Scalar& value, std::optional<AccumulateOp> op, const char* name) {
  if (index.numel() == 0) return;
  if (out.is_complex()) {  // both (re, im) parts; products do not split into parts
    TORCH_CHECK_NOT_IMPLEMENTED(!op || *op == AccumulateOp::Add, "torch-vk: ", name,
                                " with this reduction is not supported for complex tensors");
    dim = at::maybe_wrap_dim(dim, out.dim());
    const bool scalar = out.dim() == 0;
    const at::Tensor o = scalar ? out.unsqueeze(0) : out;
    const at::Tensor i = scalar ? index.reshape({1}) : index;
    const at::Tensor r = raw_real_view(o);
    if (!src.defined()) {
      c10::complex<double> v = value.toComplexDouble();
      if (out.is_conj()) v = std::conj(v);
      if (out.is_neg()) v = -v;
      launch_scatter(r.select(-1, 0), dim, i, src, v.real(), op, name);
      launch_scatter(r.select(-1, 1), dim, i, src, v.imag(), op, name);
      return;
    }
    TORCH_CHECK(!out.is_conj() && !out.is_neg(), "torch-vk: ", name, " into a conjugate view");
    std::vector<int64_t> shape = i.sizes().vec();
    shape.push_back(2);
    const at::Tensor s = scalar ? src.reshape({1}) : src;
    return launch_scatter(r, dim, i.unsqueeze(-1).expand(shape),
                          at::view_as_real(s.to(out.scalar_type()).resolve_conj().resolve_neg()), value,
                          op, name);
  }
  dim = at::maybe_wrap_dim(dim, out.dim());
  IndexProblem p;
  p.mode = op ? IndexMode::Accumulate : IndexMode::Scatter;
  if (op) {
    p.op = *op;
    p.kind = accumulate_kind(out.scalar_type());
  }
  set_space(p, index.sizes(), name);
  p.dst = operand(out, name);
  set_strides(p.dst_strides, out, p.ndim, dim);
  if (src.defined()) {
    p.src = operand(src, name);
    set_strides(p.src_strides, src, p.ndim);
  } else {
    p.src = upload_scalar(value, out.scalar_type(), out.device(), name);
  }
  p.num_indices = 1;
  auto& t = p.indices[0];
  t.values = operand(index, name);
  set_strides(t.strides, index, p.ndim);
  t.size = size_at(out, dim);
  t.stride = stride_at(out, dim);
  t.error_dim = static_cast<int32_t>(dim);
  p.error_code = code(DeviceErrorCode::ScatterGatherOutOfBounds);
  run(p, out.device());
}

void copy_self(const at::Tensor& self, const at::Tensor& out) {
  if (!out.is_same(self)) out.copy_(self);
}

std::optional<AccumulateOp> scatter_reduce_op(std::optional<c10::string_view> reduce) {
  if (!reduce) return std::nullopt;
  return accumulate_op(*reduce, "scatter");
}

at::Tensor& scatter_src_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                            const at::Tensor& src, at::Tensor& out) {
  Structured<at::meta::structured_scatter_src> s(out);
  s.meta(self, dim, index, src);
  copy_self(self, out);
  launch_scatter(out, dim, index, src, 0, std::nullopt, "scatter");
  return out;
}
at::Tensor scatter_src(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src) {
  at::Tensor out = at::empty_like(self);
  return scatter_src_out(self, dim, index, src, out);
}
at::Tensor& scatter_src_(at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src) {
  return scatter_src_out(self, dim, index, src, self);
}

at::Tensor& scatter_value_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                              const c10::Scalar& value, at::Tensor& out) {
  Structured<at::meta::structured_scatter_value> s(out);
  s.meta(self, dim, index, value);
  copy_self(self, out);
  launch_scatter(out, dim, index, at::Tensor(), value, std::nullopt, "scatter");
  return out;
}
at::Tensor scatter_value(const at::Tensor& self, int64_t dim, const at::Tensor& index, const c10::Scalar& value) {
  at::Tensor out = at::empty_like(self);
  return scatter_value_out(self, dim, index, value, out);
}
at::Tensor& scatter_value_(at::Tensor& self, int64_t dim, const at::Tensor& index, const c10::Scalar& value) {
  return scatter_value_out(self, dim, index, value, self);
}

at::Tensor& scatter_reduce_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                               const at::Tensor& src, c10::string_view reduce, at::Tensor& out) {
  Structured<at::meta::structured_scatter_reduce> s(out);
  s.meta(self, dim, index, src, reduce);
  copy_self(self, out);
  launch_scatter(out, dim, index, src, 0, scatter_reduce_op(reduce), "scatter");
  return out;
}
at::Tensor scatter_reduce(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                          const at::Tensor& src, c10::string_view reduce) {
  at::Tensor out = at::empty_like(self);
  return scatter_reduce_out(self, dim, index, src, reduce, out);
}
at::Tensor& scatter_reduce_(at::Tensor& self, int64_t dim, const at::Tensor& index,
                            const at::Tensor& src, c10::string_view reduce) {
  return scatter_reduce_out(self, dim, index, src, reduce, self);
}

at::Tensor& scatter_value_reduce_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                                     const c10::Scalar& value, c10::string_view reduce, at::Tensor& out) {
  Structured<at::meta::structured_scatter_value_reduce> s(out);
  s.meta(self, dim, index, value, reduce);
  copy_self(self, out);
  launch_scatter(out, dim, index, at::Tensor(), value, scatter_reduce_op(reduce), "scatter");
  return out;
}
at::Tensor scatter_value_reduce(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                                const c10::Scalar& value, c10::string_view reduce) {
  at::Tensor out = at::empty_like(self);
  return scatter_value_reduce_out(self, dim, index, value, reduce, out);
}
at::Tensor& scatter_value_reduce_(at::Tensor& self, int64_t dim, const at::Tensor& index,
                                  const c10::Scalar& value, c10::string_view reduce) {
  return scatter_value_reduce_out(self, dim, index, value, reduce, self);
}

at::Tensor& scatter_add_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                            const at::Tensor& src, at::Tensor& out) {
  Structured<at::meta::structured_scatter_add> s(out);
  s.meta(self, dim, index, src);
  copy_self(self, out);
  launch_scatter(out, dim, index, src, 0, AccumulateOp::Add, "scatter_add");
  return out;
}
at::Tensor scatter_add(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src) {
  at::Tensor out = at::empty_like(self);
  return scatter_add_out(self, dim, index, src, out);
}
at::Tensor& scatter_add_(at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src) {
  return scatter_add_out(self, dim, index, src, self);
}

// The value a reduction starts from when self is excluded (include_self = false): 1 for
// products, -inf / +inf (the type's lowest / max for integers) for amax / amin, else 0.
c10::Scalar reduction_identity(AccumulateOp op, at::ScalarType dtype) {
  c10::Scalar init = 0;
  const bool is_float = at::isFloatingType(dtype);
  AT_DISPATCH_V2(dtype, "reduction_identity_vk", AT_WRAP([&] {
    using lim = std::numeric_limits<scalar_t>;
    if (op == AccumulateOp::Mul) init = 1;
    else if (op == AccumulateOp::Max)
      init = is_float ? c10::Scalar(-std::numeric_limits<double>::infinity())
                      : c10::Scalar(static_cast<int64_t>(lim::lowest()));
    else if (op == AccumulateOp::Min)
      init = is_float ? c10::Scalar(std::numeric_limits<double>::infinity())
                      : c10::Scalar(static_cast<int64_t>(lim::max()));
  }), AT_EXPAND(AT_ALL_TYPES), at::kHalf, at::kBool, at::kBFloat16);
  return init;
}

// scatter_reduce.two, as the CPU: positions that receive a scatter start from the reduction's
// identity when include_self is false; mean divides by the number of contributions (plus one
// for self), with floor division for integer dtypes.
at::Tensor& scatter_reduce_two_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                                   const at::Tensor& src, c10::string_view reduce, bool include_self,
                                   at::Tensor& out) {
  Structured<at::meta::structured_scatter_reduce_two> s(out);
  s.meta(self, dim, index, src, reduce, include_self);
  copy_self(self, out);
  const at::ScalarType dtype = out.scalar_type();
  // The CPU divides the means with a floor division for integer dtypes, which it does not
  // dispatch for bool, whatever the index.
  if (reduce == "mean" && dtype == at::kBool) raise_not_implemented_for("div_floor_cpu", dtype);
  if (index.numel() == 0) return out;
  const AccumulateOp op = accumulate_op(reduce, "scatter_reduce");
  if (!include_self)
    launch_scatter(out, dim, index, at::Tensor(), reduction_identity(op, dtype), std::nullopt,
                   "scatter_reduce");
  launch_scatter(out, dim, index, src, 0, op, "scatter_reduce");
  if (reduce == "mean") {
    at::Tensor count = include_self ? at::ones_like(out) : at::zeros_like(out);
    launch_scatter(count, dim, index, at::Tensor(), 1, AccumulateOp::Add, "scatter_reduce");
    count.masked_fill_(count == 0, 1);
    if (at::isFloatingType(dtype)) out.div_(count);
    else out.div_(count, "floor");
  }
  return out;
}
at::Tensor scatter_reduce_two(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                              const at::Tensor& src, c10::string_view reduce, bool include_self) {
  at::Tensor out = at::empty_like(self);
  return scatter_reduce_two_out(self, dim, index, src, reduce, include_self, out);
}
at::Tensor& scatter_reduce_two_(at::Tensor& self, int64_t dim, const at::Tensor& index,
                                const at::Tensor& src, c10::string_view reduce, bool include_self) {
  return scatter_reduce_two_out(self, dim, index, src, reduce, include_self, self);
}

// ---------------------------------------------------------------- index_select

at::Tensor& index_select_out(const at::Tensor& self, int64_t dim, const at::Tensor& index, at::Tensor& out) {
  dim = at::maybe_wrap_dim(dim, self.dim());
  const int64_t numel = index.numel();
  TORCH_CHECK_INDEX(index.dim() <= 1, "index_select(): Index is supposed to be a vector");
  TORCH_CHECK(!(self.dim() == 0 && numel != 1),
              "index_select(): Index to scalar can have only 1 value, got ", numel, " value(s)");
  TORCH_CHECK(index.scalar_type() == at::kLong || index.scalar_type() == at::kInt,
              "index_select(): Expected dtype int32 or int64 for index");
  TORCH_CHECK(self.scalar_type() == out.scalar_type(),
              "index_select(): self and result must have the same scalar type");
  check_vk(index, self, "index", "index_select()");
  at::assert_no_internal_overlap(out);
  at::assert_no_overlap(out, self);
  at::assert_no_overlap(out, index);
  std::vector<int64_t> shape = self.sizes().vec();
  if (self.dim() > 0) shape[dim] = numel;
  at::native::resize_output(out, shape);
  if (self.numel() == 0 && numel > 0) {
    // Nothing to gather from, but the CPU still checks the indices: every index of a 1-D
    // self is out of range; a larger self needs a non-empty indexed dim and in-range indices
    // (read on the host, as the CPU does; only this empty case waits for the device).
    TORCH_CHECK_INDEX(self.dim() > 1, "index out of range in self");
    const int64_t size = self.size(dim);
    TORCH_CHECK(size > 0, "index_select(): self indexing axis dim should be positive");
    const at::Tensor host = index.to(at::kCPU, at::kLong).contiguous();
    const int64_t* values = host.const_data_ptr<int64_t>();
    for (int64_t i = 0; i < numel; ++i)
      TORCH_CHECK(values[i] >= 0 && values[i] < size, "INDICES element is out of DATA bounds, id=",
                  values[i], " axis_dim=", size);
    return out;
  }
  if (out.numel() == 0) return out;
  IndexProblem p;
  p.mode = IndexMode::Gather;
  set_space(p, out.sizes(), "index_select");
  p.dst = operand(out, "index_select");
  set_strides(p.dst_strides, out, p.ndim);
  p.src = operand(self, "index_select");
  set_strides(p.src_strides, self, p.ndim, dim);
  p.num_indices = 1;
  auto& t = p.indices[0];
  t.values = operand(index, "index_select");
  if (p.ndim > 0) t.strides[p.ndim - 1 - dim] = index.dim() == 0 ? 0 : index.stride(0);
  t.size = size_at(self, dim);
  t.stride = stride_at(self, dim);
  t.error_dim = static_cast<int32_t>(dim);
  // The CPU's error depends on its code path: its dim-1 fast path (a 2-d+ self, a contiguous
  // result) raises a RuntimeError ("INDICES element is out of DATA bounds"), its other paths
  // IndexError("index out of range in self"). Same exception types here (the RuntimeError
  // with the scatter / gather wording).
  const bool dim1_path = self.dim() > 1 && dim == 1 && out.is_contiguous();
  p.error_code = code(dim1_path ? DeviceErrorCode::ScatterGatherOutOfBounds
                                : DeviceErrorCode::IndexOutOfRangeInSelf);
  run(p, self.device());
  return out;
}

at::Tensor index_select(const at::Tensor& self, int64_t dim, const at::Tensor& index) {
  at::Tensor out = at::empty({0}, self.options());
  return index_select_out(self, dim, index, out);
}

// ---------------------------------------------------------------- advanced indexing

// PyTorch's AdvancedIndex (its constructor is not exported): `src` is self restrided so that
// the indexed dims are replaced by the broadcast index shape (stride 0), `indices` are the
// index tensors reshaped to broadcast against it, indexed_sizes / indexed_strides (elements)
// describe the dims they index. Bool / uint8 masks become nonzero() coordinates (a count
// read), non-adjacent indexed dims are moved to the front, as in make_info().
struct AdvancedIndex {
  at::Tensor src;
  std::vector<at::Tensor> indices;
  std::vector<int64_t> indexed_sizes;
  std::vector<int64_t> indexed_strides;
};

AdvancedIndex make_advanced_index(at::Tensor self, const c10::List<std::optional<at::Tensor>>& orig) {
  at::native::checkIndexTensorTypes(orig, /*allow_int=*/true);
  std::vector<at::Tensor> indices = at::native::expandTensors(self, orig, /*ensure_same_device=*/true);
  try {
    indices = at::expand_outplace(indices);
  } catch (std::exception&) {
    std::ostringstream shapes;
    bool first = true;
    for (const auto& t : indices) {
      if (!t.defined()) continue;
      shapes << (first ? "" : ", ") << t.sizes();
      first = false;
    }
    TORCH_CHECK_INDEX(false, "shape mismatch: indexing tensors could not be broadcast together with shapes ",
                      shapes.str());
  }
  while (indices.size() < static_cast<size_t>(self.dim())) indices.emplace_back();
  if (!at::native::hasContiguousSubspace(indices))
    std::tie(self, indices) = at::native::transposeToFront(self, indices);

  AdvancedIndex info;
  int64_t dims_before = 0, dims_after = 0, dims_indexed = 0;
  at::IntArrayRef replacement_shape;
  for (int64_t d = 0; d < static_cast<int64_t>(indices.size()); ++d) {
    if (!indices[d].defined()) {
      if (dims_indexed == 0) ++dims_before;
      else ++dims_after;
    } else {
      ++dims_indexed;
      replacement_shape = indices[d].sizes();
      info.indexed_sizes.push_back(self.size(d));
      info.indexed_strides.push_back(self.stride(d));
    }
  }
  // An empty indexed dim can only be indexed by an empty index.
  const bool empty_dim = std::find(info.indexed_sizes.begin(), info.indexed_sizes.end(), 0) !=
                         info.indexed_sizes.end();
  const bool empty_index = std::find(replacement_shape.begin(), replacement_shape.end(), 0) !=
                           replacement_shape.end();
  TORCH_CHECK_INDEX(!empty_dim || empty_index, "index is out of bounds for dimension with size 0");

  std::vector<int64_t> shape(self.sizes().begin(), self.sizes().begin() + dims_before);
  std::vector<int64_t> strides(self.strides().begin(), self.strides().begin() + dims_before);
  shape.insert(shape.end(), replacement_shape.begin(), replacement_shape.end());
  strides.insert(strides.end(), replacement_shape.size(), 0);
  shape.insert(shape.end(), self.sizes().begin() + dims_before + dims_indexed, self.sizes().end());
  strides.insert(strides.end(), self.strides().begin() + dims_before + dims_indexed, self.strides().end());
  info.src = self.as_strided(shape, strides);
  for (const at::Tensor& index : indices) {
    if (!index.defined()) continue;
    std::vector<int64_t> view(static_cast<size_t>(dims_before), 1);
    view.insert(view.end(), index.sizes().begin(), index.sizes().end());
    view.insert(view.end(), static_cast<size_t>(dims_after), 1);
    info.indices.push_back(index.reshape(view));
  }
  return info;
}

// Fills the index tensors of `p` from an AdvancedIndex over the index space `shape`.
void set_advanced_indices(IndexProblem& p, const AdvancedIndex& info,
                          at::IntArrayRef shape, const char* name) {
  int k = 0;
  for (const at::Tensor& index : info.indices) {
    TORCH_CHECK(k < kernels::kMaxIndexTensors, "torch-vk: ", name, " supports at most ",
                kernels::kMaxIndexTensors, " index tensors");
    const at::Tensor expanded = index.expand(shape);
    auto& t = p.indices[k];
    t.values = operand(expanded, name);
    set_strides(t.strides, expanded, p.ndim);
    t.size = info.indexed_sizes[k];
    t.stride = info.indexed_strides[k];
    t.wrap_negative = true;
    t.error_dim = k;  // the CPU names the position in the list of index tensors
    ++k;
  }
  p.num_indices = k;
  p.error_code = code(DeviceErrorCode::IndexOutOfBounds);
}

at::Tensor& index_out(const at::Tensor& self, const c10::List<std::optional<at::Tensor>>& indices,
                      at::Tensor& out) {
  TORCH_CHECK_INDEX(indices.size() <= static_cast<size_t>(self.dim()), "too many indices for tensor of dimension ",
                    self.dim(), " (got ", indices.size(), ")");
  vk_dtype(self.scalar_type(), "index");
  const AdvancedIndex info = make_advanced_index(self, indices);
  const at::IntArrayRef shape = info.src.sizes();
  TORCH_CHECK(out.scalar_type() == self.scalar_type(), "index_out: self (", self.scalar_type(),
              ") and result (", out.scalar_type(), ") must have the same scalar type");
  at::native::resize_output(out, shape);
  if (out.numel() == 0) return out;
  IndexProblem p;
  p.mode = IndexMode::Gather;
  set_space(p, shape, "index");
  p.dst = operand(out, "index");
  set_strides(p.dst_strides, out, p.ndim);
  p.src = operand(info.src, "index");
  set_strides(p.src_strides, info.src, p.ndim);
  set_advanced_indices(p, info, shape, "index");
  run(p, self.device());
  return out;
}

at::Tensor index(const at::Tensor& self, const c10::List<std::optional<at::Tensor>>& indices) {
  at::Tensor out = at::empty({0}, self.options());
  return index_out(self, indices, out);
}

at::Tensor& index_put_impl_(at::Tensor& self, const c10::List<std::optional<at::Tensor>>& indices,
                            const at::Tensor& value, bool accumulate, bool unsafe) {
  (void)unsafe;
  TORCH_CHECK_INDEX(indices.size() <= static_cast<size_t>(self.dim()), "too many indices for tensor of dimension ",
                    self.dim(), " (got ", indices.size(), ")");
  if (at::has_internal_overlap(self) == at::MemOverlap::Yes) {
    TORCH_WARN("Use of index_put_ on expanded tensors is deprecated. Please clone() the tensor "
               "before performing this operation. This also applies to advanced indexing e.g. "
               "tensor[indices] = tensor");
  }
  if (!accumulate) {
    // PyTorch's route for one CPU value and a single bool / uint8 mask on self's device (the
    // other indices absent, `x[mask] = v`): masked_fill_ with value.item(), so the value is
    // converted like a fill's, whatever its dtype (the CPU's and CUDA's canDispatchToMaskedFill).
    if (value.numel() == 1 && value.device().is_cpu()) {
      at::Tensor mask;
      int64_t num_ind = 0;
      bool maskable = true;
      for (const std::optional<at::Tensor> index : indices) {
        if (!index.has_value() || !index->defined()) {
          ++num_ind;
          continue;
        }
        const at::Tensor& i = *index;
        if ((i.scalar_type() != at::kByte && i.scalar_type() != at::kBool) || i.device() != self.device() ||
            mask.defined()) {
          maskable = false;
          break;
        }
        mask = i;
        for (int64_t j = 0; j < i.dim(); ++j)
          TORCH_CHECK_INDEX(i.size(j) == self.size(num_ind + j), "The shape of the mask ", i.sizes(),
                            " at index ", j, " does not match the shape of the indexed tensor ",
                            self.sizes(), " at index ", num_ind + j);
        num_ind += i.dim();
      }
      if (maskable && mask.defined()) {
        for (int64_t i = num_ind; i < self.dim(); ++i) mask = mask.unsqueeze(-1);
        return self.masked_fill_(mask, value.item());
      }
    }
  }
  vk_dtype(self.scalar_type(), "index_put_");
  at::Tensor v = value;
  if (v.device() != self.device() && v.numel() == 1 && v.dim() == 0) v = v.to(self.device());
  check_vk(v, self, "the value", "index_put_");
  at::assert_no_overlap(self, v);
  for (const std::optional<at::Tensor> index : indices)
    if (index.has_value() && index->defined()) at::assert_no_overlap(self, *index);
  const AdvancedIndex info = make_advanced_index(self, indices);
  const at::IntArrayRef shape = info.src.sizes();
  TORCH_CHECK(at::is_expandable_to(v.sizes(), shape), "shape mismatch: value tensor of shape ",
              v.sizes(), " cannot be broadcast to indexing result of shape ", shape);
  TORCH_CHECK(v.scalar_type() == info.src.scalar_type(),
              "Index put requires the source and destination dtypes match, got ",
              info.src.scalar_type(), " for the destination and ", v.scalar_type(), " for the source.");
  if (c10::multiply_integers(shape) == 0) return self;
  IndexProblem p;
  p.mode = accumulate ? IndexMode::Accumulate : IndexMode::Scatter;
  p.op = AccumulateOp::Add;
  p.kind = accumulate_kind(self.scalar_type());
  set_space(p, shape, "index_put_");
  p.dst = operand(info.src, "index_put_");
  set_strides(p.dst_strides, info.src, p.ndim);
  const at::Tensor ve = v.expand(shape);
  p.src = operand(ve, "index_put_");
  set_strides(p.src_strides, ve, p.ndim);
  set_advanced_indices(p, info, shape, "index_put_");
  run(p, self.device());
  return self;
}

// ---------------------------------------------------------------- index_add / copy / fill

// self[..., index[j], ...] (op)= source[..., j, ...] over source's shape.
void launch_index_scatter(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                          const at::Tensor& source, const c10::Scalar& value, IndexMode mode,
                          DeviceErrorCode error, bool wrap, const char* name,
                          AccumulateOp op = AccumulateOp::Add) {
  // The index space: source's shape, or self's with dim replaced by the index count.
  std::vector<int64_t> shape = source.defined() ? source.sizes().vec() : self.sizes().vec();
  if (!source.defined() && self.dim() > 0) shape[dim] = index.numel();
  if (self.dim() == 0) shape.clear();
  if (index.numel() == 0 || c10::multiply_integers(shape) == 0) return;
  IndexProblem p;
  p.mode = mode;
  p.op = op;
  p.kind = accumulate_kind(self.scalar_type());
  set_space(p, shape, name);
  p.dst = operand(self, name);
  set_strides(p.dst_strides, self, p.ndim, dim);
  if (source.defined()) {
    p.src = operand(source, name);
    if (source.dim() == static_cast<int64_t>(shape.size())) set_strides(p.src_strides, source, p.ndim);
  } else {
    p.src = upload_scalar(value, self.scalar_type(), self.device(), name);
  }
  p.num_indices = 1;
  auto& t = p.indices[0];
  t.values = operand(index, name);
  if (p.ndim > 0) t.strides[p.ndim - 1 - dim] = index.dim() == 0 ? 0 : index.stride(0);
  t.size = size_at(self, dim);
  t.stride = stride_at(self, dim);
  t.wrap_negative = wrap;
  t.error_dim = static_cast<int32_t>(dim);
  p.error_code = code(error);
  run(p, self.device());
}

// An empty self has nothing for the kernels to write, so they check no index either; the CPU
// does (index_add of a 1-D self, index_reduce): every index must lie in [0, size), checked
// here on the host (only this degenerate case reads the indices back).
void check_indices_on_host(const at::Tensor& index, int64_t size) {
  const at::Tensor host = index.to(at::kCPU, at::kLong).contiguous();
  const int64_t* values = host.const_data_ptr<int64_t>();
  for (int64_t i = 0; i < host.numel(); ++i)
    TORCH_CHECK_INDEX(values[i] >= 0 && values[i] < size, "index out of range in self");
}

at::Tensor& index_add_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                          const at::Tensor& source, const c10::Scalar& alpha, at::Tensor& out) {
  Structured<at::meta::structured_index_add> s(out);
  dim = s.meta(self, dim, index, source, alpha).dim;
  if (self.numel() == 0 && index.numel() > 0) {
    // The CPU: a 1-D (or 0-dim) self checks every index; a larger empty self returns.
    if (self.dim() <= 1) TORCH_CHECK_INDEX(false, "index out of range in self");
    return out;
  }
  copy_self(self, out);
  vk_dtype(self.scalar_type(), "index_add_");
  // alpha as a value of self's dtype, as the CPU's loop multiplies (alpha.to<scalar_t>(): -1 is
  // true for bool); the product keeps the source's dtype.
  at::Tensor src = source;
  const c10::Scalar a = out.is_complex() ? alpha : scalar_to_dtype(alpha, out.scalar_type());
  const bool unit_alpha = a.isIntegral(true) ? a.toLong() == 1 : (!a.isComplex() && a.toDouble() == 1.0);
  if (!unit_alpha) src = at::mul(source, at::native::wrapped_scalar_tensor(a).to(source.scalar_type()));
  // The CPU's 2-d+ index_add along the first or last dim with alpha 1 and int64 indices is a
  // scatter_add (its out-of-range error a RuntimeError); its other paths raise IndexError.
  const bool scatter_path = out.dim() > 1 && (dim == 0 || dim == out.dim() - 1) && unit_alpha &&
                            index.scalar_type() == at::kLong;
  launch_index_scatter(out, dim, index, src, 0, IndexMode::Accumulate,
                       scatter_path ? DeviceErrorCode::ScatterGatherOutOfBounds
                                    : DeviceErrorCode::IndexOutOfRangeInSelf,
                       false, "index_add_");
  return out;
}
at::Tensor index_add(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                     const at::Tensor& source, const c10::Scalar& alpha) {
  at::Tensor out = at::empty_like(self);
  return index_add_out(self, dim, index, source, alpha, out);
}
at::Tensor& index_add_(at::Tensor& self, int64_t dim, const at::Tensor& index,
                       const at::Tensor& source, const c10::Scalar& alpha) {
  return index_add_out(self, dim, index, source, alpha, self);
}

// index_reduce (prod / mean / amax / amin), as the CPU's index_reduce_func_impl: with
// include_self false the indexed slices first take the reduction's identity (an index_fill,
// which wraps negative indices and reports positive out-of-range ones with index_fill's
// wording, as on the CPU); then every source slice is reduced into self's slice index[j]
// (out-of-range or negative: "index out of range in self", checked on the device); mean
// divides by the number of contributions (+1 for self), with floor division for integers.
at::Tensor& index_reduce_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                             const at::Tensor& source, c10::string_view reduce, bool include_self,
                             at::Tensor& out) {
  Structured<at::meta::structured_index_reduce> s(out);
  dim = s.meta(self, dim, index, source, reduce, include_self).dim;
  TORCH_WARN_ONCE("index_reduce() is in beta and the API may change at any time.");
  const at::ScalarType dtype = self.scalar_type();
  // bool, as the CPU: its identity fill and its 1-d loop refuse bool, mean's floor division
  // too; 2-d+ prod / amax / amin with self included reduce (and / or / and).
  if (dtype == at::kBool) {
    if (!include_self) raise_not_implemented_for("index_reduce_func_exclude_input_init", dtype);
    if (self.dim() <= 1) raise_not_implemented_for("index_func_", dtype);
    if (reduce == "mean" && index.numel() > 0) raise_not_implemented_for("div_floor_cpu", dtype);
  }
  vk_dtype(dtype, "index_reduce_");
  check_vk(index, self, "index", "index_reduce_()");
  check_vk(source, self, "source", "index_reduce_()");
  if (self.numel() == 0 && index.numel() > 0) {
    // The CPU: without self, the identity fill of an empty dim fails first (a RuntimeError from
    // its storage check); then it selects slice 0 of a 2-d+ self (an IndexError when the dim is
    // empty) and checks every index.
    TORCH_CHECK(include_self || size_at(self, dim) > 0, "index_reduce_(): cannot fill the indexed slices of "
                "an empty dimension (dim ", dim, " of a tensor of size ", self.sizes(), ")");
    TORCH_CHECK_INDEX(self.dim() <= 1 || self.size(dim) > 0, "select(): index 0 out of range for tensor of size ",
                      self.sizes(), " at dimension ", dim);
    check_indices_on_host(index, size_at(self, dim));
    return out;
  }
  copy_self(self, out);
  if (index.numel() == 0 && self.dim() > 1) return out;  // the CPU returns before any reduction
  const AccumulateOp op = accumulate_op(reduce, "index_reduce");
  if (!include_self)
    launch_index_scatter(out, dim, index, at::Tensor(), reduction_identity(op, dtype),
                         IndexMode::Scatter, DeviceErrorCode::IndexOutOfBounds, true, "index_reduce_");
  launch_index_scatter(out, dim, index, source, 0, IndexMode::Accumulate,
                       DeviceErrorCode::IndexOutOfRangeInSelf, false, "index_reduce_", op);
  if (reduce == "mean") {
    at::Tensor count = include_self ? at::ones_like(out) : at::zeros_like(out);
    launch_index_scatter(count, dim, index, at::Tensor(), 1, IndexMode::Accumulate,
                         DeviceErrorCode::IndexOutOfRangeInSelf, false, "index_reduce_");
    count.masked_fill_(count == 0, 1);
    if (at::isFloatingType(dtype)) out.div_(count);
    else out.div_(count, "floor");
  }
  return out;
}
at::Tensor index_reduce(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                        const at::Tensor& source, c10::string_view reduce, bool include_self) {
  at::Tensor out = at::empty_like(self);
  return index_reduce_out(self, dim, index, source, reduce, include_self, out);
}
at::Tensor& index_reduce_(at::Tensor& self, int64_t dim, const at::Tensor& index,
                          const at::Tensor& source, c10::string_view reduce, bool include_self) {
  return index_reduce_out(self, dim, index, source, reduce, include_self, self);
}

at::Tensor& index_copy_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                           const at::Tensor& source, at::Tensor& out) {
  Structured<at::meta::structured_index_copy> s(out);
  dim = s.meta(self, dim, index, source).dim;
  copy_self(self, out);
  vk_dtype(self.scalar_type(), "index_copy_");
  launch_index_scatter(out, dim, index, source, 0, IndexMode::Scatter,
                       DeviceErrorCode::IndexCopyOutOfBounds, false, "index_copy_");
  return out;
}
at::Tensor index_copy(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source) {
  at::Tensor out = at::empty_like(self);
  return index_copy_out(self, dim, index, source, out);
}
at::Tensor& index_copy_(at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source) {
  return index_copy_out(self, dim, index, source, self);
}

void index_fill_checks(const at::Tensor& self, int64_t& dim, const at::Tensor& index) {
  TORCH_CHECK_INDEX(index.scalar_type() == at::kLong, "index_fill_(): Expected dtype int64 for index.");
  at::assert_no_overlap(self, index);
  if (at::has_internal_overlap(self) == at::MemOverlap::Yes) {
    TORCH_WARN("Use of index_fill_ on expanded tensors is deprecated. Please clone() the tensor "
               "before performing this operation. This also applies to advanced indexing e.g. "
               "tensor[mask] = scalar");
  }
  dim = at::maybe_wrap_dim(dim, self.dim());
  TORCH_CHECK(index.dim() <= 1, "Index has to be a vector/scalar");
  check_vk(index, self, "index", "index_fill_()");
  vk_dtype(self.scalar_type(), "index_fill_");
}

at::Tensor& index_fill_scalar_(at::Tensor& self, int64_t dim, const at::Tensor& index, const c10::Scalar& value) {
  index_fill_checks(self, dim, index);
  // The CPU kernel converts the value first (value.to<scalar_t>(), which raises on overflow),
  // also when there is nothing to fill.
  if (!self.is_complex()) (void)scalar_to_dtype(value, self.scalar_type());
  launch_index_scatter(self, dim, index, at::Tensor(), value, IndexMode::Scatter,
                       DeviceErrorCode::IndexOutOfBounds, true, "index_fill_");
  return self;
}

at::Tensor& index_fill_tensor_(at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& value) {
  TORCH_CHECK(value.dim() == 0, "index_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
              value.dim(), " dimension(s).");
  if (value.device().is_cpu()) return index_fill_scalar_(self, dim, index, value.item());
  index_fill_checks(self, dim, index);
  // The value stays on the device: the kernel reads it with broadcast strides (no sync).
  const at::Tensor v = value.to(self.scalar_type());
  std::vector<int64_t> shape = self.sizes().vec();
  if (self.dim() > 0) shape[dim] = index.numel();
  launch_index_scatter(self, dim, index, v.expand(shape), 0, IndexMode::Scatter,
                       DeviceErrorCode::IndexOutOfBounds, true, "index_fill_");
  return self;
}

// ---------------------------------------------------------------- masks

at::Tensor& masked_fill_impl(at::Tensor& self, const at::Tensor& mask, const at::Tensor& value) {
  TORCH_CHECK(mask.scalar_type() == at::kBool, "masked_fill_ only supports boolean masks, but got mask with dtype ",
              mask.scalar_type());
  if (at::has_internal_overlap(self) == at::MemOverlap::Yes) {
    TORCH_WARN("Use of masked_fill_ on expanded tensors is deprecated. Please clone() the tensor "
               "before performing this operation. This also applies to advanced indexing e.g. "
               "tensor[mask] = scalar");
  }
  at::assert_no_partial_overlap(self, mask);
  check_vk(mask, self, "mask", "masked_fill_");
  const c10::MaybeOwned<at::Tensor> m = at::expand_inplace(self, mask, "masked_fill_");
  if (self.numel() == 0) return self;
  if (at::has_internal_overlap(self) == at::MemOverlap::Yes) {
    // Elements of an expanded self share memory: only the masked ones may be written (the
    // CPU's kernel writes nothing else), which the where() kernel below cannot promise, so
    // the masked positions are scattered (index_put_ of the value on the device; it reads the
    // mask's nonzero positions back, only in this deprecated case).
    const at::Tensor v = value.to(self.device(), self.scalar_type()).reshape({});
    self.index_put_({*m}, v);
    return self;
  }
  // self = where(mask, value, self), element by element in place.
  at::TensorIterator iter = at::TensorIteratorConfig()
                                .set_check_mem_overlap(false)
                                .check_all_same_dtype(false)
                                .allow_cpu_scalars(true)
                                .resize_outputs(false)
                                .add_output(self)
                                .add_const_input(*m)
                                .add_const_input(value)
                                .add_const_input(self)
                                .build();
  launch_elementwise(iter, "where", self.scalar_type(), {}, {.keep_inputs = 1u << 1});  // the mask
  return self;
}

at::Tensor& masked_fill_scalar_(at::Tensor& self, const at::Tensor& mask, const c10::Scalar& value) {
  if (self.is_complex()) return complex_masked_fill_(self, mask, at::scalar_tensor(value, at::kComplexDouble));
  vk_dtype(self.scalar_type(), "masked_fill_");
  return masked_fill_impl(self, mask, scalar_operand(scalar_to_dtype(value, self.scalar_type())));
}

at::Tensor& masked_fill_tensor_(at::Tensor& self, const at::Tensor& mask, const at::Tensor& value) {
  TORCH_CHECK(value.dim() == 0, "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
              value.dim(), " dimension(s).");
  if (self.is_complex()) return complex_masked_fill_(self, mask, value);
  vk_dtype(self.scalar_type(), "masked_fill_");
  if (value.device().is_cpu()) return masked_fill_scalar_(self, mask, value.item());
  // The CPU converts value.item() with the checked conversion of its fill (an int8 tensor
  // filled with a bfloat16 1e4 raises): a value of a dtype that self's dtype does not hold is
  // read on the host to do the same. Any other device value stays on the device (no sync),
  // broadcast as a tensor of self's dtype.
  if (!holds_values_of(value.scalar_type(), self.scalar_type()))
    return masked_fill_scalar_(self, mask, value.item());
  return masked_fill_impl(self, mask, value.to(self.scalar_type()));
}

// Inclusive int32 prefix sum of the row-major `mask` (any shape, bool), on the device.
at::Tensor mask_prefix(const at::Tensor& mask) {
  return at::cumsum(mask.contiguous().view({-1}), 0, at::kInt);
}

// The last element of a prefix sum: the number of selected elements (a host read).
int64_t prefix_total(const at::Tensor& prefix) {
  if (prefix.numel() == 0) return 0;
  return prefix[prefix.numel() - 1].item().toLong();
}

void set_compact_space(kernels::CompactProblem& p, at::IntArrayRef shape, const char* op) {
  TORCH_CHECK(shape.size() <= static_cast<size_t>(kernels::kMaxDims), "torch-vk: ", op,
              " supports at most ", kernels::kMaxDims, " dimensions, got ", shape.size());
  p.ndim = static_cast<int32_t>(shape.size());
  for (int d = 0; d < p.ndim; ++d) p.sizes[d] = shape[p.ndim - 1 - d];
}

void run_compact(const kernels::CompactProblem& p, c10::Device device) {
  const c10::DeviceGuard guard(device);
  tvk::Stream& stream = current_stream(device.index());
  translate_errors([&] { kernels::compact(stream, p); });
}

at::Tensor& nonzero_out(const at::Tensor& self, at::Tensor& out) {
  TORCH_CHECK(out.scalar_type() == at::kLong, "nonzero: Expected out tensor to have scalar type Long but got scalar type",
              out.scalar_type());
  TORCH_CHECK(self.numel() < std::numeric_limits<int>::max(), "nonzero is not supported for tensors with more than INT_MAX elements, \
  See https://github.com/pytorch/pytorch/issues/51871");
  TORCH_CHECK(self.dim() <= kernels::kMaxDims, "nonzero is not supported for tensor with more than ",
              kernels::kMaxDims, " dimensions");
  vk_dtype(self.scalar_type(), "nonzero");
  at::Tensor mask = at::empty(self.sizes(), self.options().dtype(at::kBool));
  at::ne_out(mask, self, 0);
  const at::Tensor prefix = mask_prefix(mask);
  const int64_t count = prefix_total(prefix);
  at::native::resize_output(out, {count, self.dim()});
  if (count == 0 || self.dim() == 0) return out;
  kernels::CompactProblem p;
  p.mode = kernels::CompactMode::Nonzero;
  set_compact_space(p, self.sizes(), "nonzero");
  p.dst = operand(out, "nonzero");
  p.dst_strides[0] = out.stride(0);
  p.dst_strides[1] = out.stride(1);
  p.prefix = reinterpret_cast<uint64_t>(prefix.data_ptr());
  run_compact(p, self.device());
  return out;
}

at::Tensor nonzero(const at::Tensor& self) {
  at::Tensor out = at::empty({0}, self.options().dtype(at::kLong));
  return nonzero_out(self, out);
}

// nonzero_static: the first `size` nonzero coordinates, rows past the count filled with
// fill_value, without reading the count back: the compaction writes into a [numel, ndim]
// buffer pre-filled with fill_value (it holds every possible row), whose first `size` rows
// are the result (padded with fill_value rows when size > numel).
at::Tensor& nonzero_static_out(const at::Tensor& self, int64_t size, int64_t fill_value, at::Tensor& out) {
  TORCH_CHECK(size >= 0, "nonzero_static: 'size' must be an non-negative integer");
  TORCH_CHECK(out.scalar_type() == at::kLong, "nonzero_static: Expected out tensor to have scalar type Long but got scalar type",
              out.scalar_type());
  TORCH_CHECK(self.numel() < std::numeric_limits<int>::max(), "nonzero_static is not supported for tensors with more than INT_MAX elements");
  TORCH_CHECK(self.dim() <= kernels::kMaxDims, "nonzero_static is not supported for tensor with more than ",
              kernels::kMaxDims, " dimensions");
  vk_dtype(self.scalar_type(), "nonzero_static");
  const c10::DeviceGuard guard(self.device());
  const int64_t ndim = self.dim();
  at::native::resize_output(out, {size, ndim});
  if (size == 0 || ndim == 0) return out;
  const int64_t numel = self.numel();
  at::Tensor rows = size >= numel ? out : at::empty({numel, ndim}, out.options());
  if (!rows.is_contiguous()) rows = at::empty({size, ndim}, out.options());
  rows.fill_(fill_value);
  if (numel > 0) {
    at::Tensor mask = at::empty(self.sizes(), self.options().dtype(at::kBool));
    at::ne_out(mask, self, 0);
    const at::Tensor prefix = mask_prefix(mask);
    kernels::CompactProblem p;
    p.mode = kernels::CompactMode::Nonzero;
    set_compact_space(p, self.sizes(), "nonzero_static");
    p.dst = operand(rows, "nonzero_static");
    p.dst_strides[0] = rows.stride(0);
    p.dst_strides[1] = rows.stride(1);
    p.prefix = reinterpret_cast<uint64_t>(prefix.data_ptr());
    run_compact(p, self.device());
  }
  if (!rows.is_same(out)) out.copy_(rows.narrow(0, 0, size));
  return out;
}

at::Tensor nonzero_static(const at::Tensor& self, int64_t size, int64_t fill_value) {
  at::Tensor out = at::empty({0}, self.options().dtype(at::kLong));
  return nonzero_static_out(self, size, fill_value, out);
}

at::Tensor& masked_select_out(const at::Tensor& self, const at::Tensor& mask, at::Tensor& out) {
  TORCH_CHECK(mask.scalar_type() == at::kBool, "masked_select: expected BoolTensor for mask");
  TORCH_CHECK(self.scalar_type() == out.scalar_type(), "masked_select(): self and result must have the same scalar type");
  check_vk(mask, self, "mask", "masked_select()");
  at::assert_no_internal_overlap(out);
  at::assert_no_overlap(out, self);
  at::assert_no_overlap(out, mask);
  vk_dtype(self.scalar_type(), "masked_select");
  auto [m, s] = at::expand_outplace(mask, self);
  const at::Tensor prefix = mask_prefix(*m);
  const int64_t count = prefix_total(prefix);
  at::native::resize_output(out, {count});
  if (count == 0) return out;
  kernels::CompactProblem p;
  p.mode = kernels::CompactMode::MaskedSelect;
  set_compact_space(p, s->sizes(), "masked_select");
  p.dst = operand(out, "masked_select");
  p.dst_strides[0] = out.stride(0);
  p.src = operand(*s, "masked_select");
  set_strides(p.src_strides, *s, p.ndim);
  p.prefix = reinterpret_cast<uint64_t>(prefix.data_ptr());
  run_compact(p, self.device());
  return out;
}

at::Tensor masked_select(const at::Tensor& self, const at::Tensor& mask) {
  at::Tensor out = at::empty({0}, self.options());
  return masked_select_out(self, mask, out);
}

at::Tensor& masked_scatter_(at::Tensor& self, const at::Tensor& mask, const at::Tensor& source) {
  at::assert_no_internal_overlap(self);
  TORCH_CHECK(self.scalar_type() == source.scalar_type(),
              "masked_scatter_: expected self and source to have same dtypes but got ",
              self.scalar_type(), " and ", source.scalar_type());
  TORCH_CHECK(mask.dtype() == at::ScalarType::Bool, "masked_scatter_ only supports boolean masks, but got mask with dtype ",
              mask.dtype());
  check_vk(mask, self, "mask", "masked_scatter_");
  check_vk(source, self, "source", "masked_scatter_");
  vk_dtype(self.scalar_type(), "masked_scatter_");
  const c10::MaybeOwned<at::Tensor> m = at::expand_inplace(self, mask, "masked_scatter_");
  if (self.numel() == 0) return self;
  const at::Tensor prefix = mask_prefix(*m);
  const at::Tensor src = source.contiguous();
  kernels::CompactProblem p;
  p.mode = kernels::CompactMode::MaskedScatter;
  set_compact_space(p, self.sizes(), "masked_scatter_");
  p.dst = operand(self, "masked_scatter_");
  set_strides(p.dst_strides, self, p.ndim);
  // An empty source still needs a valid address: the kernel never reads it then.
  p.src = src.numel() > 0 ? operand(src, "masked_scatter_") : p.dst;
  p.src_numel = src.numel();
  p.prefix = reinterpret_cast<uint64_t>(prefix.data_ptr());
  run_compact(p, self.device());
  return self;
}

// ---------------------------------------------------------------- take / put_

at::Tensor& take_out(const at::Tensor& self, const at::Tensor& index, at::Tensor& out) {
  TORCH_CHECK(index.scalar_type() == at::kLong, "take(): Expected a long tensor for index, but got ",
              index.scalar_type());
  TORCH_CHECK(self.scalar_type() == out.scalar_type(), "take(): self and out expected to have the same dtype, but got self.dtype = ",
              self.scalar_type(), " and out.dtype = ", out.scalar_type());
  check_vk(index, self, "index", "take()");
  at::assert_no_internal_overlap(out);
  at::assert_no_overlap(out, index);
  at::assert_no_overlap(out, self);
  vk_dtype(self.scalar_type(), "take");
  at::native::resize_output(out, index.sizes());
  if (index.numel() == 0) return out;
  TORCH_CHECK_INDEX(self.numel() > 0, "take(): tried to take from an empty tensor");
  const at::Tensor flat = self.contiguous();
  IndexProblem p;
  p.mode = IndexMode::Gather;
  set_space(p, index.sizes(), "take");
  p.dst = operand(out, "take");
  set_strides(p.dst_strides, out, p.ndim);
  p.src = operand(flat, "take");
  p.num_indices = 1;
  auto& t = p.indices[0];
  t.values = operand(index, "take");
  set_strides(t.strides, index, p.ndim);
  t.size = flat.numel();
  t.stride = 1;
  t.wrap_negative = true;
  p.error_code = code(DeviceErrorCode::TakeOutOfRange);
  run(p, self.device());
  return out;
}

at::Tensor take(const at::Tensor& self, const at::Tensor& index) {
  at::Tensor out = at::empty({0}, self.options());
  return take_out(self, index, out);
}

at::Tensor& put_(at::Tensor& self, const at::Tensor& index, const at::Tensor& source, bool accumulate) {
  TORCH_CHECK(index.scalar_type() == at::kLong, "put_(): Expected a long tensor for index, but got ",
              index.scalar_type());
  TORCH_CHECK(self.scalar_type() == source.scalar_type(),
              "put_(): self and source expected to have the same dtype, but got self.dtype = ",
              self.scalar_type(), " and source.dtype = ", source.scalar_type());
  TORCH_CHECK_INDEX(source.numel() == index.numel(),
              "put_(): Expected source and index to have the same number of elements, but got source.numel() = ",
              source.numel(), ", index.numel() = ", index.numel());
  check_vk(index, self, "index", "put_()");
  check_vk(source, self, "source", "put_()");
  at::assert_no_internal_overlap(self);
  at::assert_no_overlap(self, index);
  at::assert_no_overlap(self, source);
  vk_dtype(self.scalar_type(), "put_");
  if (index.numel() == 0) return self;
  TORCH_CHECK_INDEX(self.numel() > 0, "put_(): Tried to put elements into an empty tensor");
  const bool direct = self.is_contiguous();
  at::Tensor flat = direct ? self : self.contiguous();
  const at::Tensor src = source.reshape(index.sizes());
  IndexProblem p;
  p.mode = accumulate ? IndexMode::Accumulate : IndexMode::Scatter;
  p.op = AccumulateOp::Add;
  p.kind = accumulate_kind(self.scalar_type());
  set_space(p, index.sizes(), "put_");
  p.dst = operand(flat, "put_");
  p.src = operand(src, "put_");
  set_strides(p.src_strides, src, p.ndim);
  p.num_indices = 1;
  auto& t = p.indices[0];
  t.values = operand(index, "put_");
  set_strides(t.strides, index, p.ndim);
  t.size = flat.numel();
  t.stride = 1;
  t.wrap_negative = true;
  p.error_code = code(DeviceErrorCode::TakeOutOfRange);
  run(p, self.device());
  if (!direct) self.copy_(flat);
  return self;
}

// ---------------------------------------------------------------- embedding backward

// grad_weight[indices[j]] += grad[j] (atomic; rows of padding_idx stay zero). With
// scale_grad_by_freq every row is divided by the number of times its index occurs.
at::Tensor embedding_dense_backward(const at::Tensor& grad_output, const at::Tensor& indices,
                                   int64_t num_weights, int64_t padding_idx, bool scale_grad_by_freq) {
  TORCH_CHECK(indices.scalar_type() == at::kLong || indices.scalar_type() == at::kInt,
              "embedding_backward: Expected indices to have type Long or Int but got ", indices.scalar_type());
  check_vk(indices, grad_output, "indices", "embedding_backward");
  vk_dtype(grad_output.scalar_type(), "embedding_dense_backward");
  const int64_t n = indices.numel();
  const int64_t width = grad_output.size(-1);
  at::Tensor grad_weight = at::zeros({num_weights, width}, grad_output.options());
  if (n == 0 || width == 0) return grad_weight;
  const at::Tensor flat_indices = indices.reshape({n});
  at::Tensor grad = grad_output.reshape({n, width});
  if (scale_grad_by_freq) {
    const at::ScalarType count_type = grad.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
    at::Tensor counts = at::zeros({num_weights}, grad.options().dtype(count_type));
    launch_index_scatter(counts, 0, flat_indices, at::Tensor(), 1, IndexMode::Accumulate,
                         DeviceErrorCode::IndexOutOfRangeInSelf, false, "embedding_backward");
    // Out-of-range indices were reported above; index_select reports them again otherwise.
    const at::Tensor per_row = at::index_select(counts, 0, flat_indices).clamp_min_(1).reciprocal_();
    grad = (grad * per_row.unsqueeze(1)).to(grad.scalar_type());
  }
  launch_index_scatter(grad_weight, 0, flat_indices, grad, 0, IndexMode::Accumulate,
                       DeviceErrorCode::IndexOutOfRangeInSelf, false, "embedding_backward");
  if (padding_idx >= 0 && padding_idx < num_weights) grad_weight.select(0, padding_idx).zero_();
  return grad_weight;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("gather", TORCH_FN(gather));
  m.impl("gather.out", TORCH_FN(gather_out));
  m.impl("scatter.src", TORCH_FN(scatter_src));
  m.impl("scatter_.src", TORCH_FN(scatter_src_));
  m.impl("scatter.src_out", TORCH_FN(scatter_src_out));
  m.impl("scatter.value", TORCH_FN(scatter_value));
  m.impl("scatter_.value", TORCH_FN(scatter_value_));
  m.impl("scatter.value_out", TORCH_FN(scatter_value_out));
  m.impl("scatter.reduce", TORCH_FN(scatter_reduce));
  m.impl("scatter_.reduce", TORCH_FN(scatter_reduce_));
  m.impl("scatter.reduce_out", TORCH_FN(scatter_reduce_out));
  m.impl("scatter.value_reduce", TORCH_FN(scatter_value_reduce));
  m.impl("scatter_.value_reduce", TORCH_FN(scatter_value_reduce_));
  m.impl("scatter.value_reduce_out", TORCH_FN(scatter_value_reduce_out));
  m.impl("scatter_add", TORCH_FN(scatter_add));
  m.impl("scatter_add_", TORCH_FN(scatter_add_));
  m.impl("scatter_add.out", TORCH_FN(scatter_add_out));
  m.impl("scatter_reduce.two", TORCH_FN(scatter_reduce_two));
  m.impl("scatter_reduce_.two", TORCH_FN(scatter_reduce_two_));
  m.impl("scatter_reduce.two_out", TORCH_FN(scatter_reduce_two_out));
  m.impl("index_select", TORCH_FN(index_select));
  m.impl("index_select.out", TORCH_FN(index_select_out));
  m.impl("index.Tensor", TORCH_FN(index));
  m.impl("index.Tensor_out", TORCH_FN(index_out));
  m.impl("_index_put_impl_", TORCH_FN(index_put_impl_));
  m.impl("index_add", TORCH_FN(index_add));
  m.impl("index_add_", TORCH_FN(index_add_));
  m.impl("index_add.out", TORCH_FN(index_add_out));
  m.impl("index_reduce", TORCH_FN(index_reduce));
  m.impl("index_reduce_", TORCH_FN(index_reduce_));
  m.impl("index_reduce.out", TORCH_FN(index_reduce_out));
  m.impl("index_copy", TORCH_FN(index_copy));
  m.impl("index_copy_", TORCH_FN(index_copy_));
  m.impl("index_copy.out", TORCH_FN(index_copy_out));
  m.impl("index_fill_.int_Scalar", TORCH_FN(index_fill_scalar_));
  m.impl("index_fill_.int_Tensor", TORCH_FN(index_fill_tensor_));
  m.impl("masked_fill_.Scalar", TORCH_FN(masked_fill_scalar_));
  m.impl("masked_fill_.Tensor", TORCH_FN(masked_fill_tensor_));
  m.impl("masked_select", TORCH_FN(masked_select));
  m.impl("masked_select.out", TORCH_FN(masked_select_out));
  m.impl("masked_scatter_", TORCH_FN(masked_scatter_));
  m.impl("nonzero", TORCH_FN(nonzero));
  m.impl("nonzero.out", TORCH_FN(nonzero_out));
  m.impl("nonzero_static", TORCH_FN(nonzero_static));
  m.impl("nonzero_static.out", TORCH_FN(nonzero_static_out));
  m.impl("take", TORCH_FN(take));
  m.impl("take.out", TORCH_FN(take_out));
  m.impl("put_", TORCH_FN(put_));
  m.impl("embedding_dense_backward", TORCH_FN(embedding_dense_backward));
}

}  // namespace tvk::aten
