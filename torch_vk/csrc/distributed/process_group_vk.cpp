// ProcessGroupVK: staging, the FIFO issue / completion threads, Work objects, group
// management. The collectives themselves are in collectives.cpp. Contracts: process_group_vk.h.
#include "process_group_vk.h"

#include <ATen/ATen.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <c10/util/Exception.h>
#include <torch/csrc/utils/pybind.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include "aten/vk_common.h"
#include "runtime/allocator.h"

namespace tvk::distributed {
namespace {

constexpr c10::DeviceType kVk = c10::DeviceType::PrivateUse1;

const c10::impl::VirtualGuardImpl& vk_guard() {
  static const c10::impl::VirtualGuardImpl impl(kVk);
  return impl;
}

// Host pointer of a vk tensor's memory when the device maps it (unified memory) and the tensor
// is one dense, plain run of bytes; null otherwise (then the tensor is staged).
void* mapped_pointer(const at::Tensor& t) {
  if (!t.is_contiguous() || t.is_conj() || t.is_neg() || t.is_complex()) return nullptr;
  try {
    const uint64_t address = tvk::aten::operand(t, "vkgloo").address;
    const tvk::ResolvedAddress r =
        tvk::aten::vk_device(t.device().index()).allocator().resolve(address);
    if (r.host_pointer == nullptr || r.bytes_to_end < t.nbytes()) return nullptr;
    return r.host_pointer;
  } catch (const std::exception&) {
    return nullptr;
  }
}

c10::TypePtr tensor_list_type() { return c10::ListType::create(c10::TensorType::get()); }

// TORCH_VK_DIST_VERIFY=0 turns the agreement check off.
bool verify_enabled() {
  const char* v = std::getenv("TORCH_VK_DIST_VERIFY");
  return v == nullptr || std::string(v) != "0";
}

int64_t signature_hash(const std::string& s) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char ch : s) {
    h ^= ch;
    h *= 1099511628211ull;
  }
  return static_cast<int64_t>(h >> 2);  // its negation must not overflow
}

// The size matrices of the check only up to this many ranks (they grow with its square).
constexpr int kMaxTransferCheckRanks = 64;

// Joins a thread; releases the GIL meanwhile if this thread holds it (a completion thread may be
// running a Python future callback that needs it).
void join_releasing_gil(std::thread& t) {
  if (!t.joinable()) return;
  if (Py_IsInitialized() && PyGILState_Check()) {
    pybind11::gil_scoped_release no_gil;
    t.join();
  } else {
    t.join();
  }
}

}  // namespace

// ---------------------------------------------------------------------------------- Plan

at::Tensor Plan::stage(const at::Tensor& t, bool read, bool write) {
  if (!t.defined()) return t;
  if (t.device().is_cpu()) {
    TORCH_CHECK(!device_.has_value(), "vkgloo: the tensors of one collective must all be on one "
                "device, got ", *device_, " and cpu");
    has_cpu_ = true;
    return t;
  }
  TORCH_CHECK(t.device().type() == kVk, "vkgloo: unsupported device type ", t.device().type(),
              " (vkgloo handles vk and cpu tensors)");
  TORCH_CHECK(!has_cpu_, "vkgloo: the tensors of one collective must all be on one device, got "
              "cpu and ", t.device());
  if (device_.has_value()) {
    TORCH_CHECK(*device_ == t.device(), "vkgloo: the tensors of one collective must all be on "
                "one device, got ", *device_, " and ", t.device());
  } else {
    device_ = t.device();
  }
  TORCH_CHECK(t.layout() == c10::kStrided, "vkgloo: only strided (dense) tensors are supported, "
              "got layout ", t.layout());
  StagedTensor s;
  s.device = t;
  s.read = read && t.numel() > 0;
  s.write = write && t.numel() > 0;
  const auto cpu = at::TensorOptions().dtype(t.scalar_type()).device(at::kCPU);
  if (t.numel() == 0) {
    s.host = at::empty(t.sizes(), cpu);
  } else if (void* p = mapped_pointer(t)) {
    s.host = at::from_blob(p, t.sizes(), t.strides(), cpu);
    s.zero_copy = true;
  } else {
    // Pinned host memory belongs to device 0 (the host allocator of torch-vk); other devices
    // stage through pageable memory (the copies then wait on the communication thread).
    s.host = at::empty(t.sizes(), cpu.pinned_memory(t.device().index() == 0));
  }
  staged_.push_back(s);
  return s.host;
}

