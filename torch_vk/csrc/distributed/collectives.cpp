// The collectives of ProcessGroupVK: each builds a Plan (the CPU counterpart of every tensor,
// see Plan::stage) and hands run() a call of the inner Gloo backend on those CPU tensors.
// Gloo checks the arguments (shapes, dtypes, ranks) itself, so its error messages are the ones
// users see for CPU tensors too. Emulations of what Gloo lacks live here.
#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include "process_group_vk.h"

namespace tvk::distributed {
namespace {

using c10d::OpType;
using WorkPtr = c10::intrusive_ptr<c10d::Work>;

bool is_premul_sum(const c10d::ReduceOp& op) { return op.op_ == c10d::ReduceOp::PREMUL_SUM; }

// PREMUL_SUM(f) is SUM over ranks of f * x: Gloo has no such op, so x is multiplied first (on
// x's device, on the current stream, so it is ordered before the collective's event).
const c10d::PreMulSumSupplement& premul_supplement(const c10d::ReduceOp& op) {
  const auto* s = dynamic_cast<const c10d::PreMulSumSupplement*>(op.supplement_.get());
  TORCH_CHECK(s != nullptr, "vkgloo: ReduceOp.PREMUL_SUM without a factor");
  return *s;
}

at::Tensor premultiplied(const at::Tensor& t, const c10d::ReduceOp& op) {
  const auto& s = premul_supplement(op);
  if (s.tensor_factor.defined()) return t * s.tensor_factor.to(t.device());
  return t * s.double_factor;
}

void premultiply_(at::Tensor& t, const c10d::ReduceOp& op) {
  const auto& s = premul_supplement(op);
  if (s.tensor_factor.defined()) {
    t.mul_(s.tensor_factor.to(t.device()));
  } else {
    t.mul_(s.double_factor);
  }
}

std::vector<at::Tensor> flatten(const std::vector<std::vector<at::Tensor>>& lists) {
  std::vector<at::Tensor> out;
  for (const auto& l : lists) out.insert(out.end(), l.begin(), l.end());
  return out;
}

int64_t bytes_of(const at::Tensor& t) { return t.defined() ? static_cast<int64_t>(t.nbytes()) : 0; }

int64_t total_bytes(const std::vector<at::Tensor>& ts) {
  int64_t n = 0;
  for (const auto& t : ts) n += bytes_of(t);
  return n;
}

// Bytes per peer of an all_to_all_single buffer: the split sizes (rows) times the bytes of a
// row, or equal parts without split sizes.
std::vector<int64_t> split_bytes(const at::Tensor& t, const std::vector<int64_t>& splits, int w) {
  std::vector<int64_t> out(w, 0);
  if (splits.empty()) {
    for (int j = 0; j < w; ++j) out[j] = bytes_of(t) / w;
    return out;
  }
  const int64_t rows = t.dim() > 0 ? t.size(0) : 1;
  const int64_t row_bytes = rows > 0 ? bytes_of(t) / rows : 0;
  for (int j = 0; j < w && j < static_cast<int>(splits.size()); ++j) out[j] = splits[j] * row_bytes;
  return out;
}

// The dtypes only ("Float;Float").
std::string dtypes(const std::vector<at::Tensor>& tensors) {
  std::string out;
  for (const auto& t : tensors) {
    if (!out.empty()) out += ";";
    out += t.defined() ? c10::toString(t.scalar_type()) : "undefined";
  }
  return out;
}

// dtype and every dimension but the first ("float32[*,4]").
std::string trailing(const at::Tensor& t) {
  std::string out = std::string(c10::toString(t.scalar_type())) + "[*";
  for (int64_t i = 1; i < t.dim(); ++i) out += "," + std::to_string(t.size(i));
  return out + "]";
}

std::string reduction(const char* name, const c10d::ReduceOp& op) {
  return std::string(name) + " op=" + std::to_string(static_cast<int>(op.op_)) + " ";
}

}  // namespace

WorkPtr ProcessGroupVK::broadcast(std::vector<at::Tensor>& tensors,
                                  const c10d::BroadcastOptions& opts) {
  Plan plan(OpType::BROADCAST);
  plan.set_signature("broadcast root=" + std::to_string(opts.rootRank) + " " + describe(tensors));
  // The root only sends, the others only receive.
  auto host = rank_ == opts.rootRank ? plan.inputs(tensors) : plan.outputs(tensors);
  plan.set_result(tensors);
  return run(std::move(plan),
             [inner = inner_, host, opts]() mutable { return inner->broadcast(host, opts); },
             opts.asyncOp);
}

WorkPtr ProcessGroupVK::allreduce(std::vector<at::Tensor>& tensors,
                                  const c10d::AllreduceOptions& opts) {
  c10d::AllreduceOptions o = opts;
  if (is_premul_sum(opts.reduceOp)) {
    for (auto& t : tensors) premultiply_(t, opts.reduceOp);
    o.reduceOp = c10d::ReduceOp(c10d::ReduceOp::SUM);
  }
  Plan plan(OpType::ALLREDUCE);
  plan.set_signature(reduction("allreduce", opts.reduceOp) + describe(tensors));
  auto host = plan.inouts(tensors);
  plan.set_result(tensors);
  return run(std::move(plan),
             [inner = inner_, host, o]() mutable { return inner->allreduce(host, o); },
             opts.asyncOp);
}

WorkPtr ProcessGroupVK::allreduce_sparse(std::vector<at::Tensor>& tensors,
                                         const c10d::AllreduceOptions& opts) {
  for (const auto& t : tensors) {
    TORCH_CHECK(t.device().is_cpu(), "vkgloo: sparse allreduce supports CPU tensors only");
  }
  Plan plan(OpType::_ALLREDUCE_SPARSE);
  plan.set_result(tensors);
  return run(std::move(plan),
             [inner = inner_, tensors, opts]() mutable { return inner->allreduce_sparse(tensors, opts); },
             opts.asyncOp);
}

WorkPtr ProcessGroupVK::allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                            const c10d::AllreduceCoalescedOptions& opts) {
  c10d::AllreduceCoalescedOptions o = opts;
  if (is_premul_sum(opts.reduceOp)) {
    for (auto& t : tensors) premultiply_(t, opts.reduceOp);
    o.reduceOp = c10d::ReduceOp(c10d::ReduceOp::SUM);
  }
  bool one_dtype = true;
  for (const auto& t : tensors) one_dtype = one_dtype && t.scalar_type() == tensors[0].scalar_type();
  Plan plan(OpType::ALLREDUCE_COALESCED);
  plan.set_signature(reduction("allreduce_coalesced", opts.reduceOp) + describe(tensors));
  auto host = plan.inouts(tensors);
  plan.set_result(tensors);
  if (one_dtype) {
    return run(std::move(plan),
               [inner = inner_, host, o]() mutable { return inner->allreduce_coalesced(host, o); },
               opts.asyncOp);
  }
  // Gloo coalesces one dtype only: one allreduce per tensor, issued back to back.
  const int rank = rank_;
  return run(std::move(plan),
             [inner = inner_, host, o, rank]() mutable {
               std::vector<WorkPtr> works;
               c10d::AllreduceOptions single;
               single.reduceOp = o.reduceOp;
               single.timeout = o.timeout;
               for (auto& t : host) {
                 std::vector<at::Tensor> one{t};
                 works.push_back(inner->allreduce(one, single));
               }
               return c10::make_intrusive<MultiWork>(rank, OpType::ALLREDUCE_COALESCED, works);
             },
             opts.asyncOp);
}

