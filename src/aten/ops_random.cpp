// Native random ops: uniform_, normal_ (and the functional normal overloads), bernoulli_
// (scalar and tensor p) and bernoulli, random_ (full range, to, from/to), exponential_,
// geometric_, log_normal_, cauchy_, randperm, multinomial, native_dropout (+ backward).
//
// Argument checks come from PyTorch's own templates (ATen/native/DistributionTemplates.h,
// the ones CPU and CUDA use), so bad input raises what the CPU raises. Every kernel draws from
// the vk generator's Philox stream (src/aten/generator.h): a launch reserves
// kernels::kRandomCountersPerElement counter values per element, so consecutive launches use
// disjoint numbers and get_rng_state / set_rng_state replay them exactly. Element e's numbers
// depend only on (seed, offset, e) with e the row-major index, whatever the tensor's strides.
#include <ATen/ATen.h>
#include <ATen/native/DistributionTemplates.h>
#include <ATen/native/Resize.h>
#include <ATen/native/TensorFactories.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <cmath>
#include <mutex>

#include "aten/generator.h"
#include "aten/launch.h"
#include "aten/vk_common.h"
#include "kernels/random.h"
#include "runtime/graph.h"

namespace tvk::aten {
namespace {

using kernels::ComputeKind;
using kernels::RandomOp;

// Reserves `counters` counter values per element of one launch from `gen` (or the device's
// default generator). While the current stream captures a graph, the launch reads the seed
// and counter base from the graph's Philox block (graph_philox).
kernels::PhiloxState reserve(const std::optional<at::Generator>& gen, c10::DeviceIndex index,
                             uint64_t counters = kernels::kRandomCountersPerElement) {
  auto* impl = at::get_generator_or_default<VkGeneratorImpl>(gen, default_generator(index));
  std::lock_guard<std::mutex> lock(impl->mutex_);
  auto [seed, offset] = impl->philox_engine_inputs(counters);
  if (CapturedGraph* graph = current_stream(index).capture_graph()) {
    const GraphPhilox p = graph_philox(*graph, *impl, index, seed, offset);
    return {seed, p.relative_offset, p.address};
  }
  return {seed, offset};
}

// Records `op` writing `self` (any strides; more than kMaxDims dims go through a contiguous
// temporary). `in0` / `in1`, when defined, are read (in1 written for Dropout) with the same
// logical indexing; they must have self's sizes (expanded views are fine).
void launch_random(const at::Tensor& self, RandomOp op, const std::optional<at::Generator>& gen,
                   double p0, double p1, const char* name, const at::Tensor& in0 = {},
                   const at::Tensor& in1 = {}, int64_t i0 = 0, int64_t i1 = 0) {
  if (self.numel() == 0) return;
  if (self.dim() > kernels::kMaxDims) {
    at::Tensor tmp = at::empty(self.sizes(), self.options());
    at::Tensor a = in0.defined() ? in0.contiguous() : in0;
    at::Tensor b = in1.defined() ? at::empty(in1.sizes(), in1.options()) : in1;
    launch_random(tmp.view({-1}), op, gen, p0, p1, name, a.defined() ? a.view({-1}) : a,
                  b.defined() ? b.view({-1}) : b, i0, i1);
    self.copy_(tmp);
    if (b.defined()) in1.copy_(b);
    return;
  }
  kernels::RandomElementwise p;
  p.op = op;
  bool f64 = self.scalar_type() == at::kDouble;
  const at::Tensor* ins[2] = {&in0, &in1};
  for (const at::Tensor* t : ins)
    if (t->defined() && t->scalar_type() == at::kDouble) f64 = true;
  if (op == RandomOp::RandomInt)
    p.kind = f64 ? ComputeKind::Float64 : ComputeKind::Int64;
  else
    p.kind = f64 ? ComputeKind::Float64 : ComputeKind::Float32;
  p.numel = self.numel();
  const int64_t nd = self.dim();
  p.geometry.ndim = static_cast<int32_t>(nd);
  for (int64_t d = 0; d < nd; ++d) {
    const int64_t src = nd - 1 - d;  // dim 0 of the geometry = the last (fastest) dim
    p.geometry.sizes[d] = self.size(src);
    p.geometry.strides[0][d] = self.stride(src);
    for (int k = 0; k < 2; ++k)
      if (ins[k]->defined()) p.geometry.strides[k + 1][d] = ins[k]->stride(src);
  }
  p.out = operand(self, name);
  if (in0.defined()) p.in0 = operand(in0, name);
  if (in1.defined()) p.in1 = operand(in1, name);
  p.p[0] = p0;
  p.p[1] = p1;
  p.i[0] = i0;
  p.i[1] = i1;
  p.tensor_p = op == RandomOp::Bernoulli && in0.defined();
  const c10::DeviceGuard guard(self.device());
  if (op != RandomOp::MaskedScale) p.philox = reserve(gen, self.device().index());
  tvk::Stream& stream = current_stream(self.device().index());
  translate_errors([&] { kernels::random_elementwise(stream, p); });
}

// ---------------------------------------------------------------- kernels for the templates

template <typename RNG>
struct UniformKernel {
  void operator()(at::TensorIteratorBase& iter, double from, double to, std::optional<at::Generator> gen) {
    launch_random(iter.tensor(0), RandomOp::Uniform, gen, from, to, "uniform_");
  }
};

template <typename RNG>
struct NormalKernel {
  void operator()(const at::TensorBase& self, double mean, double std, std::optional<at::Generator> gen) {
    at::Tensor t(self);
    if (!at::isFloatingType(t.scalar_type())) raise_not_implemented_for("normal_kernel_cpu", t.scalar_type());
    launch_random(t, RandomOp::Normal, gen, mean, std, "normal_");
  }
};

template <typename RNG>
struct LogNormalKernel {
  void operator()(at::TensorIteratorBase& iter, double mean, double std, std::optional<at::Generator> gen) {
    const at::Tensor& t = iter.tensor(0);
    if (!at::isFloatingType(t.scalar_type())) raise_not_implemented_for("log_normal_cpu", t.scalar_type());
    launch_random(t, RandomOp::LogNormal, gen, mean, std, "log_normal_");
  }
};

template <typename RNG>
struct ExponentialKernel {
  void operator()(at::TensorIteratorBase& iter, double lambda, std::optional<at::Generator> gen) {
    const at::Tensor& t = iter.tensor(0);
    TORCH_CHECK(at::isFloatingType(t.scalar_type()),
                "Exponential distribution is a continuous probability distribution. dtype must be "
                "a floating point but you specified ",
                t.dtype());
    launch_random(t, RandomOp::Exponential, gen, lambda, 0.0, "exponential_");
  }
};

template <typename RNG>
struct GeometricKernel {
  void operator()(at::TensorIteratorBase& iter, double p, std::optional<at::Generator> gen) {
    const at::Tensor& t = iter.tensor(0);
    if (t.scalar_type() == at::kBool) raise_not_implemented_for("geometric_cpu", t.scalar_type());
    launch_random(t, RandomOp::Geometric, gen, p, std::log1p(-p), "geometric_");
  }
};

template <typename RNG>
struct CauchyKernel {
  void operator()(at::TensorIteratorBase& iter, double median, double sigma, std::optional<at::Generator> gen) {
    launch_random(iter.tensor(0), RandomOp::Cauchy, gen, median, sigma, "cauchy_");
  }
};

template <typename RNG>
struct BernoulliTensorKernel {
  void operator()(const at::TensorBase& self_base, const at::TensorBase& p_base,
                  std::optional<at::Generator> gen) {
    at::Tensor self(self_base);
    at::Tensor p(p_base);
    TORCH_CHECK(at::isFloatingType(p.scalar_type()), "expected probabilities tensor to have floating type, got ",
                p.scalar_type());
    // p broadcasts to self (as the CPU's expand_inplace); a CPU p is moved to the device.
    at::Tensor pe = p.to(self.device()).expand(self.sizes());
    // p outside [0, 1] (or NaN) is checked by the kernel on the device (no host wait): the
    // CPU's RuntimeError is raised at the stream's next synchronization.
    launch_random(self, RandomOp::Bernoulli, gen, 0.0, 0.0, "bernoulli_", pe);
  }
};

template <typename RNG>
struct BernoulliScalarKernel {
  void operator()(const at::TensorBase& self, double p, std::optional<at::Generator> gen) {
    launch_random(at::Tensor(self), RandomOp::Bernoulli, gen, p, 0.0, "bernoulli_");
  }
};

// random_: from + r mod range. The full-range variants follow the CPU's per-dtype ranges.
template <typename RNG>
struct RandomFromToKernel {
  void operator()(at::TensorIteratorBase& iter, uint64_t range, int64_t base, std::optional<at::Generator> gen) {
    launch_random(iter.tensor(0), RandomOp::RandomInt, gen, 0, 0, "random_", {}, {}, base,
                  static_cast<int64_t>(range));
  }
  void operator()(at::TensorIteratorBase& iter, std::optional<at::Generator> gen) {
    launch_random(iter.tensor(0), RandomOp::RandomInt, gen, 0, 0, "random_", {}, {}, 0, 0);
  }
};

template <typename RNG>
struct RandomKernel {
  void operator()(at::TensorIteratorBase& iter, std::optional<at::Generator> gen) {
    const at::Tensor& t = iter.tensor(0);
    uint64_t range = 0;
    switch (t.scalar_type()) {
      case at::kBool: range = 2; break;
      case at::kByte: range = 256; break;
      case at::kChar: range = 128; break;
      case at::kShort: range = 32768; break;
      case at::kInt: range = uint64_t{1} << 31; break;
      case at::kLong: range = uint64_t{1} << 63; break;
      case at::kHalf: range = (uint64_t{1} << 11) + 1; break;
      case at::kBFloat16: range = (uint64_t{1} << 8) + 1; break;
      case at::kFloat: range = (uint64_t{1} << 24) + 1; break;
      case at::kDouble: range = (uint64_t{1} << 53) + 1; break;
      default: raise_not_implemented_for("random_", t.scalar_type());
    }
    launch_random(t, RandomOp::RandomInt, gen, 0, 0, "random_", {}, {}, 0, static_cast<int64_t>(range));
  }
};

using RNG = VkGeneratorImpl*;
namespace tpl = at::native::templates;

at::Tensor& uniform_(at::Tensor& self, double from, double to, std::optional<at::Generator> gen) {
  return tpl::uniform_impl_<UniformKernel, RNG>(self, from, to, gen);
}
at::Tensor& normal_(at::Tensor& self, double mean, double std, std::optional<at::Generator> gen) {
  return tpl::normal_impl_<NormalKernel, RNG>(self, mean, std, gen);
}
at::Tensor& normal_tt_out(const at::Tensor& mean, const at::Tensor& std, std::optional<at::Generator> gen, at::Tensor& out) {
  return tpl::normal_out_impl<NormalKernel, RNG>(out, mean, std, gen);
}
at::Tensor& normal_tf_out(const at::Tensor& mean, double std, std::optional<at::Generator> gen, at::Tensor& out) {
  return tpl::normal_out_impl<NormalKernel, RNG>(out, mean, std, gen);
}
at::Tensor& normal_ft_out(double mean, const at::Tensor& std, std::optional<at::Generator> gen, at::Tensor& out) {
  return tpl::normal_out_impl<NormalKernel, RNG>(out, mean, std, gen);
}
at::Tensor normal_tt(const at::Tensor& mean, const at::Tensor& std, std::optional<at::Generator> gen) {
  return tpl::normal_impl<NormalKernel, RNG>(mean, std, gen);
}
at::Tensor normal_tf(const at::Tensor& mean, double std, std::optional<at::Generator> gen) {
  return tpl::normal_impl<NormalKernel, RNG>(mean, std, gen);
}
at::Tensor normal_ft(double mean, const at::Tensor& std, std::optional<at::Generator> gen) {
  return tpl::normal_impl<NormalKernel, RNG>(mean, std, gen);
}
at::Tensor& log_normal_(at::Tensor& self, double mean, double std, std::optional<at::Generator> gen) {
  return tpl::log_normal_impl_<LogNormalKernel, RNG>(self, mean, std, gen);
}
at::Tensor& exponential_(at::Tensor& self, double lambda, std::optional<at::Generator> gen) {
  return tpl::exponential_impl_<ExponentialKernel, RNG>(self, lambda, gen);
}
at::Tensor& geometric_(at::Tensor& self, double p, std::optional<at::Generator> gen) {
  return tpl::geometric_impl_<GeometricKernel, RNG>(self, p, gen);
}
at::Tensor& cauchy_(at::Tensor& self, double median, double sigma, std::optional<at::Generator> gen) {
  return tpl::cauchy_impl_<CauchyKernel, RNG>(self, median, sigma, gen);
}
at::Tensor& bernoulli_tensor_(at::Tensor& self, const at::Tensor& p, std::optional<at::Generator> gen) {
  return tpl::bernoulli_impl_<BernoulliTensorKernel, RNG>(self, p, gen);
}
at::Tensor& bernoulli_scalar_(at::Tensor& self, double p, std::optional<at::Generator> gen) {
  return tpl::bernoulli_impl_<BernoulliScalarKernel, RNG>(self, p, gen);
}
at::Tensor bernoulli(const at::Tensor& self, std::optional<at::Generator> gen) {
  at::Tensor out = at::empty_like(self, at::MemoryFormat::Contiguous);
  return bernoulli_tensor_(out, self, gen);
}
at::Tensor& bernoulli_out(const at::Tensor& self, std::optional<at::Generator> gen, at::Tensor& out) {
  return tpl::bernoulli_out_impl<BernoulliTensorKernel, RNG>(out, self, gen);
}
at::Tensor bernoulli_p(const at::Tensor& self, double p, std::optional<at::Generator> gen) {
  at::Tensor out = at::empty_like(self, at::MemoryFormat::Contiguous);
  return bernoulli_scalar_(out, p, gen);
}
at::Tensor& random_(at::Tensor& self, std::optional<at::Generator> gen) {
  return tpl::random_impl<RandomKernel, RNG>(self, gen);
}
at::Tensor& random_from_(at::Tensor& self, int64_t from, std::optional<int64_t> to, std::optional<at::Generator> gen) {
  return tpl::random_from_to_impl<RandomFromToKernel, RNG>(self, from, to, gen);
}
at::Tensor& random_to_(at::Tensor& self, int64_t to, std::optional<at::Generator> gen) {
  return random_from_(self, 0, to, gen);
}

// ---------------------------------------------------------------- randperm

at::Tensor& randperm_out(int64_t n, std::optional<at::Generator> gen, at::Tensor& out) {
  TORCH_CHECK(n >= 0, "n must be non-negative, got", n);
  at::native::check_supported_max_int_with_precision(n, out);
  vk_dtype(out.scalar_type(), "randperm");
  TORCH_CHECK(out.scalar_type() != at::kBool, "\"randperm\" not implemented for 'Bool'");
  at::native::resize_output(out, {n});
  if (n == 0) return out;
  const c10::DeviceGuard guard(out.device());
  const int64_t slots = kernels::sort_scratch_elements(1, n);
  at::Tensor keys = at::empty({slots}, out.options().dtype(at::kLong));
  at::Tensor values = at::empty({slots}, out.options().dtype(at::kInt));
  const kernels::PhiloxState philox = reserve(gen, out.device().index());
  tvk::Stream& stream = current_stream(out.device().index());
  translate_errors([&] {
    kernels::randperm(stream, n, operand(out, "randperm"), out.stride(0), operand(keys, "randperm"),
                      operand(values, "randperm"), philox);
  });
  return out;
}

at::Tensor randperm(int64_t n, std::optional<at::Generator> gen, std::optional<at::ScalarType> dtype,
                    std::optional<at::Layout> layout, std::optional<at::Device> device,
                    std::optional<bool> pin_memory) {
  at::Tensor out = at::empty({0}, at::TensorOptions()
                                       .dtype(dtype.value_or(at::kLong))
                                       .layout(layout)
                                       .device(device)
                                       .pinned_memory(pin_memory));
  return randperm_out(n, gen, out);
}

at::Tensor randperm_nogen(int64_t n, std::optional<at::ScalarType> dtype, std::optional<at::Layout> layout,
                          std::optional<at::Device> device, std::optional<bool> pin_memory) {
  return randperm(n, std::nullopt, dtype, layout, device, pin_memory);
}

at::Tensor& randperm_nogen_out(int64_t n, at::Tensor& out) { return randperm_out(n, std::nullopt, out); }

// ---------------------------------------------------------------- multinomial

at::Tensor& multinomial_out(const at::Tensor& self, int64_t n_sample, bool replacement,
                            std::optional<at::Generator> gen, at::Tensor& result) {
  TORCH_CHECK(result.device() == self.device(), "multinomial arguments must have the same device");
  TORCH_CHECK(self.dim() > 0 && self.dim() <= 2, "prob_dist must be 1 or 2 dim");
  TORCH_CHECK(at::isFloatingType(self.scalar_type()),
              "multinomial only supports floating-point dtypes for input, got: ", self.scalar_type());
  TORCH_CHECK(result.scalar_type() == at::ScalarType::Long,
              "multinomial expects Long tensor out, got: ", result.scalar_type());
  TORCH_CHECK(n_sample > 0, "cannot sample n_sample <= 0 samples");
  const int64_t n_categories = self.size(-1);
  TORCH_CHECK(replacement || (n_sample <= n_categories),
              "cannot sample n_sample > prob_dist.size(-1) samples without replacement");
  TORCH_CHECK(n_categories <= (int64_t{1} << 24), "number of categories cannot exceed 2^24");
  if (self.dim() == 1)
    result.resize_({n_sample});
  else
    result.resize_({self.size(0), n_sample});
  if (result.numel() == 0) return result;
  const int64_t rows = self.dim() == 1 ? 1 : self.size(0);
  vk_dtype(self.scalar_type(), "multinomial");
  const c10::DeviceGuard guard(self.device());
  const c10::DeviceIndex index = self.device().index();
  tvk::Stream& stream = current_stream(index);

  // Sanity checks, as the CPU's: one flag word read back (the CPU reads its checks back too).
  const at::Tensor probs = self.contiguous();
  const at::ScalarType acc = self.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  const at::Tensor sums = at::sum(probs.view({rows, n_categories}), {1}, false, acc);
  at::Tensor flags = at::zeros({1}, self.options().dtype(at::kInt));
  translate_errors([&] {
    kernels::check_probabilities(stream, rows, n_categories, operand(probs, "multinomial"),
                                 operand(sums, "multinomial"),
                                 reinterpret_cast<uint64_t>(flags.data_ptr()));
  });
  const int bits = flags.item<int>();
  TORCH_CHECK(!(bits & 1), "probability tensor contains either `inf`, `nan` or element < 0");
  TORCH_CHECK(!(bits & 2), "invalid multinomial distribution (sum of probabilities <= 0)");

  const bool direct = result.is_contiguous();
  at::Tensor out = direct ? result : at::empty(result.sizes(), result.options());
  const kernels::PhiloxState philox = reserve(gen, index);
  if (!replacement) {
    const int64_t slots = kernels::sort_scratch_elements(rows, n_categories);
    at::Tensor keys = at::empty({slots}, self.options().dtype(at::kLong));
    at::Tensor values = at::empty({slots}, self.options().dtype(at::kInt));
    translate_errors([&] {
      kernels::multinomial_without_replacement(stream, rows, n_categories, n_sample,
                                               operand(probs, "multinomial"), operand(out, "multinomial"),
                                               operand(keys, "multinomial"), operand(values, "multinomial"),
                                               philox);
    });
  } else {
    const at::Tensor cdf = at::cumsum(probs.view({rows, n_categories}), 1, acc);
    translate_errors([&] {
      kernels::multinomial_with_replacement(stream, rows, n_categories, n_sample, operand(cdf, "multinomial"),
                                            operand(out, "multinomial"), philox);
    });
  }
  if (!direct) result.copy_(out);
  return result;
}

at::Tensor multinomial(const at::Tensor& self, int64_t n_sample, bool replacement,
                       std::optional<at::Generator> gen) {
  at::Tensor result = at::empty({0}, self.options().dtype(at::kLong));
  return multinomial_out(self, n_sample, replacement, gen, result);
}

// ---------------------------------------------------------------- dropout

std::tuple<at::Tensor, at::Tensor> native_dropout(const at::Tensor& input, double p,
                                                  std::optional<bool> train) {
  if (input.numel() == 0)
    return std::make_tuple(input, at::empty_like(input, input.options().dtype(at::kBool)));
  if (train.has_value() && !*train)
    return std::make_tuple(input.clone(), at::ones_like(input, input.options().dtype(at::kBool)));
  const double keep = 1.0 - p;
  TORCH_CHECK(0 <= keep && keep <= 1, "bernoulli_ expects p to be in [0, 1], but got p=", keep);
  // The CPU computes input * mask * scale in place: integer inputs cannot hold the float scale.
  TORCH_CHECK(at::isFloatingType(input.scalar_type()), "result type Float can't be cast to the desired output type ",
              input.scalar_type());
  const double scale = keep == 0 ? 0.0 : 1.0 / keep;
  at::Tensor output = at::empty_like(input);
  at::Tensor mask = at::empty_like(input, input.options().dtype(at::kBool));
  // A one-kernel mask + scale; in0 = input, in1 = mask (written).
  launch_random(output, RandomOp::Dropout, std::nullopt, keep, scale, "native_dropout",
                input.expand(output.sizes()), mask);
  return std::make_tuple(output, mask);
}

at::Tensor native_dropout_backward(const at::Tensor& grad, const at::Tensor& mask, double scale) {
  TORCH_CHECK(mask.scalar_type() == at::kBool,
              "Mask should be Bool Scalar Type", mask.scalar_type());
  at::Tensor out = at::empty_like(grad);
  launch_random(out, RandomOp::MaskedScale, std::nullopt, 0.0, scale, "native_dropout_backward",
                grad.expand(out.sizes()), mask.expand(out.sizes()));
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("uniform_", TORCH_FN(uniform_));
  m.impl("normal_", TORCH_FN(normal_));
  m.impl("normal.Tensor_Tensor", TORCH_FN(normal_tt));
  m.impl("normal.Tensor_float", TORCH_FN(normal_tf));
  m.impl("normal.float_Tensor", TORCH_FN(normal_ft));
  m.impl("normal.Tensor_Tensor_out", TORCH_FN(normal_tt_out));
  m.impl("normal.Tensor_float_out", TORCH_FN(normal_tf_out));
  m.impl("normal.float_Tensor_out", TORCH_FN(normal_ft_out));
  m.impl("log_normal_", TORCH_FN(log_normal_));
  m.impl("exponential_", TORCH_FN(exponential_));
  m.impl("geometric_", TORCH_FN(geometric_));
  m.impl("cauchy_", TORCH_FN(cauchy_));
  m.impl("bernoulli_.Tensor", TORCH_FN(bernoulli_tensor_));
  m.impl("bernoulli_.float", TORCH_FN(bernoulli_scalar_));
  m.impl("bernoulli", TORCH_FN(bernoulli));
  m.impl("bernoulli.out", TORCH_FN(bernoulli_out));
  m.impl("bernoulli.p", TORCH_FN(bernoulli_p));
  m.impl("random_", TORCH_FN(random_));
  m.impl("random_.to", TORCH_FN(random_to_));
  m.impl("random_.from", TORCH_FN(random_from_));
  m.impl("randperm", TORCH_FN(randperm_nogen));
  m.impl("randperm.generator", TORCH_FN(randperm));
  m.impl("randperm.out", TORCH_FN(randperm_nogen_out));
  m.impl("randperm.generator_out", TORCH_FN(randperm_out));
  m.impl("multinomial", TORCH_FN(multinomial));
  m.impl("multinomial.out", TORCH_FN(multinomial_out));
  m.impl("native_dropout", TORCH_FN(native_dropout));
  m.impl("native_dropout_backward", TORCH_FN(native_dropout_backward));
}

}  // namespace tvk::aten
