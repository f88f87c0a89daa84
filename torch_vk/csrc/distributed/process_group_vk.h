// L6: the c10d backend "vkgloo" — collectives on "vk" tensors over an inner Gloo backend.
//
// ProcessGroupVK is a c10d::Backend that holds a ProcessGroupGloo created in Python (as a plain
// c10d::Backend, so only Backend.hpp is needed: the wheel ships no Gloo headers). CPU tensors
// go to Gloo unchanged. vk tensors are handed to Gloo as CPU tensors:
//   - zero copy: on unified-memory devices (integrated GPUs, lavapipe) a contiguous vk tensor's
//     memory is host-mapped, so Gloo reads and writes it in place once the caller's stream has
//     passed the collective's point;
//   - staged: otherwise through host (pinned for device 0) buffers, copied device -> host on a
//     communication stream that first waits for an event recorded on the caller's current
//     stream (no device-wide wait), and host -> device on that stream after Gloo finished.
//
// Ordering contract (what NCCL users expect):
//   - Collectives reach Gloo in program order on every rank: an asynchronous collective goes
//     through one FIFO "issue" thread per backend (which waits for its event, stages, calls
//     Gloo) and one FIFO "completion" thread (which waits for Gloo, copies back, completes the
//     Work); CPU-only calls made while vk work is pending queue behind it.
//   - A collective that reads or writes a vk tensor that a pending collective writes (or
//     writes one a pending collective reads) starts after that one completed, as on one NCCL
//     stream.
//   - Work::wait() blocks the host until Gloo finished (Gloo runs on the host), then makes the
//     caller's current stream wait for the copy back (a device-side wait on an event of the
//     communication stream), so later work on that stream sees the result. getFuture() is a
//     c10::ivalue::Future over the output tensors with the same stream semantics (DDP comm
//     hooks, then-callbacks).
//   - Synchronous calls (async_op=False) made while nothing is pending run on the calling
//     thread and the current stream, with no thread hand-off.
//
// Not in Gloo, done here: PREMUL_SUM (the input is multiplied by the factor, on its device,
// then summed), start/endCoalescing (one Work over the collectives issued in between),
// allreduce_coalesced over mixed dtypes (one Gloo allreduce per tensor).
#pragma once

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <ATen/core/ivalue.h>
#include <c10/core/Event.h>
#include <c10/core/Stream.h>

#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace tvk::distributed {

inline constexpr const char* kBackendName = "vkgloo";

// One tensor of a collective and the CPU tensor the inner Gloo backend gets for it.
struct StagedTensor {
  at::Tensor device;        // the caller's vk tensor (kept alive until the collective ends)
  at::Tensor host;          // what Gloo reads / writes
  bool read = false;        // the collective reads it
  bool write = false;       // the collective writes it
  bool zero_copy = false;   // `host` aliases the device memory (no copies)
  bool copy_in() const { return read && !zero_copy; }    // device -> host before Gloo
  bool copy_out() const { return write && !zero_copy; }  // host -> device after Gloo
};

// What one call needs, built on the calling thread: the CPU view of every tensor, the outputs
// the Work reports, and the vk device involved (if any).
class Plan {
 public:
  explicit Plan(c10d::OpType type) : type_(type) {}

  // CPU tensors are returned as they are; vk tensors get their CPU counterpart.
  at::Tensor input(const at::Tensor& t) { return stage(t, true, false); }
  at::Tensor output(const at::Tensor& t) { return stage(t, false, true); }
  at::Tensor inout(const at::Tensor& t) { return stage(t, true, true); }
  std::vector<at::Tensor> inputs(const std::vector<at::Tensor>& ts);
  std::vector<at::Tensor> outputs(const std::vector<at::Tensor>& ts);
  std::vector<at::Tensor> inouts(const std::vector<at::Tensor>& ts);
  std::vector<std::vector<at::Tensor>> outputs(const std::vector<std::vector<at::Tensor>>& ts);
  std::vector<std::vector<at::Tensor>> inputs(const std::vector<std::vector<at::Tensor>>& ts);

