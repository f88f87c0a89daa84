// L1: streams (command recording, batched submission, timeline semaphores) and events.
//
// Recording state per stream: one command buffer in the recording state at a time. A recorded
// command is preceded by a global compute+transfer memory barrier when it conflicts with a
// command since the previous barrier (HazardTracker below; stream.h, "Barriers"), which gives
// in-order stream semantics. Each submit waits for the stream's previous submit and signals the
// stream's timeline semaphore with the next value; command buffers, parameter ring chunks and
// staging chunks are recycled once the timeline passed the value of the submit that last used
// them.
//
// Graph capture (runtime/graph.h): Impl::capture points at the graph being captured; the
// recording paths append to it under Impl::mutex. begin/end_capture are serialized by
// Impl::capture_mutex, which is taken before the allocator's lock (never while Impl::mutex is
// held).
//
// Locking: Impl::mutex serializes recording. Nothing that takes the allocator locks is called
// while it is held (addresses are resolved before locking), because the allocators call into
// streams while holding theirs.
#include "runtime/stream.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

#include "runtime/allocator.h"
#include "runtime/device.h"
#include "runtime/error.h"
#include "runtime/graph.h"
#include "runtime/pipeline.h"
#include "runtime/raw_buffer.h"

// Vulkan structs are written `T x{VK_STRUCTURE_TYPE_...}`: the other members are zero on purpose.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace tvk {

namespace {
constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kParamChunk = 1 * kMiB;    // parameter ring chunk
constexpr uint64_t kStagingChunk = 8 * kMiB;  // upload staging ring chunk
// Host copies larger than this are staged in pieces of this size through one pinned block.
constexpr uint64_t kLargeStagingPiece = 256 * kMiB;
constexpr uint64_t kSmallStaging = 4 * kMiB;  // larger uploads use a pinned block of their own
constexpr uint64_t kParamAlign = 16;
// Timing events (Event::record with timing): slots are reused in a ring, so an event is read
// correctly until 65536 later timing events were recorded on its stream (512 KiB of queries).
constexpr uint32_t kQuerySlots = 65536;
constexpr uint32_t kProfileQueries = 4096;  // timestamp queries per profiling pool (2 per command)

uint64_t round_up(uint64_t v, uint64_t m) { return (v + m - 1) / m * m; }

BarrierMode barrier_mode_from_env() {
  const char* v = std::getenv("TORCH_VK_BARRIERS");
  if (!v || !*v) return BarrierMode::Tracked;
  const std::string mode(v);
  if (mode == "all") return BarrierMode::All;
  if (mode == "reverse") return BarrierMode::Reverse;
  return BarrierMode::Tracked;
}

std::atomic<int>& barrier_mode_setting() {
  static std::atomic<int> mode{static_cast<int>(barrier_mode_from_env())};
  return mode;
}

// The commands recorded since the last barrier of a command buffer, for deciding whether the
// next command needs one.
class HazardTracker {
 public:
  // True when a command touching `accesses` must wait for the commands since the last barrier:
  // it reads or writes bytes they wrote, or writes bytes they read.
  bool conflicts(const AccessSet& accesses) const {
    if (empty_) return false;
    if (everything_ || !accesses.known()) return true;
    for (int i = 0; i < accesses.size(); ++i) {
      const MemoryRange& r = accesses[i];
      for (const MemoryRange& p : pending_)
        if ((r.write || p.write) && r.begin < p.end && p.begin < r.end) return true;
    }
    return false;
  }
  void add(const AccessSet& accesses) {
    empty_ = false;
    if (!accesses.known() || pending_.size() + accesses.size() > kMaxPending) {
      everything_ = true;
      return;
    }
    for (int i = 0; i < accesses.size(); ++i) pending_.push_back(accesses[i]);
  }
  void clear() {
    pending_.clear();
    everything_ = false;
    empty_ = true;
  }

 private:
  // Past this many ranges the next command gets a barrier (bounds the cost of conflicts()).
  static constexpr size_t kMaxPending = 96;
  std::vector<MemoryRange> pending_;
  bool everything_ = false;
  bool empty_ = true;
};

const AccessSet& unknown_accesses() {
  static const AccessSet everything = AccessSet().everything();
  return everything;
}

uint32_t submit_batch_from_env() {
  const char* v = std::getenv("TORCH_VK_SUBMIT_BATCH");
  if (!v || !*v) return 64;
  long n = std::strtol(v, nullptr, 10);
  return n >= 1 ? static_cast<uint32_t>(n) : 64;
}

// A bump allocator over host-visible, mapped chunks with device addresses. A chunk is reused
// once the timeline passed the last batch that used it. Requests larger than a chunk get a
// dedicated chunk that is destroyed (not cached) after use.
class Ring {
 public:
  explicit Ring(uint64_t chunk_size) : chunk_size_(chunk_size) {}

  // Returns (chunk, offset) of `size` bytes aligned to `align`, used by batch `value`.
  // `completed()` reads the timeline; it is only called when a new chunk is needed.
  template <typename CompletedFn>
  std::pair<RawBuffer*, uint64_t> alloc(Device& device, uint64_t size, uint64_t align,
                                        uint64_t value, CompletedFn completed) {
    if (size > chunk_size_) {
      retired_.push_back({value, RawBuffer{}});
      create(device, round_up(size, 4096), &retired_.back().second);
      return {&retired_.back().second, 0};
    }
    uint64_t offset = round_up(offset_, align);
    if (!has_current_ || offset + size > chunk_size_) {
      if (has_current_) retired_.push_back({last_use_, current_});
      recycle(device, completed());
      if (!free_.empty()) {
        current_ = free_.back();
        free_.pop_back();
      } else {
        create(device, chunk_size_, &current_);
      }
      has_current_ = true;
      offset = 0;
    }
    offset_ = offset + size;
    last_use_ = value;
    return {&current_, offset};
  }

  void recycle(Device& device, uint64_t completed) {
    size_t keep = 0;
    for (size_t i = 0; i < retired_.size(); ++i) {
      if (retired_[i].first <= completed) {
        if (retired_[i].second.size == chunk_size_) free_.push_back(retired_[i].second);
        else destroy_raw_buffer(device, retired_[i].second);
      } else {
        retired_[keep++] = retired_[i];
      }
    }
    retired_.resize(keep);
  }

  void destroy(Device& device) {
    if (has_current_) destroy_raw_buffer(device, current_);
    for (auto& r : retired_) destroy_raw_buffer(device, r.second);
    for (auto& f : free_) destroy_raw_buffer(device, f);
    retired_.clear();
    free_.clear();
    has_current_ = false;
  }

 private:
  void create(Device& device, uint64_t size, RawBuffer* out) {
    TVK_VK_CHECK_DEV(create_raw_buffer(device, size, device.host_memory_type(), out),
                     device.index());
    TVK_CHECK(out->mapped != nullptr, "staging memory is not host-mappable");
  }