WorkPtr ProcessGroupVK::reduce(std::vector<at::Tensor>& tensors, const c10d::ReduceOptions& opts) {
  Plan plan(OpType::REDUCE);
  plan.set_signature(reduction("reduce", opts.reduceOp) + "root=" + std::to_string(opts.rootRank) + " " +
                     describe(tensors));
  plan.set_result(tensors);
  if (!is_premul_sum(opts.reduceOp)) {
    auto host = plan.inouts(tensors);
    return run(std::move(plan),
               [inner = inner_, host, opts]() mutable { return inner->reduce(host, opts); },
               opts.asyncOp);
  }
  // SUM of the premultiplied copies; the root's tensor receives the result, the others keep
  // theirs (as with NCCL, whose reduce leaves non-root buffers alone).
  c10d::ReduceOptions o = opts;
  o.reduceOp = c10d::ReduceOp(c10d::ReduceOp::SUM);
  std::vector<at::Tensor> scaled;
  for (const auto& t : tensors) scaled.push_back(premultiplied(t, opts.reduceOp));
  auto host_scaled = plan.inputs(scaled);
  if (rank_ == opts.rootRank) {
    auto host_out = plan.outputs(tensors);
    plan.set_host_epilogue([host_out, host_scaled]() mutable {
      for (size_t i = 0; i < host_out.size(); ++i) host_out[i].copy_(host_scaled[i]);
    });
  }
  return run(std::move(plan),
             [inner = inner_, host_scaled, o]() mutable { return inner->reduce(host_scaled, o); },
             opts.asyncOp);
}

