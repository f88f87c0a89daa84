// L1: streams. A stream records commands into a command buffer and submits them in batches;
// completion is tracked with one timeline semaphore per stream. The host waits only in
// synchronize(), copy_to_host() and Event::synchronize().
//
// Ordering contract: within a stream every command sees the writes of all earlier commands.
// Commands of different streams are unordered unless joined with Stream::wait(Event).
//
// Barriers (hazard tracking): a command may declare the device memory it reads and writes
// (an AccessSet). A compute+transfer memory barrier is recorded before a command only when it
// conflicts with a command recorded since the last barrier: it reads or writes bytes one of
// them wrote, or writes bytes one of them read. Independent commands (the per-parameter
// updates of an optimizer step, the two GEMMs of a linear layer's backward) then run without
// draining the pipeline between them. A command without a declaration (or whose declaration
// overflowed) is ordered against everything, before and after it: the in-order fallback.
// TORCH_VK_BARRIERS=all records a barrier between every two commands; =reverse (a test mode)
// records every barrier-free group of commands in reverse order, so that a declaration that
// misses an access changes results even on a device that runs commands one after another.
// Consecutive command buffers of a stream are ordered by a wait on the stream's own timeline.
//
// Batching: the recording command buffer is submitted after TORCH_VK_SUBMIT_BATCH commands
// (default 64) and at every sync point. Submission never waits for earlier submissions.
//
// Thread safety: every public method may be called from any thread (PyTorch's autograd engine
// runs backward on its own thread); a per-stream mutex serializes recording.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "runtime/profiler.h"
#include "runtime/vulkan_api.h"

namespace tvk {

class Device;
class CapturedGraph;
struct RawBuffer;

// Largest push-constant block any kernel may use (the Vulkan minimum guarantee).
constexpr uint32_t kMaxPushConstantBytes = 128;
// Storage texel buffers a dispatch may bind (descriptor set 0, bindings 0 .. n-1, pushed with
// VK_KHR_push_descriptor; only on devices with DeviceCapabilities::texel_buffers).
constexpr uint32_t kMaxTexelBindings = 8;

// A byte range of device memory that one command reads or writes.
struct MemoryRange {
  uint64_t begin = 0;  // device address of the first byte
  uint64_t end = 0;    // one past the last byte
  bool write = false;
};

// The device memory one command reads and writes (see "Barriers" above). Ranges are device
// addresses from the allocator; address 0 or an empty range adds nothing. Past kCapacity
// ranges a new range widens the closest one of its kind (a superset, which is always safe).
class AccessSet {
 public:
  static constexpr int kCapacity = 12;
  AccessSet& read(uint64_t address, uint64_t bytes) { return add(address, bytes, false); }
  AccessSet& write(uint64_t address, uint64_t bytes) { return add(address, bytes, true); }
  // The command may touch any memory.
  AccessSet& everything() {
    known_ = false;
    return *this;
  }
  bool known() const { return known_; }
  int size() const { return count_; }
  const MemoryRange& operator[](int i) const { return ranges_[i]; }

 private:
  AccessSet& add(uint64_t address, uint64_t bytes, bool write);
  MemoryRange ranges_[kCapacity];
  int count_ = 0;
  bool known_ = true;
};

enum class BarrierMode : int { Tracked = 0, All = 1, Reverse = 2 };
// Process-wide; the default comes from TORCH_VK_BARRIERS (tracked | all | reverse). Streams
// read it at every command; commands already recorded keep their barriers.
BarrierMode barrier_mode();
void set_barrier_mode(BarrierMode mode);

class Stream {
 public:
  Stream(Device& device, uint32_t id, int priority);
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  Device& device() { return device_; }
  uint32_t id() const { return id_; }
  int priority() const { return priority_; }

  // --- recording (asynchronous) ---
  // Records a compute dispatch of `pipeline` (created by PipelineCache, shared layout) with
  // `push_size` <= kMaxPushConstantBytes bytes of push constants and, when `view_count` > 0,
  // the storage texel buffers `views[i]` at binding i of set 0 (view_count <=
  // kMaxTexelBindings; views from Allocator::texel_view, whose segments outlive the command).
  // `accesses`: every byte of device memory the dispatch may read or write (texel views and
  // scratch memory included; the parameter ring and the error record excepted), or null for
  // "any memory" (see "Barriers" above). A missing range is a data race on real GPUs.
  void dispatch(VkPipeline pipeline, uint32_t groups_x, uint32_t groups_y, uint32_t groups_z,
                const void* push, uint32_t push_size, const VkBufferView* views = nullptr,
                uint32_t view_count = 0, const AccessSet* accesses = nullptr);
  // Copies `size` bytes of kernel parameters into host-visible ring memory and returns its
  // device address. The memory stays valid until every command recorded on this stream up to
  // the next submit has completed. Aligned to 16 bytes.
  uint64_t upload_params(const void* data, uint64_t size);
  // Device-to-device copy between two allocator addresses (any alignment).
  void copy(uint64_t src_address, uint64_t dst_address, uint64_t bytes);
  // Fills `bytes` bytes at `dst_address` with a repeated 32-bit pattern. Address and size must
  // be multiples of 4 (vkCmdFillBuffer); callers use a kernel otherwise.
  void fill(uint64_t dst_address, uint64_t bytes, uint32_t pattern);
  // Host-to-device copy. Asynchronous: the data is first copied into staging memory (on
  // unified memory with an idle stream: straight into the destination), or, when
  // `src` is pinned host memory of this device, copied by the device straight from it), so the
  // caller may reuse `src` as soon as this returns, except for pinned sources, which must stay
  // alive until the stream passes this point (HostAllocator::record_stream does that).
  void copy_from_host(const void* src, uint64_t dst_address, uint64_t bytes);
  // Device-to-host copy. Blocking: flushes, waits for the data, then copies it to `dst`.
  void copy_to_host(uint64_t src_address, void* dst, uint64_t bytes);
  // Device-to-pinned-host copy, asynchronous (dst must be pinned memory of this device).
  void copy_to_pinned_host(uint64_t src_address, void* dst_pinned, uint64_t bytes);