  uint64_t chunk_size_;
  RawBuffer current_;
  bool has_current_ = false;
  uint64_t offset_ = 0;
  uint64_t last_use_ = 0;
  std::deque<std::pair<uint64_t, RawBuffer>> retired_;  // (timeline value, chunk)
  std::vector<RawBuffer> free_;
};

// Binds `views` as the storage texel buffers 0 .. count - 1 of descriptor set 0.
void push_texel_views(VkCommandBuffer cb, VkPipelineLayout layout, const VkBufferView* views,
                      uint32_t count) {
  VkWriteDescriptorSet writes[kMaxTexelBindings];
  for (uint32_t i = 0; i < count; ++i) {
    writes[i] = VkWriteDescriptorSet{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    writes[i].dstBinding = i;
    writes[i].descriptorCount = 1;
    writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER;
    writes[i].pTexelBufferView = &views[i];
  }
  vk::vkCmdPushDescriptorSetKHR(cb, VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, count, writes);
}

// The barrier recorded between conflicting commands: all compute/transfer writes before it
// are visible to all compute/transfer reads and writes after it.
void record_barrier(VkCommandBuffer cb);

// Records one dispatch / copy / fill `c` into `cb`; `bound` is the pipeline bound in `cb`.
void emit_command(VkCommandBuffer cb, VkPipelineLayout layout, const GraphCommand& c,
                  VkPipeline& bound) {
  switch (c.kind) {
    case GraphCommand::Kind::Dispatch:
      if (bound != c.pipeline) {
        vk::vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, c.pipeline);
        bound = c.pipeline;
      }
      if (c.push_size > 0)
        vk::vkCmdPushConstants(cb, layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, c.push_size, c.push);
      if (c.view_count > 0) push_texel_views(cb, layout, c.views, c.view_count);
      vk::vkCmdDispatch(cb, c.groups[0], c.groups[1], c.groups[2]);
      break;
    case GraphCommand::Kind::Copy: {
      VkBufferCopy region{c.src_offset, c.dst_offset, c.bytes};
      vk::vkCmdCopyBuffer(cb, c.src, c.dst, 1, &region);
      break;
    }
    case GraphCommand::Kind::Fill:
      vk::vkCmdFillBuffer(cb, c.dst, c.dst_offset, c.bytes, c.pattern);
      break;
  }
}

void record_barrier(VkCommandBuffer cb) {
  VkMemoryBarrier b{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  b.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  b.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                    VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  vk::vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                           VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0,
                           1, &b, 0, nullptr, 0, nullptr);
}
}  // namespace

struct Stream::Impl {
  Device& device;
  RuntimeCounters& counters;
  VkSemaphore timeline;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  uint32_t batch_limit = 64;
  std::array<uint32_t, 3> max_groups{};

  std::mutex mutex;
  VkCommandPool pool = VK_NULL_HANDLE;
  VkCommandBuffer cb = VK_NULL_HANDLE;  // the recording command buffer, or null
  bool cb_has_commands = false;         // a memory-accessing command was recorded in `cb`
  bool dirty = false;                   // there is something to submit
  uint32_t commands_in_batch = 0;
  VkPipeline bound = VK_NULL_HANDLE;
  uint64_t submitted = 0;  // timeline value signalled by the last submit
  std::vector<std::pair<uint64_t, VkCommandBuffer>> in_flight;
  std::vector<VkCommandBuffer> free_cbs;
  std::vector<VkSemaphore> wait_semaphores;
  std::vector<uint64_t> wait_values;
  Ring params{kParamChunk};
  Ring staging{kStagingChunk};
  VkQueryPool query_pool = VK_NULL_HANDLE;
  uint32_t next_query = 0;
  // Profiling (runtime/profiler.h): pools of kProfileQueries timestamps, used in order and
  // reused from the first once take_profile() read them all; the open records.
  uint32_t stream_id = 0;
  std::atomic<uint64_t> waited_through{0};  // highest point wait_for_point was asked for
  struct Profiled {
    VkQueryPool pool;
    uint32_t slot;  // start timestamp; the end one is slot + 1 (none for host waits)
    VkPipeline pipeline;
    profiler::CommandRecord record;
  };
  std::vector<VkQueryPool> profile_pools;
  size_t profile_pool = 0;    // index of the pool in use
  uint32_t profile_slot = 0;  // next free query of it
  std::vector<Profiled> profiled;
  // The device error record (host-visible, mapped), created on first use; see stream.h.
  std::mutex error_mutex;
  RawBuffer error_buffer;
  std::atomic<DeviceErrorRecord*> error_record{nullptr};
  // Graph capture.
  std::mutex capture_mutex;
  std::atomic<CapturedGraph*> capture{nullptr};
  // Memory of destroyed graphs, released once the timeline reached the value.
  std::vector<std::pair<uint64_t, RawBuffer>> deferred_release;
  // Secondary command buffers of released graphs, freed once their point completed.
  std::vector<std::pair<uint64_t, VkCommandBuffer>> deferred_secondaries;
  // Barriers: the commands since the last barrier of `cb`; in BarrierMode::Reverse the
  // commands of the current barrier-free group, recorded (reversed) when the group ends.
  HazardTracker hazards;
  std::vector<GraphCommand> deferred;

  Impl(Device& d, VkSemaphore t) : device(d), counters(Runtime::get().counters()), timeline(t) {}

  uint64_t completed() {
    uint64_t v = 0;
    TVK_VK_CHECK_DEV(vk::vkGetSemaphoreCounterValue(device.handle(), timeline, &v), device.index());
    return v;
  }

  // The batch the next recorded command belongs to.
  uint64_t batch_value() const { return submitted + 1; }

  void recycle(uint64_t done) {
    params.recycle(device, done);
    staging.recycle(device, done);
    release_deferred(done);
    release_secondaries(done);
    size_t keep = 0;
    for (size_t i = 0; i < in_flight.size(); ++i) {
      if (in_flight[i].first <= done) {
        if (in_flight[i].second) {
          vk::vkResetCommandBuffer(in_flight[i].second, 0);
          free_cbs.push_back(in_flight[i].second);
        }
      } else {
        in_flight[keep++] = in_flight[i];
      }
    }
    in_flight.resize(keep);
  }

  void release_deferred(uint64_t done) {
    size_t keep = 0;
    for (size_t i = 0; i < deferred_release.size(); ++i) {
      if (deferred_release[i].first <= done) destroy_raw_buffer(device, deferred_release[i].second);
      else deferred_release[keep++] = deferred_release[i];
    }
    deferred_release.resize(keep);
  }

