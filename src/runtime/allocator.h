// L1: caching device-memory allocator and the host (pinned) allocator.
//
// Device memory is reserved in segments: one VkDeviceMemory with one VkBuffer bound over all
// of it (usage STORAGE | TRANSFER_SRC | TRANSFER_DST | SHADER_DEVICE_ADDRESS). A block handed
// out is a byte range of a segment and is identified by its *device address*
// (vkGetBufferDeviceAddress of the segment buffer + offset). That address is what
// Tensor.data_ptr() returns: PyTorch's pointer arithmetic on it stays valid, kernels read it
// through GL_EXT_buffer_reference, and resolve() maps any address inside a block back to
// (VkBuffer, offset) for transfer commands.
//
// Pools (like CUDA's caching allocator):
//   every request is rounded up to a multiple of 512 B;
//   small requests (<= 1 MiB) are carved from 2 MiB segments;
//   large requests (<= 10 MiB) from 20 MiB segments, larger ones from a segment of their own
//   rounded up to 2 MiB;
//   a small request with no free small block takes a free large-pool block before a new
//   segment is reserved (so a freed big block serves the small tensors that follow).
// Free blocks are split and coalesced with free neighbours. A block freed on a stream can be
// reused at once by work on the same stream (stream order makes that safe); a block used by
// other streams (record_stream) is reused only once those streams passed the point recorded
// at free time.
//
// Graph pools (runtime/graph.h): while stream S captures into a graph, allocate(_, S) serves
// blocks from the graph's private pool: segments (sized like the ones above) that only hold
// blocks of that pool, found and split and coalesced like the others but kept in free lists of
// their own, so that no allocation outside the graph's capture gets them, also after the
// capture ended. Blocks allocated before the capture and freed on S during it are held (not
// reusable) until the pool is released, since the captured commands may still use them.
// release_graph_pool() turns the pool's segments into ordinary cached segments of stream S
// (blocks still allocated are then freed to the general cache) and frees the held blocks.
// Pool memory counts in the statistics like any other; empty_cache() and the out-of-memory
// path never release a live pool's segments (captured commands reference them).
//
// Texel views (texel_view): a segment's VkBufferViews, one per TexelFormat, created on first
// use over the segment's first min(size, maxTexelBufferElements texels) bytes and destroyed
// with the segment. A segment whose view was requested for a stream that captures a graph is
// kept (empty_cache and the out-of-memory path skip it) until that graph's pool is released,
// so the views baked into the captured commands stay valid for every replay.
//
// Out of memory: on VK_ERROR_OUT_OF_DEVICE_MEMORY (or a request larger than the heap or than
// maxMemoryAllocationSize) the allocator synchronizes, releases every cached segment, retries
// once, then throws OutOfMemoryError with a summary. The allocator stays usable afterwards.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "runtime/vulkan_api.h"