std::vector<at::Tensor> Plan::inputs(const std::vector<at::Tensor>& ts) {
  std::vector<at::Tensor> out;
  out.reserve(ts.size());
  for (const auto& t : ts) out.push_back(input(t));
  return out;
}

std::vector<at::Tensor> Plan::outputs(const std::vector<at::Tensor>& ts) {
  std::vector<at::Tensor> out;
  out.reserve(ts.size());
  for (const auto& t : ts) out.push_back(output(t));
  return out;
}

std::vector<at::Tensor> Plan::inouts(const std::vector<at::Tensor>& ts) {
  std::vector<at::Tensor> out;
  out.reserve(ts.size());
  for (const auto& t : ts) out.push_back(inout(t));
  return out;
}

std::vector<std::vector<at::Tensor>> Plan::outputs(const std::vector<std::vector<at::Tensor>>& ts) {
  std::vector<std::vector<at::Tensor>> out;
  out.reserve(ts.size());
  for (const auto& list : ts) out.push_back(outputs(list));
  return out;
}

std::vector<std::vector<at::Tensor>> Plan::inputs(const std::vector<std::vector<at::Tensor>>& ts) {
  std::vector<std::vector<at::Tensor>> out;
  out.reserve(ts.size());
  for (const auto& list : ts) out.push_back(inputs(list));
  return out;
}

bool Plan::any_zero_copy() const {
  return std::any_of(staged_.begin(), staged_.end(), [](const StagedTensor& s) { return s.zero_copy; });
}

bool Plan::any_staged_copy() const {
  return std::any_of(staged_.begin(), staged_.end(),
                     [](const StagedTensor& s) { return s.copy_in() || s.copy_out(); });
}

// ---------------------------------------------------------------------------------- VkWork

VkWork::VkWork(int rank, c10d::OpType type, std::vector<at::Tensor> outputs,
               std::optional<c10::Device> device)
    : c10d::Work(rank, type), outputs_(std::move(outputs)) {
  std::vector<c10::Device> devices;
  if (device.has_value()) devices.push_back(*device);
  future_ = c10::make_intrusive<c10::ivalue::Future>(tensor_list_type(), std::move(devices));
}

bool VkWork::isCompleted() {
  std::lock_guard<std::mutex> lock(mutex_);
  return completed_;
}

bool VkWork::isSuccess() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return completed_ && !exception_;
}

std::exception_ptr VkWork::exception() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return exception_;
}

int VkWork::sourceRank() const {
  TORCH_CHECK(opType_ == c10d::OpType::RECVANYSOURCE,
              "sourceRank() may only be called on recvAnysource work");
  std::lock_guard<std::mutex> lock(mutex_);
  TORCH_CHECK(completed_, "sourceRank() may only be called after the receive completed");
  return source_rank_;
}

std::vector<at::Tensor> VkWork::result() { return outputs_; }

void VkWork::synchronize() {
  // The Future recorded an event on the stream that wrote the outputs; waiting on it makes the
  // current streams wait (device-side) and records the outputs' memory as used by them.
  if (future_->completed() && !future_->hasError()) future_->wait();
}

bool VkWork::wait(std::chrono::milliseconds timeout) {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    if (timeout == kNoTimeout) {
      cv_.wait(lock, [&] { return completed_; });
    } else if (!cv_.wait_for(lock, timeout, [&] { return completed_; })) {
      TORCH_CHECK_WITH(DistBackendError, false, "vkgloo: ", c10d::opTypeToString(opType_),
                       " did not complete within the timeout of ", timeout.count(), " ms");
    }
    if (exception_) std::rethrow_exception(exception_);
  }
  synchronize();
  return true;
}

void VkWork::blockCurrentStream() { wait(); }

c10::intrusive_ptr<c10::ivalue::Future> VkWork::getFuture() { return future_; }

void VkWork::complete(std::exception_ptr error, const c10::intrusive_ptr<c10d::Work>& inner) {
  if (!error) {
    try {
      if (opType_ == c10d::OpType::RECVANYSOURCE && inner) {
        std::lock_guard<std::mutex> lock(mutex_);
        source_rank_ = inner->sourceRank();
      }
      future_->markCompleted(c10::IValue(outputs_));
    } catch (...) {
      error = std::current_exception();
    }
  }
  if (error && !future_->completed()) future_->setError(error);
  finish(error);
}