WorkPtr ProcessGroupVK::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                  std::vector<at::Tensor>& inputs,
                                  const c10d::AllgatherOptions& opts) {
  Plan plan(OpType::ALLGATHER);
  plan.set_signature("allgather " + describe(inputs) + " -> " + describe(outputs));
  auto host_out = plan.outputs(outputs);
  auto host_in = plan.inputs(inputs);
  plan.set_result(flatten(outputs));
  return run(std::move(plan),
             [inner = inner_, host_out, host_in, opts]() mutable {
               return inner->allgather(host_out, host_in, opts);
             },
             opts.asyncOp);
}

WorkPtr ProcessGroupVK::_allgather_base(at::Tensor& output, at::Tensor& input,
                                        const c10d::AllgatherOptions& opts) {
  Plan plan(OpType::_ALLGATHER_BASE);
  plan.set_signature("allgather_into_tensor " + describe({input}) + " -> " + describe({output}));
  auto host_out = plan.output(output);
  auto host_in = plan.input(input);
  plan.set_result({output});
  return run(std::move(plan),
             [inner = inner_, host_out, host_in, opts]() mutable {
               return inner->_allgather_base(host_out, host_in, opts);
             },
             opts.asyncOp);
}

WorkPtr ProcessGroupVK::allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputs,
                                            std::vector<at::Tensor>& inputs,
                                            const c10d::AllgatherOptions& opts) {
  Plan plan(OpType::ALLGATHER_COALESCED);
  plan.set_signature("allgather_coalesced " + describe(inputs) + " -> " + describe(outputs));
  auto host_out = plan.outputs(outputs);
  auto host_in = plan.inputs(inputs);
  plan.set_result(flatten(outputs));
  return run(std::move(plan),
             [inner = inner_, host_out, host_in, opts]() mutable {
               return inner->allgather_coalesced(host_out, host_in, opts);
             },
             opts.asyncOp);
}

WorkPtr ProcessGroupVK::allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                        std::vector<at::Tensor>& inputs,
                                                        const c10d::AllgatherOptions& opts) {
  Plan plan(OpType::COALESCED);
  plan.set_signature("allgather_into_tensor_coalesced " + describe(inputs) + " -> " + describe(outputs));
  auto host_out = plan.outputs(outputs);
  auto host_in = plan.inputs(inputs);
  plan.set_result(outputs);
  return run(std::move(plan),
             [inner = inner_, host_out, host_in, opts]() mutable {
               return inner->allgather_into_tensor_coalesced(host_out, host_in, opts);
             },
             opts.asyncOp);
}

WorkPtr ProcessGroupVK::gather(std::vector<std::vector<at::Tensor>>& outputs,
                               std::vector<at::Tensor>& inputs, const c10d::GatherOptions& opts) {
  Plan plan(OpType::GATHER);
  // Each rank may send a tensor of its own size (the root's outputs match them one by one).
  plan.set_signature("gather root=" + std::to_string(opts.rootRank) + " " + dtypes(inputs));
  {
    std::vector<int64_t> send(size_, 0), recv(size_, 0);
    send[opts.rootRank] = total_bytes(inputs);
    if (rank_ == opts.rootRank && !outputs.empty()) {
      for (int j = 0; j < size_ && j < static_cast<int>(outputs[0].size()); ++j)
        recv[j] = bytes_of(outputs[0][j]);
    }
    plan.set_transfers(std::move(send), std::move(recv));
  }
  auto host_out = plan.outputs(outputs);
  auto host_in = plan.inputs(inputs);
  plan.set_result(flatten(outputs));
  return run(std::move(plan),
             [inner = inner_, host_out, host_in, opts]() mutable {
               return inner->gather(host_out, host_in, opts);
             },
             opts.asyncOp);
}