namespace tvk {

class Device;

// One statistic, as in c10::CachingDeviceAllocator::Stat.
struct MemoryStat {
  int64_t current = 0;
  int64_t peak = 0;
  int64_t allocated = 0;  // accumulated increases
  int64_t freed = 0;      // accumulated decreases
  void increase(int64_t amount);
  void decrease(int64_t amount);
};

// Per-device statistics. Pool index: 0 = all, 1 = small pool, 2 = large pool.
struct MemoryStats {
  MemoryStat allocated_bytes[3];   // bytes in blocks handed out (rounded block sizes)
  MemoryStat reserved_bytes[3];    // bytes in segments
  MemoryStat active_bytes[3];      // allocated + freed-but-not-yet-reusable
  MemoryStat requested_bytes[3];   // bytes the callers asked for (unrounded)
  MemoryStat allocation[3];        // number of blocks handed out
  MemoryStat segment[3];           // number of segments
  MemoryStat inactive_split_bytes[3];  // free bytes inside segments that also hold used blocks
  int64_t num_alloc_retries = 0;   // times the cache was released to satisfy a request
  int64_t num_ooms = 0;            // OutOfMemoryError thrown
  int64_t num_device_alloc = 0;    // vkAllocateMemory calls
  int64_t num_device_free = 0;     // vkFreeMemory calls
};

// Where a device address lives.
struct ResolvedAddress {
  VkBuffer buffer = VK_NULL_HANDLE;
  uint64_t offset = 0;          // byte offset of the address inside `buffer`
  uint64_t bytes_to_end = 0;    // bytes from the address to the end of its block
  void* host_pointer = nullptr; // mapped pointer of the address, or null when not host-visible
  uint64_t device_address = 0;  // buffer device address of the byte at `offset`
};

// Formats of the storage texel buffer views kernels read and write (Allocator::texel_view).
// The 16-bit ones need DeviceCapabilities::texel_16bit (float16 as R16 / RGBA16 SFLOAT,
// bfloat16 bits as R16 / RGBA16 UINT).
enum class TexelFormat : uint8_t {
  R32Float = 0,
  RGBA32Float = 1,
  R16Float = 2,
  RGBA16Float = 3,
  R16Uint = 4,
  RGBA16Uint = 5,
};
constexpr int kTexelFormatCount = 6;
uint32_t texel_bytes(TexelFormat format);

// Where a device address lies in a texel view of its segment.
struct TexelView {
  VkBufferView view = VK_NULL_HANDLE;
  int64_t first = 0;  // index of the texel that starts at the address
  int64_t count = 0;  // texels from `first` to the end of the view
};

// Allocator history (torch.vk.memory._record_memory_history / _snapshot). A context is
// whatever the caller gathered when it asked (a stack trace, in practice): opaque here, only
// kept with the block or trace entry it came with and handed back by snapshot(). Contexts may
// be released under the allocator's lock, so their destructors must not block on locks that
// a thread inside the allocator could hold (PyTorch's CapturedTraceback defers its Python
// decrefs for this reason).
using AllocationContext = std::shared_ptr<void>;

enum class TraceAction : uint8_t {
  Alloc,          // a block handed out
  FreeRequested,  // a block freed by its owner
  FreeCompleted,  // the block reusable (at once, or once the streams that used it passed)
  SegmentAlloc,   // a segment reserved from the device
  SegmentFree,    // a segment returned to the device
  Oom,            // a request that raised OutOfMemoryError (size: the request)
  Snapshot,       // snapshot() was taken
};

struct TraceEntry {
  TraceAction action = TraceAction::Alloc;
  uint64_t address = 0;
  uint64_t size = 0;
  uint32_t stream = 0;
  uint64_t graph_pool = 0;
  int64_t time_us = 0;       // microseconds since the Unix epoch
  uint64_t device_free = 0;  // Oom only: free bytes of the device heap
  AllocationContext context;
};

struct BlockInfo {
  enum class State : uint8_t { Allocated, PendingFree, Inactive };
  uint64_t address = 0;
  uint64_t size = 0;
  uint64_t requested = 0;  // 0 unless allocated
  State state = State::Inactive;
  AllocationContext context;  // of the allocation, while recorded and not freed
};

struct SegmentInfo {
  uint64_t address = 0;
  uint64_t total_size = 0;
  uint32_t stream = 0;
  bool large = false;
  uint64_t graph_pool = 0;
  uint64_t allocated_size = 0;  // bytes of allocated blocks
  uint64_t active_size = 0;     // allocated + pending free
  uint64_t requested_size = 0;
  std::vector<BlockInfo> blocks;  // by address, covering the whole segment
  AllocationContext context;      // of the request that reserved it, when recorded
};

struct HistorySettings {
  bool contexts = false;   // keep each live block's allocation context
  bool trace = false;      // record TraceEntries
  size_t max_entries = 0;  // trace length kept (oldest dropped first); 0 = unbounded
};

class Allocator {
 public:
  explicit Allocator(Device& device);
  ~Allocator();
  Allocator(const Allocator&) = delete;
  Allocator& operator=(const Allocator&) = delete;