std::string describe(const std::vector<at::Tensor>& tensors) {
  std::string out;
  for (const auto& t : tensors) {
    if (!out.empty()) out += ";";
    if (!t.defined()) {
      out += "undefined";
      continue;
    }
    out += c10::toString(t.scalar_type());
    out += "[";
    for (int64_t i = 0; i < t.dim(); ++i) out += (i ? "," : "") + std::to_string(t.size(i));
    out += "]";
  }
  return out;
}

std::string describe(const std::vector<std::vector<at::Tensor>>& lists) {
  std::string out;
  for (const auto& l : lists) out += "(" + describe(l) + ")";
  return out;
}

// ---------------------------------------------------------------------------------- MultiWork

MultiWork::MultiWork(int rank, c10d::OpType type, std::vector<c10::intrusive_ptr<c10d::Work>> works)
    : c10d::Work(rank, type), works_(std::move(works)) {}

bool MultiWork::isCompleted() {
  return std::all_of(works_.begin(), works_.end(), [](const auto& w) { return w->isCompleted(); });
}

bool MultiWork::isSuccess() const {
  return std::all_of(works_.begin(), works_.end(), [](const auto& w) { return w->isSuccess(); });
}

std::exception_ptr MultiWork::exception() const {
  for (const auto& w : works_) {
    if (auto e = w->exception()) return e;
  }
  return nullptr;
}

std::vector<at::Tensor> MultiWork::result() {
  std::vector<at::Tensor> out;
  for (const auto& w : works_) {
    auto r = w->result();
    out.insert(out.end(), r.begin(), r.end());
  }
  return out;
}

void MultiWork::synchronize() {
  for (const auto& w : works_) w->synchronize();
}

bool MultiWork::wait(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (const auto& w : works_) {
    if (timeout == kNoTimeout) {
      w->wait();
    } else {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      w->wait(std::max(left, std::chrono::milliseconds(1)));
    }
  }
  return true;
}

c10::intrusive_ptr<c10::ivalue::Future> MultiWork::getFuture() {
  std::lock_guard<std::mutex> lock(future_mutex_);
  if (future_) return future_;
  // Completes when every part did (the first error wins), with all their outputs.
  std::vector<c10::intrusive_ptr<c10::ivalue::Future>> parts;
  std::vector<c10::Device> devices;
  for (const auto& w : works_) {
    parts.push_back(w->getFuture());
    for (const auto& d : parts.back()->devices()) {
      if (std::find(devices.begin(), devices.end(), d) == devices.end()) devices.push_back(d);
    }
  }
  future_ = c10::make_intrusive<c10::ivalue::Future>(tensor_list_type(), devices);
  if (parts.empty()) {
    future_->markCompleted(c10::IValue(std::vector<at::Tensor>()));
    return future_;
  }
  auto remaining = std::make_shared<std::atomic<size_t>>(parts.size());
  auto result = future_;
  for (const auto& part : parts) {
    part->addCallback([remaining, result, parts](c10::ivalue::Future& f) {
      if (remaining->fetch_sub(1) != 1) return;
      for (const auto& p : parts) {
        if (p->hasError()) {
          result->setError(p->exception_ptr());
          return;
        }
      }
      std::vector<at::Tensor> all;
      for (const auto& p : parts) {
        const auto v = p->value();
        if (v.isTensorList()) {
          for (const at::Tensor& t : v.toTensorVector()) all.push_back(t);
        }
      }
      result->markCompleted(c10::IValue(all));
    });
  }
  return future_;
}

// ---------------------------------------------------------------------------------- tasks

struct ProcessGroupVK::Task {
  uint64_t seq = 0;
  Plan plan{c10d::OpType::UNKNOWN};
  Launch launch;
  bool drain = false;                  // wait for every earlier task before issuing
  std::optional<c10::Event> ready;     // on the caller's stream when the call was made
  std::optional<c10::Stream> stream;   // communication stream (vk plans)
  c10::intrusive_ptr<VkWork> work;
  c10::intrusive_ptr<c10d::Work> inner;
  std::exception_ptr error;
};

ProcessGroupVK::ProcessGroupVK(c10::intrusive_ptr<c10d::Backend> inner)
    : c10d::Backend(inner->getRank(), inner->getSize()),
      inner_(std::move(inner)),
      verify_(verify_enabled()) {
  init();
}

ProcessGroupVK::~ProcessGroupVK() { stop_threads(); }