  void begin() {
    if (cb) return;
    if (free_cbs.empty()) recycle(completed());
    if (free_cbs.empty()) {
      VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
      ai.commandPool = pool;
      ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
      ai.commandBufferCount = 1;
      VkCommandBuffer fresh;
      TVK_VK_CHECK_DEV(vk::vkAllocateCommandBuffers(device.handle(), &ai, &fresh), device.index());
      free_cbs.push_back(fresh);
    }
    VkCommandBuffer next = free_cbs.back();
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    TVK_VK_CHECK_DEV(vk::vkBeginCommandBuffer(next, &bi), device.index());
    free_cbs.pop_back();
    cb = next;
    cb_has_commands = false;
    bound = VK_NULL_HANDLE;
    // Host writes to mapped memory (parameters, staging, unified-memory tensors) made before
    // the submit are visible to this command buffer. (Queue submission already guarantees
    // this; the explicit barrier documents it and costs next to nothing.)
    VkMemoryBarrier b{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    b.srcAccessMask = VK_ACCESS_HOST_WRITE_BIT;
    b.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                      VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    vk::vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_HOST_BIT,
                             VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0,
                             1, &b, 0, nullptr, 0, nullptr);
  }

  // A record of this stream, launched now by the calling thread's current op.
  profiler::CommandRecord new_record(profiler::CommandKind kind) const {
    profiler::CommandRecord r;
    r.kind = kind;
    r.device = device.index();
    r.stream = stream_id;
    r.correlation = profiler::current_correlation();
    r.launch_ns = profiler::host_now_ns();
    return r;
  }

  // After pre_command(), around the command: brackets it with timestamps while the profiler is
  // active (and the stream does not capture). Returns the record's index, or -1.
  int profile_begin(profiler::CommandKind kind, VkPipeline pipeline, uint64_t bytes) {
    if (!profiler::active() || capture.load(std::memory_order_relaxed) ||
        device.caps().timestamp_period_ns <= 0)
      return -1;
    if (profile_pool < profile_pools.size() && profile_slot + 2 > kProfileQueries) {
      ++profile_pool;
      profile_slot = 0;
    }
    if (profile_pool == profile_pools.size()) {
      VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
      qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
      qi.queryCount = kProfileQueries;
      VkQueryPool qp = VK_NULL_HANDLE;
      TVK_VK_CHECK_DEV(vk::vkCreateQueryPool(device.handle(), &qi, nullptr, &qp), device.index());
      profile_pools.push_back(qp);
      profile_slot = 0;
    }
    Profiled p{profile_pools[profile_pool], profile_slot, pipeline, new_record(kind)};
    profile_slot += 2;
    vk::vkCmdResetQueryPool(cb, p.pool, p.slot, 2);
    vk::vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, p.pool, p.slot);
    p.record.bytes = bytes;
    profiled.push_back(std::move(p));
    return static_cast<int>(profiled.size() - 1);
  }
  void profile_end(int index) {
    if (index < 0) return;
    const Profiled& p = profiled[static_cast<size_t>(index)];
    vk::vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, p.pool, p.slot + 1);
  }

  // Before every memory-accessing command: the barrier it needs. Returns the barrier mode.
  BarrierMode pre_command(const AccessSet& accesses) {
    begin();
    BarrierMode mode = barrier_mode();
    // Profiled commands are timed where they are recorded: no reordering while profiling.
    if (mode == BarrierMode::Reverse && profiler::active()) mode = BarrierMode::Tracked;
    if (mode != BarrierMode::Reverse) emit_deferred();
    if (!cb_has_commands) {
      hazards.clear();  // earlier command buffers are ordered by the submit's timeline wait
    } else if (mode == BarrierMode::All || hazards.conflicts(accesses)) {
      emit_deferred();
      record_barrier(cb);
      hazards.clear();
      counters.barriers.fetch_add(1, std::memory_order_relaxed);
    } else {
      counters.barriers_skipped.fetch_add(1, std::memory_order_relaxed);
    }
    hazards.add(accesses);
    return mode;
  }

  // BarrierMode::Reverse: records the pending barrier-free group, last command first.
  void emit_deferred() {
    if (deferred.empty()) return;
    for (size_t i = deferred.size(); i-- > 0;) emit_command(cb, layout, deferred[i], bound);
    deferred.clear();
  }

  // Records `c` (its accesses included) with the barrier it needs, and appends it to the graph
  // being captured.
  void record(const GraphCommand& c, profiler::CommandKind kind, uint64_t bytes) {
    const BarrierMode mode = pre_command(c.accesses);
    if (mode == BarrierMode::Reverse) {
      deferred.push_back(c);
    } else {
      const int profiled_index = profile_begin(kind, c.pipeline, bytes);
      emit_command(cb, layout, c, bound);
      profile_end(profiled_index);
    }
    post_command();
    if (CapturedGraph* g = capture.load(std::memory_order_relaxed)) g->commands_.push_back(c);
  }

  // After every memory-accessing command.
  void post_command() {
    cb_has_commands = true;
    dirty = true;
    if (++commands_in_batch >= batch_limit) submit();
  }

  void submit() {
    if (!dirty) return;
    emit_deferred();
    // Commands of the previous submit of this stream stay ordered before this one's (a
    // pipeline barrier orders only within what it sees in submission order, and the barriers
    // above are only recorded between commands of one command buffer).
    if (submitted > 0) {
      wait_semaphores.push_back(timeline);
      wait_values.push_back(submitted);
    }
    if (cb && cb_has_commands) {
      // Device writes become visible to host reads once the submit completed: mapped tensor
      // memory read by copy_to_host and the device error record.
      VkMemoryBarrier b{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
      b.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
      b.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
      vk::vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                               VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &b, 0, nullptr, 0, nullptr);
    }
    if (cb) TVK_VK_CHECK_DEV(vk::vkEndCommandBuffer(cb), device.index());
    const uint64_t value = submitted + 1;
    VkTimelineSemaphoreSubmitInfo ti{VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO};
    ti.waitSemaphoreValueCount = static_cast<uint32_t>(wait_values.size());
    ti.pWaitSemaphoreValues = wait_values.data();
    ti.signalSemaphoreValueCount = 1;
    ti.pSignalSemaphoreValues = &value;
    // One wait stage per wait semaphore; wait_semaphores is short.
    VkPipelineStageFlags stages[16];
    std::vector<VkPipelineStageFlags> many;
    VkPipelineStageFlags* stage_ptr = stages;
    if (wait_semaphores.size() > 16) {
      many.resize(wait_semaphores.size());
      stage_ptr = many.data();
    }
    for (size_t i = 0; i < wait_semaphores.size(); ++i)
      stage_ptr[i] = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.pNext = &ti;
    si.waitSemaphoreCount = static_cast<uint32_t>(wait_semaphores.size());
    si.pWaitSemaphores = wait_semaphores.data();
    si.pWaitDstStageMask = stage_ptr;
    si.commandBufferCount = cb ? 1 : 0;
    si.pCommandBuffers = &cb;
    si.signalSemaphoreCount = 1;
    si.pSignalSemaphores = &timeline;
    {
      std::lock_guard<std::mutex> qlock(device.queue_mutex());
      TVK_VK_CHECK_DEV(vk::vkQueueSubmit(device.queue(), 1, &si, VK_NULL_HANDLE), device.index());
    }
    counters.submits.fetch_add(1, std::memory_order_relaxed);
    in_flight.emplace_back(value, cb);
    cb = VK_NULL_HANDLE;
    cb_has_commands = false;
    dirty = false;
    commands_in_batch = 0;
    wait_semaphores.clear();
    wait_values.clear();
    submitted = value;
  }

  // Parameter / staging memory used by the current batch. The ring keeps it until the batch
  // after this one completed, so a command that lands in the next batch (another thread's
  // submit in between) still finds it intact.
  std::pair<RawBuffer*, uint64_t> ring_alloc(Ring& ring, uint64_t size, uint64_t align) {
    return ring.alloc(device, size, align, batch_value() + 1, [this] { return completed(); });
  }

  // `accesses`: the device memory the copy reads and writes (null: any memory).
  void copy_buffers(VkBuffer src, uint64_t src_offset, VkBuffer dst, uint64_t dst_offset,
                    uint64_t bytes, const AccessSet* accesses) {
    GraphCommand c;
    c.kind = GraphCommand::Kind::Copy;
    c.src = src;
    c.src_offset = src_offset;
    c.dst = dst;
    c.dst_offset = dst_offset;
    c.bytes = bytes;
    c.accesses = accesses ? *accesses : unknown_accesses();
    record(c, profiler::CommandKind::Copy, bytes);
    counters.transfers.fetch_add(1, std::memory_order_relaxed);
  }

  // The captured commands as a secondary command buffer (simultaneous use: replays may be
  // pending while the next one is recorded), with the same barriers between commands as when
  // they were first recorded.
  VkCommandBuffer record_secondary(const std::vector<GraphCommand>& commands) {
    VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    ai.commandPool = pool;
    ai.level = VK_COMMAND_BUFFER_LEVEL_SECONDARY;
    ai.commandBufferCount = 1;
    VkCommandBuffer sec = VK_NULL_HANDLE;
    TVK_VK_CHECK_DEV(vk::vkAllocateCommandBuffers(device.handle(), &ai, &sec), device.index());
    VkCommandBufferInheritanceInfo inherit{VK_STRUCTURE_TYPE_COMMAND_BUFFER_INHERITANCE_INFO};
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    bi.flags = VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT;
    bi.pInheritanceInfo = &inherit;
    VkResult result = vk::vkBeginCommandBuffer(sec, &bi);
    if (result == VK_SUCCESS) {
      VkPipeline sec_bound = VK_NULL_HANDLE;
      HazardTracker tracker;
      const bool all = barrier_mode() == BarrierMode::All;
      bool first = true;
      for (const GraphCommand& c : commands) {
        if (!c.replayed) continue;
        if (!first && (all || tracker.conflicts(c.accesses))) {
          record_barrier(sec);
          tracker.clear();
        }
        first = false;
        tracker.add(c.accesses);
        emit_command(sec, layout, c, sec_bound);
      }
      result = vk::vkEndCommandBuffer(sec);
    }
    if (result != VK_SUCCESS) {
      vk::vkFreeCommandBuffers(device.handle(), pool, 1, &sec);
      TVK_VK_CHECK_DEV(result, device.index());
    }
    return sec;
  }

  void release_secondaries(uint64_t done) {
    size_t keep = 0;
    for (size_t i = 0; i < deferred_secondaries.size(); ++i) {
      if (deferred_secondaries[i].first <= done)
        vk::vkFreeCommandBuffers(device.handle(), pool, 1, &deferred_secondaries[i].second);
      else
        deferred_secondaries[keep++] = deferred_secondaries[i];
    }
    deferred_secondaries.resize(keep);
  }
};

