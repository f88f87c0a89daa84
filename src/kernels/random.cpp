// Launchers of the random family (shaders/random.comp): the element-wise distributions, and
// the sort-based randperm / multinomial.
//
// Sorting: rows of P = 2^m (key, value) pairs (P >= the row length; padding keys are the
// maximum and sort last) are sorted by a bitonic network. Stages whose compare distance j is
// below the workgroup block (2 * local size elements) run in shared memory, in one dispatch
// for all stages k <= block and one "merge" dispatch per larger k; the larger j of those k
// run as one global dispatch each. For P = 2^20: 66 dispatches.
#include "kernels/random.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/launch.h"
#include "runtime/device.h"
#include "runtime/pipeline.h"
#include "runtime/stream.h"

namespace tvk::kernels {
namespace {

// Mirrors `Push` in shaders/random.comp.
struct RandomPush {
  uint64_t addr[3];
  uint64_t geometry;
  uint32_t key[2];
  uint32_t counter[2];
  uint64_t pd_bits[2];
  int64_t pi[2];
  float pf[2];
  int32_t numel;
  int32_t ndim;
  int32_t dtype[3];
  int32_t stride0[3];
  int32_t aux0;
  int32_t aux1;
};
static_assert(sizeof(RandomPush) == 128);
static_assert(offsetof(RandomPush, pd_bits) == 48);
static_assert(offsetof(RandomPush, pf) == 80);
static_assert(offsetof(RandomPush, dtype) == 96);
static_assert(offsetof(RandomPush, aux0) == 120);

// Mirrors `RandomGeometry` in shaders/random.comp.
struct RandomGeometryBlock {
  int32_t sizes[kMaxDims];
  int32_t strides[3][kMaxDims];
};

constexpr const char* kWhere = "tvk::kernels::random";
constexpr uint32_t kWorkgroup = 256;
constexpr uint32_t kSortWorkgroup = 256;  // sort blocks of 512 pairs in shared memory

const char* op_name(RandomOp op) {
  switch (op) {
    case RandomOp::Uniform: return "uniform";
    case RandomOp::Normal: return "normal";
    case RandomOp::Bernoulli: return "bernoulli";
    case RandomOp::RandomInt: return "random";
    case RandomOp::Exponential: return "exponential";
    case RandomOp::Geometric: return "geometric";
    case RandomOp::LogNormal: return "log_normal";
    case RandomOp::Cauchy: return "cauchy";
    case RandomOp::Dropout: return "dropout";
    case RandomOp::MaskedScale: return "masked_scale";
  }
  return "?";
}

void check_operand(const Operand& op, const char* what) {
  check_dtype(kWhere, op.dtype, what);
  if (op.address == 0) invalid(kWhere, std::string(what) + ": address is 0");
  if (op.address % dtype_size(op.dtype) != 0)
    invalid(kWhere, std::string(what) + ": address is not aligned to its element size");
}

void check_f64(Stream& stream) {
  if (!stream.device().caps().float64)
    throw std::invalid_argument("float64 is not supported on this device (no shaderFloat64)");
}

const ShaderBinary* shader(const std::string& name) {
  const ShaderBinary* s = find_shader(name);
  if (!s) invalid(kWhere, "no shader variant '" + name + "' (stale build?)");
  return s;
}

// The key words carry the seed, or the address of the Philox block (state_address; the
// pipeline then has specialization constant 4 set, see with_philox).
void set_philox(RandomPush& push, const PhiloxState& philox) {
  if (philox.offset % 4 != 0) invalid(kWhere, "the Philox offset must be a multiple of 4");
  if (philox.state_address != 0 && philox.state_address % 16 != 0)
    invalid(kWhere, "the Philox block must be 16-byte aligned");
  const uint64_t block = philox.offset / 4;
  const uint64_t key = philox.state_address != 0 ? philox.state_address : philox.seed;
  push.key[0] = static_cast<uint32_t>(key);
  push.key[1] = static_cast<uint32_t>(key >> 32);
  push.counter[0] = static_cast<uint32_t>(block);
  push.counter[1] = static_cast<uint32_t>(block >> 32);
}

// Specialization constants of a kernel that draws from `philox`: constant 4 = 1 when the seed
// and counter base come from the Philox block.
std::vector<uint32_t> with_philox(std::vector<uint32_t> spec, const PhiloxState& philox) {
  if (philox.state_address == 0) return spec;
  spec.resize(3, UINT32_MAX);
  spec.push_back(1);
  return spec;
}

void set_params(RandomPush& push, const double p[2]) {
  for (int k = 0; k < 2; ++k) {
    std::memcpy(&push.pd_bits[k], &p[k], sizeof(double));
    push.pf[k] = static_cast<float>(p[k]);
  }
}

// `accesses`: the memory the dispatch reads and writes (null: everything).
void dispatch(Stream& stream, const std::string& name, uint32_t wg, int64_t items,
              const RandomPush& push, std::vector<uint32_t> spec,
              const AccessSet* accesses = nullptr) {
  VkPipeline pipeline = stream.device().pipelines().get(*shader(name), wg, spec);
  stream.dispatch(pipeline, group_count(stream, items, wg), 1, 1, &push, sizeof(push), nullptr,
                  0, accesses);
}

std::vector<uint32_t> dtype_spec(const RandomPush& push) {
  if (!tuning().specialize_dtypes) return {UINT32_MAX, UINT32_MAX, UINT32_MAX};
  return {static_cast<uint32_t>(push.dtype[0]), static_cast<uint32_t>(push.dtype[1]),
          static_cast<uint32_t>(push.dtype[2])};
}

int log2_ceil(int64_t n) {
  int m = 0;
  while ((int64_t{1} << m) < n) ++m;
  return m;
}

// Sorts `rows` rows of 2^log2p (key, value) pairs in place.
void bitonic_sort(Stream& stream, int64_t rows, int log2p, uint64_t keys, uint64_t values) {
  const int64_t P = int64_t{1} << log2p;
  const int64_t total = rows * P;
  if (P < 2 || total == 0) return;
  const int64_t block = 2 * kSortWorkgroup;
  RandomPush push{};
  push.addr[1] = keys;
  push.addr[2] = values;
  push.numel = static_cast<int32_t>(total);
  push.aux0 = log2p;
  auto local = [&](int64_t k_first, int64_t k_last) {
    push.pi[0] = k_first;
    push.pi[1] = k_last;
    // One workgroup per block (a grid-stride loop covers the rest).
    VkPipeline pipeline = stream.device().pipelines().get(*shader("random.sort_local"), kSortWorkgroup, {});
    stream.dispatch(pipeline, group_count(stream, (total + block - 1) / block, 1), 1, 1, &push,
                    sizeof(push));
  };
  local(2, std::min(P, block));
  for (int64_t k = 2 * block; k <= P; k *= 2) {
    for (int64_t j = k / 2; j >= block; j /= 2) {
      push.pi[0] = k;
      push.pi[1] = j;
      VkPipeline pipeline = stream.device().pipelines().get(*shader("random.sort_step"), kWorkgroup, {});
      stream.dispatch(pipeline, group_count(stream, total / 2, kWorkgroup), 1, 1, &push, sizeof(push));
    }
    local(k, k);
  }
}

void check_scratch(int64_t rows, int64_t len, const Operand& keys, const Operand& values) {
  (void)rows;
  (void)len;
  check_operand(keys, "sort keys");
  check_operand(values, "sort values");
  if (keys.dtype != DType::Int64 || values.dtype != DType::Int32)
    invalid(kWhere, "sort scratch must be Int64 keys and Int32 values");
}

}  // namespace

void random_elementwise(Stream& stream, const RandomElementwise& p) {
  const int opi = static_cast<int>(p.op);
  if (opi < 0 || opi > 9) invalid(kWhere, "invalid op " + std::to_string(opi));
  const bool integer = p.op == RandomOp::RandomInt;
  if (integer ? (p.kind != ComputeKind::Int64 && p.kind != ComputeKind::Float64)
              : (p.kind != ComputeKind::Float32 && p.kind != ComputeKind::Float64))
    invalid(kWhere, std::string("invalid compute kind for ") + op_name(p.op));
  const bool f64 = p.kind == ComputeKind::Float64;
  if (f64) check_f64(stream);
  const int inputs = p.op == RandomOp::Dropout || p.op == RandomOp::MaskedScale ? 2
                     : (p.op == RandomOp::Bernoulli && p.tensor_p)         ? 1
                                                                           : 0;
  Dims dims = coalesce(kWhere, p.geometry, 1 + inputs, p.numel);
  if (p.numel == 0) return;
  if (p.numel > kMaxIndex) invalid(kWhere, "numel exceeds the kernel's 32-bit index range");
  const Operand* ops[3] = {&p.out, &p.in0, &p.in1};
  const char* names[3] = {"output", "input", "second operand"};
  for (int k = 0; k <= inputs; ++k) {
    check_operand(*ops[k], names[k]);
    if (ops[k]->dtype == DType::Float64 && !f64)
      invalid(kWhere, "float64 operands need the Float64 kind");
    check_offsets(kWhere, dims, k, names[k]);
  }

  RandomPush push{};
  for (int k = 0; k <= inputs; ++k) {
    push.addr[k] = ops[k]->address;
    push.dtype[k] = static_cast<int32_t>(ops[k]->dtype);
  }
  set_philox(push, p.philox);
  set_params(push, p.p);
  push.pi[0] = p.i[0];
  push.pi[1] = p.i[1];
  // Tensor probabilities outside [0, 1] are reported there (BernoulliProbabilityOutOfRange).
  if (p.op == RandomOp::Bernoulli && p.tensor_p)
    push.pi[0] = static_cast<int64_t>(stream.device_error_address());
  push.numel = static_cast<int32_t>(p.numel);
  push.ndim = dims.ndim;
  push.aux0 = p.tensor_p ? 1 : 0;
  if (dims.ndim == 1) {
    for (int k = 0; k <= inputs; ++k) push.stride0[k] = static_cast<int32_t>(dims.strides[k][0]);
  } else if (dims.ndim > 1) {
    RandomGeometryBlock block{};
    for (int d = 0; d < dims.ndim; ++d) {
      block.sizes[d] = static_cast<int32_t>(dims.sizes[d]);
      for (int k = 0; k <= inputs; ++k) block.strides[k][d] = static_cast<int32_t>(dims.strides[k][d]);
    }
    push.geometry = stream.upload_params(&block, sizeof(block));
  }
  const std::string name = std::string("random.") + op_name(p.op) + "." +
                           (f64 ? "float64" : integer ? "int64" : "float32");
  // out written; in0 read; in1 the dropout mask (written) or MaskedScale's mask (read); a
  // captured graph's Philox block read (the device error record is claimed atomically and
  // read by the host after a wait: not declared).
  AccessSet accesses;
  for (int k = 0; k <= inputs; ++k)
    add_dims(accesses, ops[k]->address, ops[k]->dtype, dims, k,
             k == 0 || (k == 2 && p.op == RandomOp::Dropout));
  if (p.philox.state_address != 0) accesses.read(p.philox.state_address, 16);
  dispatch(stream, name, kWorkgroup, p.numel, push, with_philox(dtype_spec(push), p.philox),
           &accesses);
}

int64_t sort_scratch_elements(int64_t rows, int64_t len) {
  if (rows <= 0 || len <= 0) return 0;
  return rows * (int64_t{1} << log2_ceil(len));
}

void randperm(Stream& stream, int64_t n, Operand out, int64_t out_stride, Operand keys,
              Operand values, const PhiloxState& philox) {
  if (n < 0) invalid(kWhere, "negative n");
  if (n == 0) return;
  const int log2p = log2_ceil(n);
  const int64_t P = int64_t{1} << log2p;
  if (P > kMaxIndex || n * std::abs(out_stride) > kMaxIndex)
    invalid(kWhere, "randperm: n exceeds the kernel's 32-bit index range");
  check_operand(out, "output");
  check_scratch(1, n, keys, values);
  if (out.dtype == DType::Float64) check_f64(stream);

  RandomPush push{};
  set_philox(push, philox);
  push.addr[1] = keys.address;
  push.addr[2] = values.address;
  push.numel = static_cast<int32_t>(P);
  push.aux0 = log2p;
  push.aux1 = static_cast<int32_t>(n);
  dispatch(stream, "random.randperm_keys", kWorkgroup, P, push, with_philox({}, philox));
  bitonic_sort(stream, 1, log2p, keys.address, values.address);

  RandomPush gather{};
  gather.addr[0] = out.address;
  gather.addr[1] = values.address;
  gather.dtype[0] = static_cast<int32_t>(out.dtype);
  gather.numel = static_cast<int32_t>(n);
  gather.ndim = 1;
  gather.stride0[0] = static_cast<int32_t>(out_stride);
  gather.aux0 = log2p;
  gather.aux1 = static_cast<int32_t>(n);
  dispatch(stream, out.dtype == DType::Float64 ? "random.gather.float64" : "random.gather.int64",
           kWorkgroup, n, gather, dtype_spec(gather));
}

void multinomial_without_replacement(Stream& stream, int64_t rows, int64_t categories,
                                     int64_t samples, Operand probs, Operand out, Operand keys,
                                     Operand values, const PhiloxState& philox) {
  if (rows < 0 || categories <= 0 || samples < 0 || samples > categories)
    invalid(kWhere, "multinomial: bad sizes");
  if (rows == 0 || samples == 0) return;
  const int log2p = log2_ceil(categories);
  const int64_t total = sort_scratch_elements(rows, categories);
  if (total > kMaxIndex || rows * categories > kMaxIndex)
    invalid(kWhere, "multinomial: more elements than the kernel's 32-bit index range");
  check_operand(probs, "probabilities");
  check_operand(out, "output");
  check_scratch(rows, categories, keys, values);
  const bool f64 = probs.dtype == DType::Float64;
  if (f64) check_f64(stream);

  RandomPush push{};
  set_philox(push, philox);
  push.addr[0] = probs.address;
  push.addr[1] = keys.address;
  push.addr[2] = values.address;
  push.dtype[0] = static_cast<int32_t>(probs.dtype);
  push.numel = static_cast<int32_t>(total);
  push.aux0 = log2p;
  push.aux1 = static_cast<int32_t>(categories);
  dispatch(stream, std::string("random.multinomial_keys.") + (f64 ? "float64" : "float32"),
           kWorkgroup, total, push, with_philox(dtype_spec(push), philox));
  bitonic_sort(stream, rows, log2p, keys.address, values.address);

  RandomPush gather{};
  gather.addr[0] = out.address;
  gather.addr[1] = values.address;
  gather.dtype[0] = static_cast<int32_t>(out.dtype);
  gather.numel = static_cast<int32_t>(rows * samples);
  gather.ndim = 1;
  gather.stride0[0] = 1;
  gather.aux0 = log2p;
  gather.aux1 = static_cast<int32_t>(samples);
  dispatch(stream, "random.gather.int64", kWorkgroup, rows * samples, gather, dtype_spec(gather));
}

void multinomial_with_replacement(Stream& stream, int64_t rows, int64_t categories,
                                  int64_t samples, Operand cdf, Operand out,
                                  const PhiloxState& philox) {
  if (rows < 0 || categories <= 0 || samples < 0) invalid(kWhere, "multinomial: bad sizes");
  if (rows == 0 || samples == 0) return;
  if (rows * samples > kMaxIndex || rows * categories > kMaxIndex)
    invalid(kWhere, "multinomial: more elements than the kernel's 32-bit index range");
  check_operand(cdf, "cdf");
  check_operand(out, "output");
  if (cdf.dtype != DType::Float32 && cdf.dtype != DType::Float64)
    invalid(kWhere, "multinomial: the CDF must be Float32 or Float64");
  const bool f64 = cdf.dtype == DType::Float64;
  if (f64) check_f64(stream);
  RandomPush push{};
  set_philox(push, philox);
  push.addr[0] = out.address;
  push.addr[1] = cdf.address;
  push.dtype[0] = static_cast<int32_t>(out.dtype);
  push.dtype[1] = static_cast<int32_t>(cdf.dtype);
  push.numel = static_cast<int32_t>(rows * samples);
  push.ndim = 1;
  push.stride0[0] = 1;
  push.aux0 = static_cast<int32_t>(categories);
  push.aux1 = static_cast<int32_t>(samples);
  dispatch(stream, std::string("random.multinomial_cdf.") + (f64 ? "float64" : "float32"),
           kWorkgroup, rows * samples, push, with_philox(dtype_spec(push), philox));
}

void check_probabilities(Stream& stream, int64_t rows, int64_t categories, Operand probs,
                         Operand row_sums, uint64_t flags) {
  if (rows < 0 || categories < 0) invalid(kWhere, "check_probabilities: negative size");
  if (rows == 0 || categories == 0) return;
  if (rows * categories > kMaxIndex) invalid(kWhere, "check_probabilities: too many elements");
  check_operand(probs, "probabilities");
  check_operand(row_sums, "row sums");
  if (flags == 0 || flags % 4 != 0) invalid(kWhere, "check_probabilities: bad flag address");
  const bool f64 = probs.dtype == DType::Float64 || row_sums.dtype == DType::Float64;
  if (f64) check_f64(stream);
  RandomPush push{};
  push.addr[0] = flags;
  push.addr[1] = probs.address;
  push.addr[2] = row_sums.address;
  push.dtype[0] = static_cast<int32_t>(DType::Int32);
  push.dtype[1] = static_cast<int32_t>(probs.dtype);
  push.dtype[2] = static_cast<int32_t>(row_sums.dtype);
  push.numel = static_cast<int32_t>(rows * categories);
  push.aux1 = static_cast<int32_t>(rows);
  dispatch(stream, std::string("random.check_probs.") + (f64 ? "float64" : "float32"), kWorkgroup,
           rows * categories, push, dtype_spec(push));
}

}  // namespace tvk::kernels