void ProcessGroupVK::setGroupUid(const std::string& uid) {
  c10d::Backend::setGroupUid(uid);
  inner_->setGroupUid(uid);
}

uint64_t ProcessGroupVK::pending() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return submitted_ - completed_;
}

std::map<std::string, uint64_t> ProcessGroupVK::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return {{"direct", direct_calls_},        {"inline", inline_calls_},
          {"queued", queued_calls_},        {"zero_copy_tensors", zero_copy_tensors_},
          {"staged_tensors", staged_tensors_}};
}

c10::Stream ProcessGroupVK::comm_stream(const c10::Device& device) {
  // Called with mutex_ held.
  auto it = comm_streams_.find(device.index());
  if (it == comm_streams_.end()) {
    it = comm_streams_.emplace(device.index(), vk_guard().getStreamFromGlobalPool(device, false)).first;
  }
  return it->second;
}

void ProcessGroupVK::remember_coalesced(const c10::intrusive_ptr<c10d::Work>& work) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (coalescing_) coalesced_.push_back(work);
}

ProcessGroupVK::Launch ProcessGroupVK::verified(const Plan& plan, Launch launch) const {
  if (plan.signature().empty() || !verify_ || size_ == 1) return launch;
  const int w = size_;
  const bool transfers = !plan.send_to().empty() && w <= kMaxTransferCheckRanks;
  // [h, -h, S (w x w), R (w x w)]: this rank fills its own rows of S (bytes it sends to each
  // rank) and R (bytes it expects from each rank), zeros elsewhere; the MAX of all ranks is
  // then every rank's rows.
  at::Tensor t = at::zeros({2 + (transfers ? 2 * w * w : 0)}, at::TensorOptions().dtype(at::kLong));
  int64_t* v = t.data_ptr<int64_t>();
  const int64_t h = signature_hash(plan.signature());
  v[0] = h;
  v[1] = -h;
  if (transfers) {
    for (int j = 0; j < w; ++j) {
      v[2 + rank_ * w + j] = plan.send_to()[j];
      v[2 + w * w + rank_ * w + j] = plan.recv_from()[j];
    }
  }
  return [inner = inner_, launch = std::move(launch), t, w, transfers, sig = plan.signature()]() {
    std::vector<at::Tensor> ts{t};
    c10d::AllreduceOptions opts;
    opts.reduceOp = c10d::ReduceOp(c10d::ReduceOp::MAX);
    inner->allreduce(ts, opts)->wait();
    const int64_t* r = t.const_data_ptr<int64_t>();
    bool agree = r[0] == -r[1];
    for (int i = 0; agree && transfers && i < w; ++i) {
      for (int j = 0; agree && j < w; ++j) agree = r[2 + i * w + j] == r[2 + w * w + j * w + i];
    }
    TORCH_CHECK_WITH(DistBackendError, agree,
                     "vkgloo: the ranks of this group called different collectives, or passed "
                     "tensors whose dtypes or sizes do not match between ranks; this rank called ",
                     sig, " (TORCH_DISTRIBUTED_DEBUG=DETAIL reports every rank's call; "
                     "TORCH_VK_DIST_VERIFY=0 turns this check off)");
    return launch();
  };
}