AccessSet& AccessSet::add(uint64_t address, uint64_t bytes, bool write) {
  if (address == 0 || bytes == 0 || !known_) return *this;
  if (address > UINT64_MAX - bytes) return everything();
  const MemoryRange r{address, address + bytes, write};
  if (count_ < kCapacity) {
    ranges_[count_++] = r;
    return *this;
  }
  // Full: widen the range of the same kind whose span grows least to cover `r` as well. A
  // wider range can only add barriers, never remove one.
  int best = -1;
  uint64_t best_growth = UINT64_MAX;
  for (int i = 0; i < count_; ++i) {
    if (ranges_[i].write != write) continue;
    const uint64_t begin = std::min(ranges_[i].begin, r.begin);
    const uint64_t end = std::max(ranges_[i].end, r.end);
    const uint64_t growth = (end - begin) - (ranges_[i].end - ranges_[i].begin);
    if (growth < best_growth) {
      best_growth = growth;
      best = i;
    }
  }
  if (best < 0) {
    // Every range is of the other kind: collapse them into one span to make room.
    for (int i = 1; i < count_; ++i) {
      ranges_[0].begin = std::min(ranges_[0].begin, ranges_[i].begin);
      ranges_[0].end = std::max(ranges_[0].end, ranges_[i].end);
    }
    ranges_[1] = r;
    count_ = 2;
    return *this;
  }
  ranges_[best].begin = std::min(ranges_[best].begin, r.begin);
  ranges_[best].end = std::max(ranges_[best].end, r.end);
  return *this;
}

BarrierMode barrier_mode() {
  return static_cast<BarrierMode>(barrier_mode_setting().load(std::memory_order_relaxed));
}

void set_barrier_mode(BarrierMode mode) {
  barrier_mode_setting().store(static_cast<int>(mode), std::memory_order_relaxed);
}