WorkPtr ProcessGroupVK::scatter(std::vector<at::Tensor>& outputs,
                                std::vector<std::vector<at::Tensor>>& inputs,
                                const c10d::ScatterOptions& opts) {
  Plan plan(OpType::SCATTER);
  // Each rank may receive a tensor of its own size (DTensor scatters uneven shards).
  plan.set_signature("scatter root=" + std::to_string(opts.rootRank) + " " + dtypes(outputs));
  {
    std::vector<int64_t> send(size_, 0), recv(size_, 0);
    recv[opts.rootRank] = total_bytes(outputs);
    if (rank_ == opts.rootRank && !inputs.empty()) {
      for (int j = 0; j < size_ && j < static_cast<int>(inputs[0].size()); ++j)
        send[j] = bytes_of(inputs[0][j]);
    }
    plan.set_transfers(std::move(send), std::move(recv));
  }
  auto host_out = plan.outputs(outputs);
  auto host_in = plan.inputs(inputs);
  plan.set_result(outputs);
  return run(std::move(plan),
             [inner = inner_, host_out, host_in, opts]() mutable {
               return inner->scatter(host_out, host_in, opts);
             },
             opts.asyncOp);
}

WorkPtr ProcessGroupVK::reduce_scatter(std::vector<at::Tensor>& outputs,
                                       std::vector<std::vector<at::Tensor>>& inputs,
                                       const c10d::ReduceScatterOptions& opts) {
  c10d::ReduceScatterOptions o = opts;
  std::vector<std::vector<at::Tensor>> in = inputs;
  if (is_premul_sum(opts.reduceOp)) {
    for (auto& list : in) {
      for (auto& t : list) t = premultiplied(t, opts.reduceOp);
    }
    o.reduceOp = c10d::ReduceOp(c10d::ReduceOp::SUM);
  }
  Plan plan(OpType::REDUCE_SCATTER);
  // The input lists agree on every rank; each rank's output matches its own entry.
  plan.set_signature(reduction("reduce_scatter", opts.reduceOp) + describe(inputs));
  auto host_out = plan.outputs(outputs);
  auto host_in = plan.inputs(in);
  plan.set_result(outputs);
  return run(std::move(plan),
             [inner = inner_, host_out, host_in, o]() mutable {
               return inner->reduce_scatter(host_out, host_in, o);
             },
             opts.asyncOp);
}

WorkPtr ProcessGroupVK::_reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                             const c10d::ReduceScatterOptions& opts) {
  c10d::ReduceScatterOptions o = opts;
  at::Tensor in = input;
  if (is_premul_sum(opts.reduceOp)) {
    in = premultiplied(input, opts.reduceOp);
    o.reduceOp = c10d::ReduceOp(c10d::ReduceOp::SUM);
  }
  Plan plan(OpType::_REDUCE_SCATTER_BASE);
  plan.set_signature(reduction("reduce_scatter_tensor", opts.reduceOp) + describe({input}) + " -> " +
                     describe({output}));
  auto host_out = plan.output(output);
  auto host_in = plan.input(in);
  plan.set_result({output});
  return run(std::move(plan),
             [inner = inner_, host_out, host_in, o]() mutable {
               return inner->_reduce_scatter_base(host_out, host_in, o);
             },
             opts.asyncOp);
}

WorkPtr ProcessGroupVK::reduce_scatter_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                        std::vector<at::Tensor>& inputs,
                                                        const c10d::ReduceScatterOptions& opts) {
  c10d::ReduceScatterOptions o = opts;
  std::vector<at::Tensor> in = inputs;
  if (is_premul_sum(opts.reduceOp)) {
    for (auto& t : in) t = premultiplied(t, opts.reduceOp);
    o.reduceOp = c10d::ReduceOp(c10d::ReduceOp::SUM);
  }
  Plan plan(OpType::REDUCE_SCATTER_TENSOR_COALESCED);
  plan.set_signature(reduction("reduce_scatter_tensor_coalesced", opts.reduceOp) + describe(inputs) +
                     " -> " + describe(outputs));
  auto host_out = plan.outputs(outputs);
  auto host_in = plan.inputs(in);
  plan.set_result(outputs);
  return run(std::move(plan),
             [inner = inner_, host_out, host_in, o]() mutable {
               return inner->reduce_scatter_tensor_coalesced(host_out, host_in, o);
             },
             opts.asyncOp);
}