  // --- synchronization ---
  // Submits what has been recorded. Returns the timeline value that is reached when all work
  // recorded so far has completed.
  uint64_t flush();
  // The value flush() would return, without submitting (the point of "now" in this stream).
  uint64_t current_point();
  // Flushes and blocks the host until all work recorded so far has completed.
  void synchronize();
  // True when all work recorded so far has completed (flushes pending work first).
  bool query();
  // Blocks the host until the timeline reaches `value` (flushing first if needed).
  void wait_for_point(uint64_t value);
  // Highest completed timeline value (non-blocking).
  uint64_t completed_point();
  // Future work of this stream waits until `other` reaches `value` (on the device).
  void wait_for_stream_point(Stream& other, uint64_t value);

  // --- device-side errors (see DeviceErrorCode in runtime/error.h) ---
  // Device address of this stream's 32-byte error record (host-visible memory, created on
  // first use). Kernels receive it in their push constants and report bad indices with
  // tvk_report_index_error() (shaders/common.glsl); the first report wins. Every host wait on
  // the stream (wait_for_point, hence synchronize, copy_to_host, Event::synchronize,
  // Device::synchronize) then throws tvk::IndexError / tvk::DeviceAssertError and resets the
  // record, so the next error is reported at the next wait. Nothing else waits for errors:
  // the kernels that report skip the bad access and go on (no out-of-bounds read or write).
  uint64_t device_error_address();
  // Throws (and clears) a complete error record, if any; no wait. wait_for_point calls it.
  void check_device_errors();

  VkSemaphore timeline() const { return timeline_; }

  // Profiling (runtime/profiler.h): appends the records of the commands profiled so far to
  // `out` and forgets them; `offset_ns` maps device timestamps (in ns) to the host clock. The
  // commands must have completed (Device::collect_profile synchronizes first).
  void take_profile(std::vector<profiler::CommandRecord>& out, int64_t offset_ns);

  // --- graph capture (semantics in runtime/graph.h) ---
  // Starts capturing into `graph` (which must be new): until end_capture(), every command
  // recorded on this stream also goes into the graph, and the allocator serves this stream's
  // allocations from the graph's private pool. Throws std::logic_error when this stream already
  // captures or the graph was captured before.
  void begin_capture(CapturedGraph& graph);
  // Ends the capture (a no-op when not capturing). Always call it, also after an error.
  void end_capture();
  bool capturing() const;
  // The graph being captured, or null.
  CapturedGraph* capture_graph() const;
  // Records the commands of `graph` (used by CapturedGraph::replay, which checks the stream):
  // one vkCmdExecuteCommands of the graph's secondary command buffer, recorded from the captured
  // commands on the first call. Returns the point that is reached when they completed.
  uint64_t record_graph(CapturedGraph& graph);
  // Destroys `buffer` once the timeline reached `point` (graph memory outliving its graph).
  void release_after(const RawBuffer& buffer, uint64_t point);
  // Frees `buffer` (a secondary command buffer of this stream's pool) once the timeline
  // reached `point`.
  void release_command_buffer_after(VkCommandBuffer buffer, uint64_t point);

  // Timestamp support for events: writes a timestamp after all prior work and returns the
  // query slot; read it with read_timestamp_ns() after the slot's point completed.
  uint32_t write_timestamp();
  double read_timestamp_ns(uint32_t slot);

 private:
  // Marks the graph being captured invalid and throws, when this stream captures.
  void forbid_while_capturing(const char* what);

  struct Impl;
  Device& device_;
  uint32_t id_;
  int priority_;
  VkSemaphore timeline_ = VK_NULL_HANDLE;
  std::unique_ptr<Impl> impl_;
};

// A point in a stream (c10 Event). Recording captures the stream's current point; timing
// events also write a device timestamp.
class Event {
 public:
  explicit Event(bool enable_timing = false) : timing_(enable_timing) {}
  void record(Stream& stream);
  bool recorded() const { return stream_ != nullptr; }
  // Makes `stream` wait on the device until this event completed (no host wait).
  void block(Stream& stream) const;
  bool query() const;
  void synchronize() const;
  // Milliseconds between this event and `end` (both recorded with timing enabled).
  double elapsed_ms(const Event& end) const;
  Stream* stream() const { return stream_; }
  uint64_t point() const { return point_; }

 private:
  bool timing_;
  Stream* stream_ = nullptr;
  uint64_t point_ = 0;
  uint32_t timestamp_slot_ = 0;
};

}  // namespace tvk