Stream::Stream(Device& device, uint32_t id, int priority)
    : device_(device), id_(id), priority_(priority) {
  VkDevice dev = device.handle();
  VkSemaphoreTypeCreateInfo type{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO};
  type.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
  type.initialValue = 0;
  VkSemaphoreCreateInfo si{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
  si.pNext = &type;
  TVK_VK_CHECK_DEV(vk::vkCreateSemaphore(dev, &si, nullptr, &timeline_), device.index());
  impl_ = std::make_unique<Impl>(device, timeline_);
  impl_->stream_id = id;
  impl_->layout = device.pipelines().layout();
  impl_->batch_limit = submit_batch_from_env();
  impl_->max_groups = device.caps().max_workgroup_count;
  VkCommandPoolCreateInfo pi{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pi.queueFamilyIndex = device.queue_family();
  TVK_VK_CHECK_DEV(vk::vkCreateCommandPool(dev, &pi, nullptr, &impl_->pool), device.index());
  if (device.caps().timestamp_period_ns > 0) {
    VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qi.queryCount = kQuerySlots;
    TVK_VK_CHECK_DEV(vk::vkCreateQueryPool(dev, &qi, nullptr, &impl_->query_pool), device.index());
  }
}

Stream::~Stream() {
  impl_->capture.store(nullptr);
  try {
    synchronize();
  } catch (...) {
  }
  VkDevice dev = device_.handle();
  for (auto& d : impl_->deferred_release) destroy_raw_buffer(device_, d.second);
  impl_->params.destroy(device_);
  impl_->staging.destroy(device_);
  if (impl_->error_buffer.buffer) destroy_raw_buffer(device_, impl_->error_buffer);
  if (impl_->query_pool) vk::vkDestroyQueryPool(dev, impl_->query_pool, nullptr);
  for (VkQueryPool qp : impl_->profile_pools) vk::vkDestroyQueryPool(dev, qp, nullptr);
  if (impl_->pool) vk::vkDestroyCommandPool(dev, impl_->pool, nullptr);  // frees its buffers
  if (timeline_) vk::vkDestroySemaphore(dev, timeline_, nullptr);
}

void Stream::dispatch(VkPipeline pipeline, uint32_t groups_x, uint32_t groups_y,
                      uint32_t groups_z, const void* push, uint32_t push_size,
                      const VkBufferView* views, uint32_t view_count,
                      const AccessSet* accesses) {
  TVK_CHECK(push_size <= kMaxPushConstantBytes, "push constants of ", push_size,
            " bytes exceed the ", kMaxPushConstantBytes, "-byte limit");
  TVK_CHECK(view_count <= kMaxTexelBindings, view_count, " texel views exceed the limit of ",
            kMaxTexelBindings);
  TVK_CHECK(view_count == 0 || device_.caps().texel_buffers,
            "texel views on a device without texel buffers");
  if (groups_x == 0 || groups_y == 0 || groups_z == 0) return;
  Impl& s = *impl_;
  TVK_CHECK(groups_x <= s.max_groups[0] && groups_y <= s.max_groups[1] && groups_z <= s.max_groups[2],
            "dispatch of (", groups_x, ", ", groups_y, ", ", groups_z,
            ") workgroups exceeds maxComputeWorkGroupCount (", s.max_groups[0], ", ",
            s.max_groups[1], ", ", s.max_groups[2], ")");
  // vkCmdPushConstants needs a multiple of 4 bytes: the command's copy is padded with zeros.
  GraphCommand c;
  c.kind = GraphCommand::Kind::Dispatch;
  c.pipeline = pipeline;
  c.groups[0] = groups_x;
  c.groups[1] = groups_y;
  c.groups[2] = groups_z;
  c.push_size = (push_size + 3) & ~3u;
  if (push_size > 0) std::memcpy(c.push, push, push_size);
  std::memset(c.push + push_size, 0, c.push_size - push_size);
  c.view_count = view_count;
  for (uint32_t i = 0; i < view_count; ++i) c.views[i] = views[i];
  c.accesses = accesses ? *accesses : unknown_accesses();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.record(c, profiler::CommandKind::Kernel, 0);
  s.counters.dispatches.fetch_add(1, std::memory_order_relaxed);
}

uint64_t Stream::upload_params(const void* data, uint64_t size) {
  if (size == 0) size = kParamAlign;  // still hand out a valid address
  Impl& s = *impl_;
  std::lock_guard<std::mutex> lock(s.mutex);
  // Captured launches are replayed with the same push constants: their parameters must live
  // as long as the graph.
  if (CapturedGraph* g = s.capture.load(std::memory_order_relaxed)) return g->alloc_params(data, size);
  auto [chunk, offset] = s.ring_alloc(s.params, size, kParamAlign);
  if (data) std::memcpy(static_cast<char*>(chunk->mapped) + offset, data, size);
  return chunk->address + offset;
}

void Stream::copy(uint64_t src_address, uint64_t dst_address, uint64_t bytes) {
  if (bytes == 0) return;
  Allocator& alloc = device_.allocator();
  ResolvedAddress src = alloc.resolve(src_address);
  ResolvedAddress dst = alloc.resolve(dst_address);
  TVK_CHECK(bytes <= src.bytes_to_end && bytes <= dst.bytes_to_end, "copy of ", bytes,
            " bytes runs past the end of its allocation");
  const bool overlap = src.buffer == dst.buffer && src.offset < dst.offset + bytes &&
                       dst.offset < src.offset + bytes;
  if (src_address == dst_address) return;
  if (!overlap) {
    AccessSet accesses;
    accesses.read(src_address, bytes).write(dst_address, bytes);
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->copy_buffers(src.buffer, src.offset, dst.buffer, dst.offset, bytes, &accesses);
    return;
  }
  // vkCmdCopyBuffer forbids overlapping regions: bounce through a temporary block (allocated on
  // this stream, so returning it right after recording is stream-ordered and safe).
  uint64_t tmp_address = alloc.allocate(bytes, id_);
  ResolvedAddress tmp = alloc.resolve(tmp_address);
  {
    AccessSet in, out;
    in.read(src_address, bytes).write(tmp_address, bytes);
    out.read(tmp_address, bytes).write(dst_address, bytes);
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->copy_buffers(src.buffer, src.offset, tmp.buffer, tmp.offset, bytes, &in);
    impl_->copy_buffers(tmp.buffer, tmp.offset, dst.buffer, dst.offset, bytes, &out);
  }
  alloc.free(tmp_address);
}

void Stream::fill(uint64_t dst_address, uint64_t bytes, uint32_t pattern) {
  if (bytes == 0) return;
  ResolvedAddress dst = device_.allocator().resolve(dst_address);
  TVK_CHECK(dst.offset % 4 == 0 && bytes % 4 == 0,
            "fill needs an address and size that are multiples of 4 (got offset ", dst.offset,
            ", ", bytes, " bytes)");
  TVK_CHECK(bytes <= dst.bytes_to_end, "fill of ", bytes, " bytes runs past the end of its allocation");
  GraphCommand c;
  c.kind = GraphCommand::Kind::Fill;
  c.dst = dst.buffer;
  c.dst_offset = dst.offset;
  c.bytes = bytes;
  c.pattern = pattern;
  c.accesses.write(dst_address, bytes);
  Impl& s = *impl_;
  std::lock_guard<std::mutex> lock(s.mutex);
  s.record(c, profiler::CommandKind::Fill, bytes);
  s.counters.transfers.fetch_add(1, std::memory_order_relaxed);
}

void Stream::copy_from_host(const void* src, uint64_t dst_address, uint64_t bytes) {
  if (bytes == 0) return;
  forbid_while_capturing("copy_from_host (a host-to-device copy)");
  ResolvedAddress dst = device_.allocator().resolve(dst_address);
  TVK_CHECK(bytes <= dst.bytes_to_end, "copy of ", bytes, " bytes runs past the end of its allocation");
  HostAllocator& host = device_.host_allocator();
  if (host.is_pinned(src)) {
    ResolvedAddress p = host.resolve(src);
    if (p.bytes_to_end >= bytes) {
      host.record_stream(const_cast<void*>(src), id_);  // keeps the block until the copy ran
      std::lock_guard<std::mutex> lock(impl_->mutex);
      // Pinned memory may be the destination of an earlier device copy: ordered against all.
      impl_->copy_buffers(p.buffer, p.offset, dst.buffer, dst.offset, bytes, nullptr);
      return;
    }
  }
  if (dst.host_pointer) {
    // Unified memory and an idle stream (everything recorded on it, waits included, has
    // completed): nothing ordered before this copy can still touch `dst`, so write it
    // directly. The lock keeps later work of this stream from being recorded in between.
    std::lock_guard<std::mutex> lock(impl_->mutex);
    if (!impl_->dirty && impl_->completed() >= impl_->submitted) {
      std::memcpy(dst.host_pointer, src, bytes);
      return;
    }
  }
  if (bytes <= kSmallStaging) {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    auto [chunk, offset] = impl_->ring_alloc(impl_->staging, bytes, 16);
    std::memcpy(static_cast<char*>(chunk->mapped) + offset, src, bytes);
    // The staging source is written by the host only (visible at the submit).
    AccessSet accesses;
    accesses.write(dst_address, bytes);
    impl_->copy_buffers(chunk->buffer, offset, dst.buffer, dst.offset, bytes, &accesses);
    return;
  }
  // Large upload: a pinned block of its own, returned to the host cache once the copy ran.
  // Past kLargeStagingPiece the upload goes in pieces through one reused block, each piece
  // waited for before the block is refilled: pinned memory stays bounded (a tensor larger
  // than one allocation cannot be staged in one block at all).
  if (bytes > kLargeStagingPiece) {
    void* tmp = host.allocate(kLargeStagingPiece);
    ResolvedAddress t = host.resolve(tmp);
    try {
      for (uint64_t done = 0; done < bytes; done += kLargeStagingPiece) {
        const uint64_t piece = std::min(kLargeStagingPiece, bytes - done);
        std::memcpy(tmp, static_cast<const char*>(src) + done, piece);
        {
          std::lock_guard<std::mutex> lock(impl_->mutex);
          AccessSet accesses;
          accesses.write(dst_address + done, piece);
          impl_->copy_buffers(t.buffer, t.offset, dst.buffer, dst.offset + done, piece, &accesses);
        }
        wait_for_point(flush());
      }
    } catch (...) {
      host.free(tmp);
      throw;
    }
    host.free(tmp);
    return;
  }
  void* tmp = host.allocate(bytes);
  std::memcpy(tmp, src, bytes);
  ResolvedAddress t = host.resolve(tmp);
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    AccessSet accesses;
    accesses.write(dst_address, bytes);
    impl_->copy_buffers(t.buffer, t.offset, dst.buffer, dst.offset, bytes, &accesses);
  }
  host.record_stream(tmp, id_);
  host.free(tmp);
}

void Stream::copy_to_host(uint64_t src_address, void* dst, uint64_t bytes) {
  if (bytes == 0) return;
  forbid_while_capturing("copy_to_host (a device-to-host copy such as .cpu() or .item())");
  ResolvedAddress src = device_.allocator().resolve(src_address);
  TVK_CHECK(bytes <= src.bytes_to_end, "copy of ", bytes, " bytes runs past the end of its allocation");
  if (src.host_pointer) {
    // Unified memory: wait for the stream, then read the mapping directly.
    wait_for_point(flush());
    std::memcpy(dst, src.host_pointer, bytes);
    return;
  }
  HostAllocator& host = device_.host_allocator();
  if (host.is_pinned(dst) && host.resolve(dst).bytes_to_end >= bytes) {
    copy_to_pinned_host(src_address, dst, bytes);
    wait_for_point(flush());
    return;
  }
  // Staged through pinned memory, in pieces of at most kLargeStagingPiece (one reused block).
  const uint64_t block = std::min(bytes, kLargeStagingPiece);
  void* tmp = host.allocate(block);
  ResolvedAddress t = host.resolve(tmp);
  try {
    for (uint64_t done = 0; done < bytes; done += block) {
      const uint64_t piece = std::min(block, bytes - done);
      {
        std::lock_guard<std::mutex> lock(impl_->mutex);
        impl_->copy_buffers(src.buffer, src.offset + done, t.buffer, t.offset, piece, nullptr);
      }
      wait_for_point(flush());
      std::memcpy(static_cast<char*>(dst) + done, tmp, piece);
    }
  } catch (...) {
    host.free(tmp);
    throw;
  }
  host.free(tmp);  // the copies completed: no record_stream needed
}

void Stream::copy_to_pinned_host(uint64_t src_address, void* dst_pinned, uint64_t bytes) {
  if (bytes == 0) return;
  forbid_while_capturing("copy_to_pinned_host (a device-to-host copy)");
  ResolvedAddress src = device_.allocator().resolve(src_address);
  HostAllocator& host = device_.host_allocator();
  ResolvedAddress dst = host.resolve(dst_pinned);
  TVK_CHECK(bytes <= src.bytes_to_end && bytes <= dst.bytes_to_end, "copy of ", bytes,
            " bytes runs past the end of its allocation");
  host.record_stream(dst_pinned, id_);
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->copy_buffers(src.buffer, src.offset, dst.buffer, dst.offset, bytes, nullptr);
}

uint64_t Stream::flush() {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->submit();
  return impl_->submitted;
}

uint64_t Stream::current_point() {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->submitted + (impl_->dirty ? 1 : 0);
}

void Stream::synchronize() { wait_for_point(flush()); }

bool Stream::query() {
  uint64_t point = flush();
  return completed_point() >= point;
}

void Stream::wait_for_point(uint64_t value) {
  forbid_while_capturing("synchronize (a host wait on the capturing stream)");
  // host_waits counts the waits the program asks for beyond the point it already waited
  // for, whether or not the device happened to be done: a property of the program (tests
  // assert it), not of the device's speed. The profiler shows those waits the same way (as
  // CUDA's shows every synchronize), and any other wait that blocks.
  bool counted = false;
  for (uint64_t seen = impl_->waited_through.load(std::memory_order_relaxed); value > seen;) {
    if (impl_->waited_through.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
      impl_->counters.host_waits.fetch_add(1, std::memory_order_relaxed);
      counted = true;
      break;
    }
  }
  const bool profiled = profiler::active();
  profiler::CommandRecord wait;
  if (profiled) wait = impl_->new_record(profiler::CommandKind::HostWait);
  auto record_wait = [&] {
    Impl::Profiled p{VK_NULL_HANDLE, 0, VK_NULL_HANDLE, std::move(wait)};
    p.record.name = "vkWaitSemaphores";
    p.record.start_ns = p.record.launch_ns;
    p.record.end_ns = profiler::host_now_ns();
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->profiled.push_back(std::move(p));
  };
  auto done = [&] {
    if (profiled && counted) record_wait();
    check_device_errors();
  };
  if (completed_point() >= value) return done();
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    if (value > impl_->submitted) impl_->submit();
    TVK_CHECK(value <= impl_->submitted, "wait for timeline value ", value,
              " beyond the last recorded work (", impl_->submitted, ") of stream ", id_);
  }
  // The work may have completed since the first check (submit above): its errors count too.
  if (completed_point() >= value) return done();
  VkSemaphoreWaitInfo wi{VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO};
  wi.semaphoreCount = 1;
  wi.pSemaphores = &timeline_;
  wi.pValues = &value;
  TVK_VK_CHECK_DEV(vk::vkWaitSemaphores(device_.handle(), &wi, UINT64_MAX), device_.index());
  if (profiled) record_wait();
  check_device_errors();
}