  // Tensors the Work's result() / Future carry (the user's tensors).
  void set_result(std::vector<at::Tensor> tensors) { result_ = std::move(tensors); }
  // What every rank must agree on for this collective (op, root, reduce op, the dtypes and
  // shapes that must match across ranks); empty for point-to-point. See ProcessGroupVK::run.
  void set_signature(std::string s) { signature_ = std::move(s); }
  const std::string& signature() const { return signature_; }
  // For collectives whose tensors may differ in size between ranks (scatter, gather,
  // all-to-all): the bytes this rank sends to / receives from each rank (length world size).
  // The check verifies that what i sends to j is what j receives from i.
  void set_transfers(std::vector<int64_t> send_to, std::vector<int64_t> recv_from) {
    send_to_ = std::move(send_to);
    recv_from_ = std::move(recv_from);
  }
  const std::vector<int64_t>& send_to() const { return send_to_; }
  const std::vector<int64_t>& recv_from() const { return recv_from_; }
  // Host work run after Gloo finished and before the copies back (emulations that need a
  // step after the collective).
  void set_host_epilogue(std::function<void()> fn) { host_epilogue_ = std::move(fn); }
  const std::function<void()>& host_epilogue() const { return host_epilogue_; }

  c10d::OpType type() const { return type_; }
  const std::optional<c10::Device>& device() const { return device_; }
  std::vector<StagedTensor>& staged() { return staged_; }
  std::vector<at::Tensor>& result() { return result_; }
  bool any_zero_copy() const;
  bool any_staged_copy() const;

 private:
  at::Tensor stage(const at::Tensor& t, bool read, bool write);

  c10d::OpType type_;
  std::optional<c10::Device> device_;
  bool has_cpu_ = false;
  std::vector<StagedTensor> staged_;
  std::vector<at::Tensor> result_;
  std::function<void()> host_epilogue_;
  std::string signature_;
  std::vector<int64_t> send_to_, recv_from_;
};

// "Float[3,4]" for each tensor, joined by ";" (signatures of collectives).
std::string describe(const std::vector<at::Tensor>& tensors);
std::string describe(const std::vector<std::vector<at::Tensor>>& lists);


// The Work of a collective that went through the queue (or ran inline on vk tensors).
class VkWork : public c10d::Work {
 public:
  VkWork(int rank, c10d::OpType type, std::vector<at::Tensor> outputs,
         std::optional<c10::Device> device);

  bool isCompleted() override;
  bool isSuccess() const override;
  std::exception_ptr exception() const override;
  int sourceRank() const override;
  std::vector<at::Tensor> result() override;
  // Makes the current streams wait for the copies back (device-side).
  void synchronize() override;
  bool wait(std::chrono::milliseconds timeout = kNoTimeout) override;
  void blockCurrentStream() override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;

  // Called once, by whoever ran the collective, with the current stream being the one that
  // wrote the outputs; `inner` is Gloo's Work (for sourceRank), null for an error.
  void complete(std::exception_ptr error, const c10::intrusive_ptr<c10d::Work>& inner);

 private:
  std::vector<at::Tensor> outputs_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  int source_rank_ = -1;
};

// One Work over several (endCoalescing, or several inner Gloo calls of one collective).
class MultiWork : public c10d::Work {
 public:
  MultiWork(int rank, c10d::OpType type, std::vector<c10::intrusive_ptr<c10d::Work>> works);

  bool isCompleted() override;
  bool isSuccess() const override;
  std::exception_ptr exception() const override;
  std::vector<at::Tensor> result() override;
  void synchronize() override;
  bool wait(std::chrono::milliseconds timeout = kNoTimeout) override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;

 private:
  std::vector<c10::intrusive_ptr<c10d::Work>> works_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  std::mutex future_mutex_;
};

class ProcessGroupVK final : public c10d::Backend {
 public:
  explicit ProcessGroupVK(c10::intrusive_ptr<c10d::Backend> inner);
  ~ProcessGroupVK() override;

  const std::string getBackendName() const override { return kBackendName; }
  const c10::intrusive_ptr<c10d::Backend>& inner() const { return inner_; }