WorkPtr ProcessGroupVK::alltoall_base(at::Tensor& output, at::Tensor& input,
                                      std::vector<int64_t>& output_split_sizes,
                                      std::vector<int64_t>& input_split_sizes,
                                      const c10d::AllToAllOptions& opts) {
  Plan plan(OpType::ALLTOALL_BASE);
  // With split sizes the first dimension differs between ranks; the rest must agree.
  plan.set_signature("alltoall_single " + trailing(input) + " -> " + trailing(output));
  plan.set_transfers(split_bytes(input, input_split_sizes, size_),
                     split_bytes(output, output_split_sizes, size_));
  auto host_out = plan.output(output);
  auto host_in = plan.input(input);
  plan.set_result({output});
  return run(std::move(plan),
             [inner = inner_, host_out, host_in, out_splits = output_split_sizes,
              in_splits = input_split_sizes, opts]() mutable {
               return inner->alltoall_base(host_out, host_in, out_splits, in_splits, opts);
             },
             opts.asyncOp);
}

WorkPtr ProcessGroupVK::alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                 const c10d::AllToAllOptions& opts) {
  Plan plan(OpType::ALLTOALL);
  // The tensors' sizes may differ per peer and rank; their number and dtypes must agree.
  plan.set_signature("alltoall " + std::to_string(inputs.size()) + " " + dtypes(inputs));
  {
    std::vector<int64_t> send(size_, 0), recv(size_, 0);
    for (int j = 0; j < size_ && j < static_cast<int>(inputs.size()); ++j) send[j] = bytes_of(inputs[j]);
    for (int j = 0; j < size_ && j < static_cast<int>(outputs.size()); ++j) recv[j] = bytes_of(outputs[j]);
    plan.set_transfers(std::move(send), std::move(recv));
  }
  auto host_out = plan.outputs(outputs);
  auto host_in = plan.inputs(inputs);
  plan.set_result(outputs);
  return run(std::move(plan),
             [inner = inner_, host_out, host_in, opts]() mutable {
               return inner->alltoall(host_out, host_in, opts);
             },
             opts.asyncOp);
}

WorkPtr ProcessGroupVK::send(std::vector<at::Tensor>& tensors, int dst_rank, int tag) {
  Plan plan(OpType::SEND);
  auto host = plan.inputs(tensors);
  plan.set_result(tensors);
  return run(std::move(plan),
             [inner = inner_, host, dst_rank, tag]() mutable { return inner->send(host, dst_rank, tag); },
             /*async_op=*/true);
}

WorkPtr ProcessGroupVK::recv(std::vector<at::Tensor>& tensors, int src_rank, int tag) {
  Plan plan(OpType::RECV);
  auto host = plan.outputs(tensors);
  plan.set_result(tensors);
  return run(std::move(plan),
             [inner = inner_, host, src_rank, tag]() mutable { return inner->recv(host, src_rank, tag); },
             /*async_op=*/true);
}

WorkPtr ProcessGroupVK::recvAnysource(std::vector<at::Tensor>& tensors, int tag) {
  Plan plan(OpType::RECVANYSOURCE);
  auto host = plan.outputs(tensors);
  plan.set_result(tensors);
  return run(std::move(plan),
             [inner = inner_, host, tag]() mutable { return inner->recvAnysource(host, tag); },
             /*async_op=*/true);
}

WorkPtr ProcessGroupVK::barrier(const c10d::BarrierOptions& opts) {
  // No tensors: Gloo's barrier also waits for the Gloo calls issued before it, and the queue's
  // FIFO completion makes this Work complete after every earlier collective.
  c10d::BarrierOptions o = opts;
  o.device.reset();
  o.device_ids.clear();
  Plan plan(OpType::BARRIER);
  plan.set_signature("barrier");
  return run(std::move(plan), [inner = inner_, o]() mutable { return inner->barrier(o); },
             opts.asyncOp);
}

}  // namespace tvk::distributed