  // Returns the device address of a block of at least `bytes` bytes, used on `stream_id`.
  // bytes == 0 returns 0. Throws OutOfMemoryError.
  // `context` is kept with the block (and its trace entries) while history is recorded.
  uint64_t allocate(uint64_t bytes, uint32_t stream_id = 0, AllocationContext context = {});
  // Returns a block (its exact address from allocate()) to the cache.
  void free(uint64_t address, AllocationContext context = {});

  // --- history (see TraceEntry) ---
  // Settings apply to what happens from now on; `clear` drops the recorded trace.
  void set_history(const HistorySettings& settings, bool clear);
  HistorySettings history() const;
  // Every segment with its blocks, and (when `trace` is not null) the recorded trace, oldest
  // first, ending with the Snapshot entry this call records.
  std::vector<SegmentInfo> snapshot(std::vector<TraceEntry>* trace);
  // Marks that `stream_id` uses the block containing `address` (c10 recordStream).
  void record_stream(uint64_t address, uint32_t stream_id);

  // Any address inside a live block; throws std::runtime_error for unknown addresses.
  ResolvedAddress resolve(uint64_t address) const;
  bool owns(uint64_t address) const;
  // Size of the block that starts at `address` (as handed out, rounded).
  uint64_t block_size(uint64_t address) const;

  // The texel view of `format` over the segment of `address`, used on `stream_id` (see above).
  // False when the device has no texel buffers (of that format), the address is not inside a
  // live block, is not aligned to the texel size, or lies past the view's end. Thread-safe.
  bool texel_view(uint64_t address, TexelFormat format, uint32_t stream_id, TexelView* out);

  // Synchronizes the device, then releases all cached (entirely free) segments.
  void empty_cache();

  MemoryStats stats() const;
  void reset_peak_stats();
  void reset_accumulated_stats();
  // A short human-readable summary (used in OOM messages and torch.vk.memory_summary()).
  std::string summary() const;

  // --- graph pools (see above; used by Stream::begin_capture / end_capture, CapturedGraph) ---
  // A new, empty pool; returns its id (never 0).
  uint64_t create_graph_pool();
  // Allocations on `stream_id` come from `pool` until end_graph_capture(stream_id). Throws
  // std::logic_error when the stream already captures.
  void begin_graph_capture(uint32_t stream_id, uint64_t pool);
  void end_graph_capture(uint32_t stream_id);
  // Returns the pool's memory to the allocator (see above). Unknown ids are ignored.
  void release_graph_pool(uint64_t pool);
  // Bytes of the segments of `pool`.
  uint64_t graph_pool_bytes(uint64_t pool) const;

  // Rounding rule applied to requests; exposed so tests can predict block sizes.
  static uint64_t round_size(uint64_t bytes);

 private:
  struct Segment;
  struct Block;
  struct Pool;
  Device& device_;
  mutable std::mutex mutex_;
  // Implementation state lives in allocator.cpp.
  struct State;
  std::unique_ptr<State> state_;
};

// Pinned host memory: HOST_VISIBLE | HOST_COHERENT Vulkan memory, mapped for the lifetime of
// the block, so that copies to and from it can be asynchronous device transfers. Cached by size.
class HostAllocator {
 public:
  explicit HostAllocator(Device& device);
  ~HostAllocator();
  HostAllocator(const HostAllocator&) = delete;
  HostAllocator& operator=(const HostAllocator&) = delete;

  // Returns a host pointer to at least `bytes` pinned bytes (nullptr for 0).
  void* allocate(uint64_t bytes);
  void free(void* host_pointer);
  // Keeps the block alive until `stream_id` passed its current point (for async copies).
  void record_stream(void* host_pointer, uint32_t stream_id);
  bool is_pinned(const void* host_pointer) const;
  // Buffer, offset and device address of a pinned host pointer (any pointer inside a block).
  ResolvedAddress resolve(const void* host_pointer) const;
  void empty_cache();
  uint64_t allocated_bytes() const;
  uint64_t reserved_bytes() const;

 private:
  Device& device_;
  mutable std::mutex mutex_;
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace tvk