c10::intrusive_ptr<c10d::Work> ProcessGroupVK::run(Plan plan, Launch launch, bool async_op) {
  launch = verified(plan, std::move(launch));
  c10::intrusive_ptr<c10d::Work> work;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    TORCH_CHECK(!stopping_, "vkgloo: the process group was shut down or aborted");
    for (const StagedTensor& s : plan.staged()) {
      if (s.device.numel() == 0) continue;
      ++(s.zero_copy ? zero_copy_tensors_ : staged_tensors_);
    }
    if (idle_locked() && plan.staged().empty() && !plan.host_epilogue()) {
      // CPU tensors with nothing pending: straight to Gloo, which runs the collective on its
      // own threads (only the agreement check, if on, waits here); holding the lock keeps the
      // order of concurrent callers.
      ++direct_calls_;
      work = launch();
    } else if (idle_locked() && !async_op) {
      // Synchronous vk call with nothing pending: staged on the calling thread and the current
      // stream. The lock keeps other callers (and the queue) behind it.
      ++inline_calls_;
      work = run_inline(plan, launch);
    } else {
      ++queued_calls_;
      auto task = std::make_shared<Task>();
      task->seq = ++submitted_;
      task->launch = std::move(launch);
      if (plan.device().has_value()) {
        const c10::Device device = *plan.device();
        const c10::DeviceGuard guard(device);
        task->stream = comm_stream(device);
        task->ready.emplace(kVk);
        task->ready->record(vk_guard().getStream(device));
        for (const StagedTensor& s : plan.staged()) {
          // The communication stream reads / writes staged tensors: their memory must not be
          // reused by the caller's stream before it is done with them.
          if (!s.zero_copy && s.device.numel() > 0) {
            vk_guard().recordDataPtrOnStream(s.device.storage().data_ptr(), *task->stream);
          }
        }
      }
      // Conflicts with pending collectives (same storage, one of them writes): start after they
      // completed, as on one NCCL stream.
      for (const StagedTensor& s : plan.staged()) {
        if (s.device.numel() == 0) continue;
        const void* storage = s.device.storage().unsafeGetStorageImpl();
        const bool writes = s.write;
        for (const InFlight& f : in_flight_) {
          if (f.storage == storage && (f.written || writes)) task->drain = true;
        }
      }
      for (const StagedTensor& s : plan.staged()) {
        if (s.device.numel() == 0) continue;
        in_flight_.push_back({task->seq, s.device.storage().unsafeGetStorageImpl(), s.write});
      }
      task->work = c10::make_intrusive<VkWork>(rank_, plan.type(), plan.result(), plan.device());
      task->plan = std::move(plan);
      work = task->work;
      issue_queue_.push_back(std::move(task));
      start_threads_locked();
      cv_.notify_all();
    }
  }
  remember_coalesced(work);
  return work;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupVK::run_inline(Plan& plan, const Launch& launch) {
  std::optional<c10::DeviceGuard> guard;
  if (plan.device().has_value()) {
    guard.emplace(*plan.device());
    const c10::Stream stream = vk_guard().getStream(*plan.device());
    if (plan.any_zero_copy()) stream.synchronize();
    bool copied = false;
    for (StagedTensor& s : plan.staged()) {
      if (s.copy_in()) {
        s.host.copy_(s.device, /*non_blocking=*/true);
        copied = true;
      }
    }
    if (copied) stream.synchronize();
  }
  c10::intrusive_ptr<c10d::Work> inner = launch();
  inner->wait();
  if (plan.host_epilogue()) plan.host_epilogue()();
  for (StagedTensor& s : plan.staged()) {
    if (s.copy_out()) s.device.copy_(s.host, /*non_blocking=*/true);
  }
  auto work = c10::make_intrusive<VkWork>(rank_, plan.type(), plan.result(), plan.device());
  work->complete(nullptr, inner);
  return work;
}

void ProcessGroupVK::start_threads_locked() {
  if (threads_started_) return;
  threads_started_ = true;
  issue_thread_ = std::thread([this] { issue_loop(); });
  completion_thread_ = std::thread([this] { completion_loop(); });
}

void ProcessGroupVK::stop_threads() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    cv_.notify_all();
  }
  join_releasing_gil(issue_thread_);
  join_releasing_gil(completion_thread_);
}

// Before the Gloo call, on the issue thread: the staged inputs are read on the communication
// stream once the caller's stream passed the call; zero-copy tensors wait for that point on
// the host (Gloo touches their memory directly).
void ProcessGroupVK::prepare(Task& task) {
  if (!task.plan.device().has_value()) return;
  const c10::StreamGuard guard(*task.stream);
  if (task.plan.any_zero_copy()) {
    task.ready->synchronize();
    // After a conflicting collective, its copies back (on the communication stream) must have
    // landed before Gloo reads this memory directly.
    if (task.drain) task.stream->synchronize();
  }
  if (!task.plan.any_staged_copy()) return;
  task.ready->block(*task.stream);
  bool copied = false;
  for (StagedTensor& s : task.plan.staged()) {
    if (s.copy_in()) {
      s.host.copy_(s.device, /*non_blocking=*/true);
      copied = true;
    }
  }
  if (copied) task.stream->synchronize();
}

// After Gloo, on the completion thread: staged outputs are copied back on the communication
// stream; the Future records its event there.
void ProcessGroupVK::finish(Task& task) {
  if (task.plan.host_epilogue()) task.plan.host_epilogue()();
  if (!task.plan.device().has_value()) return;
  const c10::StreamGuard guard(*task.stream);
  for (StagedTensor& s : task.plan.staged()) {
    if (s.copy_out()) s.device.copy_(s.host, /*non_blocking=*/true);
  }
}