uint64_t Stream::device_error_address() {
  Impl& s = *impl_;
  if (s.error_record.load(std::memory_order_acquire)) return s.error_buffer.address;
  std::lock_guard<std::mutex> lock(s.error_mutex);
  if (!s.error_record.load(std::memory_order_relaxed)) {
    // Host-visible so that the host reads it without a copy (it is touched only on errors).
    TVK_VK_CHECK_DEV(create_raw_buffer(device_, 256, device_.host_memory_type(), &s.error_buffer),
                     device_.index());
    TVK_CHECK(s.error_buffer.mapped != nullptr, "the device error record is not host-mappable");
    std::memset(s.error_buffer.mapped, 0, sizeof(DeviceErrorRecord));
    s.error_record.store(static_cast<DeviceErrorRecord*>(s.error_buffer.mapped),
                         std::memory_order_release);
  }
  return s.error_buffer.address;
}

void Stream::check_device_errors() {
  DeviceErrorRecord* r = impl_->error_record.load(std::memory_order_acquire);
  if (!r) return;
  std::atomic_ref<uint32_t> state(r->state);
  if (state.load(std::memory_order_acquire) != 2u) return;  // empty, or still being written
  const DeviceErrorRecord copy = *r;
  uint32_t expected = 2u;
  // Reset before throwing: a later error (from work after this point) is reported at the next
  // wait. A kernel running now may claim the record as soon as it is reset.
  if (!state.compare_exchange_strong(expected, 0u, std::memory_order_acq_rel)) return;
  throw_device_error(copy);
}