  bool supportsSplitting() const override { return true; }
  bool supportsCoalescing() const override { return true; }
  c10::intrusive_ptr<Options> getBackendOptions() override { return inner_->getBackendOptions(); }
  void setTimeout(std::chrono::milliseconds timeout) override { inner_->setTimeout(timeout); }
  void setGroupUid(const std::string& uid) override;
  void setSequenceNumberForGroup() override { inner_->setSequenceNumberForGroup(); }
  uint64_t getSequenceNumberForGroup() override { return inner_->getSequenceNumberForGroup(); }
  void eagerConnectSingleDevice(at::Device device) override {}
  c10::intrusive_ptr<c10d::Backend> split(const c10::intrusive_ptr<c10d::Store>& store,
                                          const std::vector<int>& ranks,
                                          const c10::intrusive_ptr<Options>& opts) override;
  c10::intrusive_ptr<c10d::Backend> merge(const c10::intrusive_ptr<c10d::Store>& store,
                                          const c10::intrusive_ptr<Options>& opts,
                                          const int& rank, const int& size) override;
  void startCoalescing() override;
  c10::intrusive_ptr<c10d::Work> endCoalescing() override;
  void abort() override;
  void shutdown() override;

  // ---- collectives (collectives.cpp) ----
  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_sparse(std::vector<at::Tensor>& tensors,
                                                  const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(
      std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& output_split_sizes,
                                               std::vector<int64_t>& input_split_sizes,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs,
                                          std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst_rank,
                                      int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src_rank,
                                      int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors,
                                               int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;
  void monitoredBarrier(const c10d::BarrierOptions& opts, bool wait_all_ranks) override;

  // Number of collectives issued but not completed (tests, debugging).
  uint64_t pending() const;
  // How calls ran (tests assert which paths they covered): direct (CPU tensors straight to
  // Gloo), inline (synchronous vk call on the calling thread), queued (issue / completion
  // threads); vk tensors handed over in place (zero_copy) or through host buffers (staged).
  std::map<std::string, uint64_t> stats() const;

  using Launch = std::function<c10::intrusive_ptr<c10d::Work>()>;

 private:
  struct Task;

  // Runs `launch` (a call of the inner backend on the plan's CPU tensors) in program order,
  // staging the plan's vk tensors around it. Returns the caller's Work.
  c10::intrusive_ptr<c10d::Work> run(Plan plan, Launch launch, bool async_op);
  // `launch` preceded by the agreement check (when the plan has a signature and the check is
  // on): a MAX all-reduce of [hash, -hash, sends, receives] that completes before the
  // collective starts, so that ranks that disagree raise instead of sending Gloo buffers of
  // the wrong size (which aborts the receiving process inside Gloo).
  Launch verified(const Plan& plan, Launch launch) const;
  c10::intrusive_ptr<c10d::Work> run_inline(Plan& plan, const Launch& launch);
  bool idle_locked() const { return submitted_ == completed_; }
  c10::Stream comm_stream(const c10::Device& device);
  void start_threads_locked();
  void stop_threads();
  void issue_loop();
  void completion_loop();
  void prepare(Task& task);
  void finish(Task& task);
  void remember_coalesced(const c10::intrusive_ptr<c10d::Work>& work);

  c10::intrusive_ptr<c10d::Backend> inner_;
  bool verify_;  // TORCH_VK_DIST_VERIFY (read when the backend is created)

  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Task>> issue_queue_;
  std::deque<std::shared_ptr<Task>> completion_queue_;
  uint64_t submitted_ = 0;  // sequence number of the last task queued
  uint64_t completed_ = 0;  // sequence number of the last task completed (FIFO)
  bool stopping_ = false;
  bool threads_started_ = false;
  std::thread issue_thread_;
  std::thread completion_thread_;
  // vk storages that pending tasks read / write: (task seq, storage, written).
  struct InFlight {
    uint64_t seq;
    const void* storage;
    bool written;
  };
  std::vector<InFlight> in_flight_;
  std::map<c10::DeviceIndex, c10::Stream> comm_streams_;

  bool coalescing_ = false;
  std::vector<c10::intrusive_ptr<c10d::Work>> coalesced_;

  // The last split: torch 2.13's ProcessGroup::splitGroup calls split() once per device type
  // even when one backend serves several (vk and cpu), on the same store; a second Gloo
  // rendezvous on that store would race with the first. The same call returns the same child.
  std::mutex split_mutex_;
  const c10d::Store* last_split_store_ = nullptr;
  std::vector<int> last_split_ranks_;
  c10::weak_intrusive_ptr<c10d::Backend> last_split_{c10::intrusive_ptr<c10d::Backend>()};

  uint64_t direct_calls_ = 0, inline_calls_ = 0, queued_calls_ = 0;  // guarded by mutex_
  uint64_t zero_copy_tensors_ = 0, staged_tensors_ = 0;
};

}  // namespace tvk::distributed
