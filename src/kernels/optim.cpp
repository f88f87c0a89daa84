// Launcher of the fused optimizer family (shaders/optim.comp).
//
// Why one multi-tensor dispatch instead of one per parameter: a model has hundreds of small
// parameter tensors (biases, norms) and on a real GPU each launch costs more than updating
// such a tensor. The tensors' addresses and sizes go into a table in the stream's parameter
// ring (host-visible, valid until the recorded work completes); the grid is split into chunks
// of kChunk elements and each workgroup finds its chunk's tensor by binary search. Chunks
// never straddle tensors, so all memory accesses of a workgroup are contiguous.
#include "kernels/optim.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "kernels/launch.h"
#include "runtime/device.h"
#include "runtime/pipeline.h"
#include "runtime/stream.h"

namespace tvk::kernels {
namespace {

constexpr const char* kWhere = "tvk::kernels::optim_step";
constexpr uint32_t kWorkgroup = 256;
constexpr int32_t kChunk = 16 * kWorkgroup;  // elements per chunk

enum Flags : int32_t {
  kAmsgrad = 1,
  kMaximize = 2,
  kGradScale = 4,
  kFoundInf = 8,
  kLrTensor = 16,
  kMomentum = 32,
  kNesterov = 64,
  kFirstStep = 128,
};

// Mirrors `Push` in shaders/optim.comp.
struct OptimPush {
  uint64_t table;
  uint64_t lr_addr;
  uint64_t grad_scale;
  uint64_t found_inf;
  int32_t num_tensors;
  int32_t num_chunks;
  int32_t chunk;
  int32_t dtype;
  int32_t flags;
  int32_t pad;
};
static_assert(sizeof(OptimPush) == 56);

// Mirrors `Entry` in shaders/optim.comp.
struct TableEntry {
  uint64_t param, grad, state0, state1, state2, step;
  int32_t numel, chunk_begin, pad0, pad1;
};
static_assert(sizeof(TableEntry) == 64);

constexpr size_t kHeaderBytes = 96;  // float hf[8] at 0, double hd[8] at 32

const char* op_name(OptimOp op) {
  switch (op) {
    case OptimOp::Adam: return "adam";
    case OptimOp::AdamW: return "adamw";
    case OptimOp::Sgd: return "sgd";
    case OptimOp::Adagrad: return "adagrad";
  }
  return "?";
}

void check_address(uint64_t address, uint64_t align, const char* what) {
  if (address == 0) invalid(kWhere, std::string(what) + ": address is 0");
  if (address % align != 0) invalid(kWhere, std::string(what) + ": address is misaligned");
}

double log_or_neg_inf(double beta) { return beta > 0 ? std::log(beta) : -INFINITY; }

// Uploads the table (header of hyperparameters + one entry per tensor) of each batch of up to
// kOptimMaxTensorsPerDispatch tensors and records one dispatch per batch; `push` carries the
// other fields.
void dispatch_tables(Stream& stream, VkPipeline pipeline, const std::vector<OptimTensor>& work,
                     const double (&hyper)[8], OptimPush push) {
  const uint64_t esize = dtype_size(static_cast<DType>(push.dtype));
  float hyper_f[8];
  for (int i = 0; i < 8; ++i) hyper_f[i] = static_cast<float>(hyper[i]);
  for (size_t first = 0; first < work.size(); first += kOptimMaxTensorsPerDispatch) {
    const size_t count = std::min<size_t>(kOptimMaxTensorsPerDispatch, work.size() - first);
    std::vector<unsigned char> table(kHeaderBytes + count * sizeof(TableEntry));
    std::memcpy(table.data(), hyper_f, sizeof hyper_f);
    std::memcpy(table.data() + 32, hyper, sizeof hyper);
    int64_t chunks = 0;
    // Scalar tensors (lr, grad_scale, found_inf: 4 bytes; the AMP unscale writes found_inf),
    // then per tensor the param (the gradient for the unscale) and the states, updated in
    // place, the grad and the step count, read. Many tensors widen the ranges (AccessSet).
    AccessSet accesses;
    accesses.read(push.lr_addr, 4).read(push.grad_scale, 4).read(push.found_inf, 4);
    accesses.write(push.found_inf, 4);
    for (size_t i = 0; i < count; ++i) {
      const OptimTensor& t = work[first + i];
      const uint64_t bytes = static_cast<uint64_t>(t.numel) * esize;
      for (uint64_t updated : {t.param, t.state0, t.state1, t.state2})
        accesses.read(updated, bytes).write(updated, bytes);
      accesses.read(t.grad, bytes).read(t.step, 4);
      TableEntry e{t.param, t.grad, t.state0, t.state1, t.state2, t.step,
                   static_cast<int32_t>(t.numel), static_cast<int32_t>(chunks), 0, 0};
      std::memcpy(table.data() + kHeaderBytes + i * sizeof e, &e, sizeof e);
      chunks += (t.numel + kChunk - 1) / kChunk;
    }
    if (chunks > kMaxIndex) invalid(kWhere, "too many chunks for one dispatch");
    push.table = stream.upload_params(table.data(), table.size());
    push.num_tensors = static_cast<int32_t>(count);
    push.num_chunks = static_cast<int32_t>(chunks);
    push.chunk = kChunk;
    stream.dispatch(pipeline, group_count(stream, chunks, 1), 1, 1, &push, sizeof push, nullptr, 0,
                    &accesses);
  }
}

}  // namespace

void optim_step(Stream& stream, const OptimStep& s) {
  const int opi = static_cast<int>(s.op);
  if (opi < 0 || (opi > 2 && s.op != OptimOp::Adagrad))
    invalid(kWhere, "invalid op " + std::to_string(opi));
  if (s.kind != ComputeKind::Float32 && s.kind != ComputeKind::Float64)
    invalid(kWhere, "the kind must be Float32 or Float64");
  const bool f64 = s.kind == ComputeKind::Float64;
  if (f64 && !stream.device().caps().float64)
    throw std::invalid_argument("float64 is not supported on this device (no shaderFloat64)");
  check_dtype(kWhere, s.dtype, "tensors");
  if (s.dtype != DType::Float32 && s.dtype != DType::Float16 && s.dtype != DType::BFloat16 &&
      s.dtype != DType::Float64)
    invalid(kWhere, "parameters must be floating point");
  if (s.dtype == DType::Float64 && !f64) invalid(kWhere, "float64 tensors need the Float64 kind");
  if (s.lr_tensor) check_address(s.lr_tensor, 4, "lr tensor");
  if (s.grad_scale) check_address(s.grad_scale, 4, "grad_scale");
  if (s.found_inf) check_address(s.found_inf, 4, "found_inf");

  const bool adam = s.op == OptimOp::Adam || s.op == OptimOp::AdamW;
  const bool sgd = s.op == OptimOp::Sgd;
  const uint64_t esize = dtype_size(s.dtype);
  std::vector<OptimTensor> work;
  work.reserve(s.tensors.size());
  for (const OptimTensor& t : s.tensors) {
    if (t.numel < 0) invalid(kWhere, "negative numel");
    if (t.numel > kMaxIndex) invalid(kWhere, "more elements than the kernel's 32-bit index range");
    if (t.numel == 0) continue;
    check_address(t.param, esize, "param");
    check_address(t.grad, esize, "grad");
    if (adam) {
      check_address(t.state0, esize, "exp_avg");
      check_address(t.state1, esize, "exp_avg_sq");
      if (s.amsgrad) check_address(t.state2, esize, "max_exp_avg_sq");
      check_address(t.step, 4, "state_step");
    } else if (s.op == OptimOp::Adagrad) {
      check_address(t.state0, esize, "state_sum");
      check_address(t.step, 4, "state_step");
    } else if (s.momentum) {
      check_address(t.state0, esize, "momentum_buffer");
    }
    work.push_back(t);
  }
  if (work.empty()) return;

  int32_t flags = 0;
  if (s.amsgrad && adam) flags |= kAmsgrad;
  if (s.maximize) flags |= kMaximize;
  if (s.grad_scale) flags |= kGradScale;
  if (s.found_inf) flags |= kFoundInf;
  if (s.lr_tensor) flags |= kLrTensor;
  if (sgd && s.momentum) flags |= kMomentum;
  if (sgd && s.nesterov) flags |= kNesterov;
  if (sgd && s.first_step) flags |= kFirstStep;

  const double hyper[8] = {s.lr, s.beta1, s.beta2, s.weight_decay, s.eps,
                           log_or_neg_inf(s.beta1), log_or_neg_inf(s.beta2), 0.0};

  const std::string name = std::string("optim.") + op_name(s.op) + (f64 ? ".float64" : ".float32");
  const ShaderBinary* shader = find_shader(name);
  if (!shader) invalid(kWhere, "no shader variant '" + name + "' (stale build?)");
  std::vector<uint32_t> spec = {tuning().specialize_dtypes ? static_cast<uint32_t>(s.dtype)
                                                           : UINT32_MAX};
  VkPipeline pipeline = stream.device().pipelines().get(*shader, kWorkgroup, spec);

  OptimPush push{};
  push.lr_addr = s.lr_tensor;
  push.grad_scale = s.grad_scale;
  push.found_inf = s.found_inf;
  push.dtype = static_cast<int32_t>(s.dtype);
  push.flags = flags;
  dispatch_tables(stream, pipeline, work, hyper, push);
}

void amp_unscale(Stream& stream, const AmpUnscale& u) {
  if (u.kind != ComputeKind::Float32 && u.kind != ComputeKind::Float64)
    invalid(kWhere, "the kind must be Float32 or Float64");
  const bool f64 = u.kind == ComputeKind::Float64;
  if (f64 && !stream.device().caps().float64)
    throw std::invalid_argument("float64 is not supported on this device (no shaderFloat64)");
  if (u.dtype != DType::Float32 && u.dtype != DType::Float16 && u.dtype != DType::BFloat16 &&
      u.dtype != DType::Float64)
    invalid(kWhere, "gradients must be floating point");
  if (u.dtype == DType::Float64 && !f64) invalid(kWhere, "float64 tensors need the Float64 kind");
  check_address(u.found_inf, 4, "found_inf");
  check_address(u.inv_scale, 4, "inv_scale");
  std::vector<OptimTensor> work;
  for (const OptimTensor& t : u.tensors) {
    if (t.numel < 0) invalid(kWhere, "negative numel");
    if (t.numel > kMaxIndex) invalid(kWhere, "more elements than the kernel's 32-bit index range");
    if (t.numel == 0) continue;
    check_address(t.param, dtype_size(u.dtype), "gradient");
    work.push_back(t);
  }
  if (work.empty()) return;
  const std::string name = std::string("optim.amp_unscale") + (f64 ? ".float64" : ".float32");
  const ShaderBinary* shader = find_shader(name);
  if (!shader) invalid(kWhere, "no shader variant '" + name + "' (stale build?)");
  std::vector<uint32_t> spec = {tuning().specialize_dtypes ? static_cast<uint32_t>(u.dtype)
                                                           : UINT32_MAX};
  VkPipeline pipeline = stream.device().pipelines().get(*shader, kWorkgroup, spec);
  OptimPush push{};
  push.grad_scale = u.inv_scale;
  push.found_inf = u.found_inf;
  push.dtype = static_cast<int32_t>(u.dtype);
  const double hyper[8] = {};
  dispatch_tables(stream, pipeline, work, hyper, push);
}

void amp_update_scale(Stream& stream, uint64_t scale, uint64_t growth_tracker, uint64_t found_inf,
                      double growth, double backoff, int64_t growth_interval) {
  check_address(scale, 4, "scale");
  check_address(growth_tracker, 4, "growth_tracker");
  check_address(found_inf, 4, "found_inf");
  if (growth_interval < INT32_MIN || growth_interval > INT32_MAX)
    invalid(kWhere, "growth_interval out of the int32 range");
  const ShaderBinary* shader = find_shader("optim.amp_update_scale.float32");
  if (!shader) invalid(kWhere, "no shader variant 'optim.amp_update_scale.float32' (stale build?)");
  VkPipeline pipeline = stream.device().pipelines().get(*shader, 1, {UINT32_MAX});
  unsigned char header[kHeaderBytes] = {};
  const float factors[2] = {static_cast<float>(growth), static_cast<float>(backoff)};
  std::memcpy(header, factors, sizeof factors);
  OptimPush push{};
  push.table = stream.upload_params(header, sizeof header);
  push.lr_addr = scale;
  push.grad_scale = growth_tracker;
  push.found_inf = found_inf;
  push.chunk = static_cast<int32_t>(growth_interval);
  AccessSet accesses;
  accesses.read(scale, 4).write(scale, 4).read(growth_tracker, 4).write(growth_tracker, 4);
  accesses.read(found_inf, 4);
  stream.dispatch(pipeline, 1, 1, 1, &push, sizeof push, nullptr, 0, &accesses);
}

}  // namespace tvk::kernels