void ProcessGroupVK::issue_loop() {
  for (;;) {
    std::shared_ptr<Task> task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [&] { return !issue_queue_.empty() || (stopping_ && idle_locked()); });
      if (issue_queue_.empty()) return;
      task = issue_queue_.front();
      issue_queue_.pop_front();
      if (task->drain) cv_.wait(lock, [&] { return completed_ + 1 >= task->seq; });
    }
    try {
      prepare(*task);
      task->inner = task->launch();
    } catch (...) {
      task->error = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(mutex_);
    completion_queue_.push_back(std::move(task));
    cv_.notify_all();
  }
}

void ProcessGroupVK::completion_loop() {
  for (;;) {
    std::shared_ptr<Task> task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [&] { return !completion_queue_.empty() || (stopping_ && idle_locked()); });
      if (completion_queue_.empty()) return;
      task = completion_queue_.front();
      completion_queue_.pop_front();
    }
    if (!task->error) {
      try {
        task->inner->wait();
        finish(*task);
      } catch (...) {
        task->error = std::current_exception();
      }
    }
    {
      std::optional<c10::StreamGuard> guard;
      if (task->stream.has_value()) guard.emplace(*task->stream);
      task->work->complete(task->error, task->inner);
    }
    const uint64_t seq = task->seq;
    task.reset();  // staging buffers and references to the caller's tensors go here
    std::lock_guard<std::mutex> lock(mutex_);
    completed_ = seq;
    in_flight_.erase(std::remove_if(in_flight_.begin(), in_flight_.end(),
                                    [&](const InFlight& f) { return f.seq == seq; }),
                     in_flight_.end());
    cv_.notify_all();
  }
}

// ---------------------------------------------------------------------------------- groups

c10::intrusive_ptr<c10d::Backend> ProcessGroupVK::split(const c10::intrusive_ptr<c10d::Store>& store,
                                                        const std::vector<int>& ranks,
                                                        const c10::intrusive_ptr<Options>& opts) {
  std::lock_guard<std::mutex> lock(split_mutex_);
  if (store.get() == last_split_store_ && ranks == last_split_ranks_) {
    if (auto child = last_split_.lock()) return child;
  }
  auto inner = inner_->split(store, ranks, opts);
  c10::intrusive_ptr<c10d::Backend> child;
  if (inner) child = c10::make_intrusive<ProcessGroupVK>(inner);
  last_split_store_ = store.get();
  last_split_ranks_ = ranks;
  last_split_ = c10::weak_intrusive_ptr<c10d::Backend>(child);
  return child;
}

c10::intrusive_ptr<c10d::Backend> ProcessGroupVK::merge(const c10::intrusive_ptr<c10d::Store>& store,
                                                        const c10::intrusive_ptr<Options>& opts,
                                                        const int& rank, const int& size) {
  auto inner = inner_->merge(store, opts, rank, size);
  if (!inner) return nullptr;
  return c10::make_intrusive<ProcessGroupVK>(inner);
}

void ProcessGroupVK::startCoalescing() {
  std::lock_guard<std::mutex> lock(mutex_);
  TORCH_CHECK(!coalescing_, "vkgloo: startCoalescing called twice without endCoalescing");
  coalescing_ = true;
  coalesced_.clear();
}

c10::intrusive_ptr<c10d::Work> ProcessGroupVK::endCoalescing() {
  std::vector<c10::intrusive_ptr<c10d::Work>> works;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    TORCH_CHECK(coalescing_, "vkgloo: endCoalescing called without startCoalescing");
    coalescing_ = false;
    works.swap(coalesced_);
  }
  return c10::make_intrusive<MultiWork>(rank_, c10d::OpType::COALESCED, std::move(works));
}

void ProcessGroupVK::abort() {
  inner_->abort();  // pending Gloo calls fail, which completes the queue with errors
  stop_threads();
}

void ProcessGroupVK::shutdown() {
  stop_threads();  // lets the pending collectives finish first
  inner_->shutdown();
}

void ProcessGroupVK::monitoredBarrier(const c10d::BarrierOptions& opts, bool wait_all_ranks) {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [&] { return idle_locked(); });
  }
  inner_->monitoredBarrier(opts, wait_all_ranks);
}

}  // namespace tvk::distributed