void throw_device_error(const DeviceErrorRecord& r) {
  const std::string bounds = detail::concat("index ", r.index, " is out of bounds for dimension ",
                                            r.dim, " with size ", r.size);
  switch (static_cast<DeviceErrorCode>(r.code)) {
    case DeviceErrorCode::IndexOutOfBounds:
      throw IndexError(bounds);
    case DeviceErrorCode::ScatterGatherOutOfBounds:
      throw DeviceAssertError(bounds);
    case DeviceErrorCode::IndexOutOfRangeInSelf:
      throw IndexError("index out of range in self");
    case DeviceErrorCode::IndexCopyOutOfBounds:
      throw IndexError("index_copy_(): " + bounds);
    case DeviceErrorCode::TakeOutOfRange:
      throw IndexError(detail::concat("out of range: tried to access index ", r.index,
                                      " on a tensor of ", r.size, " elements."));
    case DeviceErrorCode::MaskedScatterSourceTooSmall:
      throw DeviceAssertError("Number of elements of source < number of ones in mask");
    case DeviceErrorCode::TargetOutOfBounds:
      throw IndexError(detail::concat("Target ", r.index, " is out of bounds."));
    case DeviceErrorCode::BceInputOutOfRange:
      throw DeviceAssertError("all elements of input should be between 0 and 1");
    case DeviceErrorCode::BceTargetOutOfRange:
      throw DeviceAssertError("all elements of target should be between 0 and 1");
    case DeviceErrorCode::BernoulliProbabilityOutOfRange:
      throw DeviceAssertError(
          "Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error message "
          "be improved?  If so, please report an enhancement request to PyTorch.)");
    case DeviceErrorCode::MaxUnpool2dInvalidIndex:
      throw DeviceAssertError(detail::concat("Found an invalid max index: ", r.index,
                                             " (output volumes are of size ", r.dim, "x", r.size,
                                             ")"));
    case DeviceErrorCode::MaxUnpool3dInvalidIndex:
      throw DeviceAssertError(detail::concat(
          "Found an invalid max index: ", r.index, " (output volumes are of size ", r.dim, "x",
          static_cast<uint64_t>(r.size) >> 32, "x", static_cast<uint64_t>(r.size) & 0xffffffffu,
          ")"));
    case DeviceErrorCode::EmbeddingBagIndexOutOfRange:
      throw DeviceAssertError(detail::concat("Index ", r.dim, " of input takes value ", r.index,
                                             " which is not in the valid range [0, ", r.size,
                                             ")"));
    case DeviceErrorCode::EmbeddingBagMaxIndexOutOfRange:
      throw DeviceAssertError(detail::concat(
          "embedding_bag: Expected idx >= 0 && idx < num_embeddings but found idx to be ",
          r.index));
    case DeviceErrorCode::EmbeddingBagFirstOffsetNotZero:
      throw DeviceAssertError(detail::concat(
          "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from "
          "position 0. However, got ",
          r.index));
    case DeviceErrorCode::MultiMarginTargetOutOfRange:
      throw DeviceAssertError("target out of range");
    case DeviceErrorCode::MultilabelMarginTargetOutOfRange:
      throw DeviceAssertError("argument #2 'target' is out of range");
    default:
      throw DeviceAssertError(detail::concat("torch-vk: a kernel reported device error code ",
                                             r.code, " (index ", r.index, ", size ", r.size,
                                             ", dim ", r.dim, ")"));
  }
}

uint64_t Stream::completed_point() { return impl_->completed(); }

void Stream::wait_for_stream_point(Stream& other, uint64_t value) {
  if (&other == this || value == 0) return;
  forbid_while_capturing("waiting on an event of another stream");
  if (other.completed_point() >= value) return;
  {
    // The signal must be submitted before anything waits for it.
    std::lock_guard<std::mutex> lock(other.impl_->mutex);
    if (value > other.impl_->submitted) other.impl_->submit();
    TVK_CHECK(value <= other.impl_->submitted, "wait for timeline value ", value,
              " beyond the last recorded work of stream ", other.id_);
  }
  std::lock_guard<std::mutex> lock(impl_->mutex);
  for (size_t i = 0; i < impl_->wait_semaphores.size(); ++i) {
    if (impl_->wait_semaphores[i] == other.timeline_) {
      impl_->wait_values[i] = std::max(impl_->wait_values[i], value);
      impl_->dirty = true;
      return;
    }
  }
  impl_->wait_semaphores.push_back(other.timeline_);
  impl_->wait_values.push_back(value);
  impl_->dirty = true;  // the wait orders everything recorded after it: it must be submitted
}

uint32_t Stream::write_timestamp() {
  Impl& s = *impl_;
  forbid_while_capturing("recording a timing event (a device timestamp)");
  if (!s.query_pool) return UINT32_MAX;
  std::lock_guard<std::mutex> lock(s.mutex);
  s.begin();
  s.emit_deferred();
  const uint32_t slot = s.next_query;
  s.next_query = (s.next_query + 1) % kQuerySlots;  // a slot is reused after kQuerySlots events
  vk::vkCmdResetQueryPool(s.cb, s.query_pool, slot, 1);
  vk::vkCmdWriteTimestamp(s.cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, s.query_pool, slot);
  s.dirty = true;
  return slot;
}

void Stream::take_profile(std::vector<profiler::CommandRecord>& out, int64_t offset_ns) {
  Impl& s = *impl_;
  std::lock_guard<std::mutex> lock(s.mutex);
  const double period = device_.caps().timestamp_period_ns;
  bool all_read = true;
  for (Impl::Profiled& p : s.profiled) {
    if (p.pool) {
      uint64_t ticks[2] = {0, 0};
      // No WAIT bit: a command whose results are not there (recorded after the caller's
      // synchronize) is dropped rather than waited for under the stream's lock.
      VkResult r = vk::vkGetQueryPoolResults(device_.handle(), p.pool, p.slot, 2, sizeof(ticks),
                                             ticks, sizeof(uint64_t), VK_QUERY_RESULT_64_BIT);
      if (r != VK_SUCCESS) {
        all_read = false;
        continue;
      }
      p.record.start_ns = static_cast<int64_t>(static_cast<double>(ticks[0]) * period) + offset_ns;
      p.record.end_ns = static_cast<int64_t>(static_cast<double>(ticks[1]) * period) + offset_ns;
      if (p.record.kind == profiler::CommandKind::Kernel)
        p.record.name = device_.pipelines().name_of(p.pipeline);
      else if (p.record.kind == profiler::CommandKind::Copy)
        p.record.name = "vkCmdCopyBuffer";
      else
        p.record.name = "vkCmdFillBuffer";
    }
    out.push_back(std::move(p.record));
  }
  s.profiled.clear();
  if (all_read) {
    s.profile_pool = 0;
    s.profile_slot = 0;
  }
}

double Stream::read_timestamp_ns(uint32_t slot) {
  Impl& s = *impl_;
  TVK_CHECK(s.query_pool && slot < kQuerySlots, "vk:", device_.index(),
            " has no device timestamps (or invalid slot)");
  uint64_t ticks = 0;
  VkResult r = vk::vkGetQueryPoolResults(device_.handle(), s.query_pool, slot, 1, sizeof(ticks),
                                         &ticks, sizeof(ticks), VK_QUERY_RESULT_64_BIT);
  TVK_CHECK(r == VK_SUCCESS, "timestamp not available yet (", vk_result_name(r), ")");
  return static_cast<double>(ticks) * device_.caps().timestamp_period_ns;
}

// ---------------------------------------------------------------------------------------------
// Graph capture

void Stream::forbid_while_capturing(const char* what) {
  Impl& s = *impl_;
  if (!s.capture.load(std::memory_order_acquire)) return;
  const std::string message =
      detail::concat("torch-vk: ", what, " is not allowed while a graph is being captured");
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (CapturedGraph* g = s.capture.load(std::memory_order_relaxed)) g->invalidate(message);
  }
  throw std::runtime_error(message);
}

void Stream::begin_capture(CapturedGraph& graph) {
  Impl& s = *impl_;
  std::lock_guard<std::mutex> capture_lock(s.capture_mutex);
  if (graph.state_ != CapturedGraph::State::Empty)
    throw std::logic_error("torch-vk: a CapturedGraph is captured only once (create a new one)");
  if (s.capture.load())
    throw std::logic_error(detail::concat("torch-vk: stream ", id_, " of vk:", device_.index(),
                                          " is already capturing a graph"));
  Allocator& alloc = device_.allocator();
  const uint64_t pool = alloc.create_graph_pool();
  try {
    alloc.begin_graph_capture(id_, pool);
  } catch (...) {
    alloc.release_graph_pool(pool);
    throw;
  }
  std::lock_guard<std::mutex> lock(s.mutex);
  graph.start(*this, pool);
  s.capture.store(&graph, std::memory_order_release);
}

void Stream::end_capture() {
  Impl& s = *impl_;
  std::lock_guard<std::mutex> capture_lock(s.capture_mutex);
  CapturedGraph* g = s.capture.load();
  if (!g) return;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.capture.store(nullptr, std::memory_order_release);
    g->finish(s.submitted + (s.dirty ? 1 : 0));
  }
  device_.allocator().end_graph_capture(id_);
}

bool Stream::capturing() const { return impl_->capture.load(std::memory_order_acquire) != nullptr; }

CapturedGraph* Stream::capture_graph() const { return impl_->capture.load(std::memory_order_acquire); }

uint64_t Stream::record_graph(CapturedGraph& graph) {
  Impl& s = *impl_;
  std::lock_guard<std::mutex> lock(s.mutex);
  const std::vector<GraphCommand>& commands = graph.commands();
  if (!commands.empty()) {
    if (graph.commands_buffer_ == VK_NULL_HANDLE)
      graph.commands_buffer_ = s.record_secondary(commands);
    s.pre_command(unknown_accesses());
    vk::vkCmdExecuteCommands(s.cb, 1, &graph.commands_buffer_);
    s.bound = VK_NULL_HANDLE;  // the primary's bound state is undefined after the secondary
    s.cb_has_commands = true;
    s.dirty = true;
    s.commands_in_batch += static_cast<uint32_t>(commands.size());
    if (s.commands_in_batch >= s.batch_limit) s.submit();
  }
  uint64_t dispatches = 0, transfers = 0;
  for (const GraphCommand& c : commands) {
    if (!c.replayed) continue;
    (c.kind == GraphCommand::Kind::Dispatch ? dispatches : transfers) += 1;
  }
  s.counters.dispatches.fetch_add(dispatches, std::memory_order_relaxed);
  s.counters.transfers.fetch_add(transfers, std::memory_order_relaxed);
  return s.submitted + (s.dirty ? 1 : 0);
}

void Stream::release_after(const RawBuffer& buffer, uint64_t point) {
  Impl& s = *impl_;
  std::lock_guard<std::mutex> lock(s.mutex);
  s.deferred_release.emplace_back(point, buffer);
  s.release_deferred(s.completed());
}

void Stream::release_command_buffer_after(VkCommandBuffer buffer, uint64_t point) {
  Impl& s = *impl_;
  std::lock_guard<std::mutex> lock(s.mutex);
  s.deferred_secondaries.emplace_back(point, buffer);
  s.release_secondaries(s.completed());
}

// ---------------------------------------------------------------------------------------------
// Event

void Event::record(Stream& stream) {
  if (timing_) timestamp_slot_ = stream.write_timestamp();
  point_ = stream.current_point();
  stream_ = &stream;
}

void Event::block(Stream& stream) const {
  if (!stream_) return;
  stream.wait_for_stream_point(*stream_, point_);
}

bool Event::query() const {
  if (!stream_) return true;
  if (stream_->completed_point() >= point_) return true;
  return stream_->query() || stream_->completed_point() >= point_;
}

void Event::synchronize() const {
  if (stream_) stream_->wait_for_point(point_);
}

double Event::elapsed_ms(const Event& end) const {
  TVK_CHECK(timing_ && end.timing_, "elapsed_ms needs both events created with enable_timing");
  TVK_CHECK(stream_ && end.stream_, "elapsed_ms needs both events recorded");
  TVK_CHECK(timestamp_slot_ != UINT32_MAX && end.timestamp_slot_ != UINT32_MAX,
            "the device has no timestamp support");
  synchronize();
  end.synchronize();
  const double start_ns = stream_->read_timestamp_ns(timestamp_slot_);
  const double end_ns = end.stream_->read_timestamp_ns(end.timestamp_slot_);
  return (end_ns - start_ns) / 1e6;
}

}  // namespace tvk
