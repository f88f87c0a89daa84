// L1: the caching device allocator and the pinned host allocator (policy in allocator.h).
//
// Locking: Allocator::mutex_ may be held while calling into streams (current_point,
// completed_point, Device::synchronize); streams never call the allocator while holding their
// own lock (they resolve addresses before locking), so the order allocator -> stream is safe.
#include "runtime/allocator.h"

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <deque>

#include "runtime/device.h"
#include "runtime/error.h"
#include "runtime/raw_buffer.h"
#include "runtime/stream.h"

// Vulkan structs are written `T x{VK_STRUCTURE_TYPE_...}`: the other members are zero on purpose.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace tvk {

namespace {
constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kRound = 512;             // every request rounds up to this
constexpr uint64_t kSmallSize = 1 * kMiB;    // largest request served by the small pool
constexpr uint64_t kSmallBuffer = 2 * kMiB;  // segment size of the small pool
constexpr uint64_t kMinLargeAlloc = 10 * kMiB;
constexpr uint64_t kLargeBuffer = 20 * kMiB;  // segment size for requests in (1, 10] MiB
constexpr uint64_t kRoundLarge = 2 * kMiB;    // own segments round up to this

uint64_t round_up(uint64_t v, uint64_t m) { return (v + m - 1) / m * m; }

double mib(int64_t bytes) { return static_cast<double>(bytes) / kMiB; }

std::string format_summary(const MemoryStats& s, std::pair<uint64_t, uint64_t> info) {
  char buf[512];
  std::snprintf(buf, sizeof(buf),
                "%.2f MiB allocated (peak %.2f MiB) in %" PRId64 " blocks, %.2f MiB reserved in %" PRId64
                " segments (peak %.2f MiB), device heap %.2f MiB with %.2f MiB free",
                mib(s.allocated_bytes[0].current), mib(s.allocated_bytes[0].peak),
                s.allocation[0].current, mib(s.reserved_bytes[0].current), s.segment[0].current,
                mib(s.reserved_bytes[0].peak), mib(static_cast<int64_t>(info.second)),
                mib(static_cast<int64_t>(info.first)));
  return buf;
}
}  // namespace

void MemoryStat::increase(int64_t amount) {
  current += amount;
  peak = std::max(peak, current);
  allocated += amount;
}

void MemoryStat::decrease(int64_t amount) {
  current -= amount;
  freed += amount;
}

// ---------------------------------------------------------------------------------------------
// Allocator

struct Allocator::Segment {
  RawBuffer raw;
  int pool = 1;  // 1 = small, 2 = large (the stats index)
  uint64_t graph_pool = 0;  // the graph pool owning the segment, 0 for general memory
  // Texel views by TexelFormat (null until requested) and their length in texels.
  VkBufferView views[kTexelFormatCount] = {};
  int64_t view_texels[kTexelFormatCount] = {};
  int graph_view_pins = 0;  // graphs whose captured commands use the views (see allocator.h)
  AllocationContext context;  // of the request that reserved it (history only)
};

uint32_t texel_bytes(TexelFormat format) {
  switch (format) {
    case TexelFormat::R32Float: return 4;
    case TexelFormat::RGBA32Float: return 16;
    case TexelFormat::R16Float:
    case TexelFormat::R16Uint: return 2;
    case TexelFormat::RGBA16Float:
    case TexelFormat::RGBA16Uint: return 8;
  }
  return 4;
}

namespace {
VkFormat vk_format(TexelFormat format) {
  switch (format) {
    case TexelFormat::R32Float: return VK_FORMAT_R32_SFLOAT;
    case TexelFormat::RGBA32Float: return VK_FORMAT_R32G32B32A32_SFLOAT;
    case TexelFormat::R16Float: return VK_FORMAT_R16_SFLOAT;
    case TexelFormat::RGBA16Float: return VK_FORMAT_R16G16B16A16_SFLOAT;
    case TexelFormat::R16Uint: return VK_FORMAT_R16_UINT;
    case TexelFormat::RGBA16Uint: return VK_FORMAT_R16G16B16A16_UINT;
  }
  return VK_FORMAT_R32_SFLOAT;
}

void destroy_segment_memory(Device& device, RawBuffer& raw, VkBufferView* views) {
  for (int f = 0; f < kTexelFormatCount; ++f)
    if (views[f]) vk::vkDestroyBufferView(device.handle(), views[f], nullptr);
  destroy_raw_buffer(device, raw);
}
}  // namespace

struct Allocator::Block {
  Segment* segment = nullptr;
  uint64_t address = 0;
  uint64_t size = 0;
  uint64_t requested = 0;
  uint32_t stream = 0;
  uint64_t graph_pool = 0;  // that of its segment (part of the free-list key)
  bool allocated = false;
  bool pending = false;  // freed, waiting for other streams (record_stream)
  Block* prev = nullptr;  // neighbours inside the segment, by address
  Block* next = nullptr;
  std::vector<uint32_t> other_streams;
  AllocationContext context;  // of the allocation (history only), dropped when freed
  bool is_split() const { return prev != nullptr || next != nullptr; }
};

namespace {
// Best fit: ordered by (graph pool, stream, size, address). Blocks of a stream are only reused
// by the same stream, where stream order makes immediate reuse safe (as in c10's caching
// allocator); blocks of a graph pool only by that graph's capture.
struct BlockLess {
  template <typename B>
  bool operator()(const B* a, const B* b) const {
    if (a->graph_pool != b->graph_pool) return a->graph_pool < b->graph_pool;
    if (a->stream != b->stream) return a->stream < b->stream;
    if (a->size != b->size) return a->size < b->size;
    return a->address < b->address;
  }
};
}  // namespace

struct Allocator::Pool {
  std::set<Block*, BlockLess> free;
};

struct Allocator::State {
  Device& device;
  Pool pools[2];  // [0] small, [1] large
  std::map<uint64_t, Segment*> segments;  // by base address
  std::map<uint64_t, Block*> live;        // allocated blocks by address
  struct Pending {
    Block* block;
    std::vector<std::pair<uint32_t, uint64_t>> waits;  // (stream, point)
  };
  std::vector<Pending> pending;
  MemoryStats stats;
  // Graph pools.
  struct GraphPool {
    uint64_t reserved = 0;       // bytes of its segments
    std::vector<Block*> held;    // general blocks freed during its capture (see allocator.h)
    std::set<Segment*> view_pins;  // segments whose texel views its commands use
  };
  std::map<uint64_t, GraphPool> graph_pools;
  std::map<uint32_t, uint64_t> capturing;  // stream id -> pool its allocations come from
  uint64_t next_graph_pool = 1;
  // History (allocator.h: TraceEntry).
  HistorySettings history;
  std::deque<TraceEntry> trace;

  explicit State(Device& d) : device(d) {}

  void record(TraceAction action, uint64_t address, uint64_t size, uint32_t stream,
              uint64_t graph_pool, AllocationContext context = {}, uint64_t device_free = 0) {
    if (!history.trace) return;
    const int64_t now_us = std::chrono::duration_cast<std::chrono::microseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
    trace.push_back(TraceEntry{action, address, size, stream, graph_pool, now_us, device_free,
                               std::move(context)});
    if (history.max_entries && trace.size() > history.max_entries) trace.pop_front();
  }

  Pool& pool_of(int stat_pool) { return pools[stat_pool - 1]; }

  template <typename F>
  void for_pool(int stat_pool, F f) {
    f(0);
    f(stat_pool);
  }

  void insert_free(Block* b) {
    pool_of(b->segment->pool).free.insert(b);
    if (b->is_split()) for_pool(b->segment->pool, [&](int i) { stats.inactive_split_bytes[i].increase(b->size); });
  }
  void erase_free(Block* b) {
    pool_of(b->segment->pool).free.erase(b);
    if (b->is_split()) for_pool(b->segment->pool, [&](int i) { stats.inactive_split_bytes[i].decrease(b->size); });
  }

  Block* find_free(int stat_pool, uint64_t graph_pool, uint32_t stream, uint64_t size) {
    Block key;
    key.graph_pool = graph_pool;
    key.stream = stream;
    key.size = size;
    key.address = 0;
    auto& set = pool_of(stat_pool).free;
    auto it = set.lower_bound(&key);
    if (it == set.end() || (*it)->graph_pool != graph_pool || (*it)->stream != stream)
      return nullptr;
    return *it;
  }

  // The graph pool that allocations on `stream` come from (0: none).
  uint64_t capture_pool(uint32_t stream) const {
    if (capturing.empty()) return 0;
    auto it = capturing.find(stream);
    return it == capturing.end() ? 0 : it->second;
  }

  // Creates a segment of `size` bytes and returns its single free block (not yet in a set), or
  // null when the device is out of memory or the segment exceeds a device limit.
  Block* new_segment(uint64_t size, int stat_pool, uint32_t stream, uint64_t graph_pool,
                     const AllocationContext& context) {
    const DeviceCapabilities& c = device.caps();
    // Refuse up front what the device cannot allocate: drivers may accept it and the
    // validation layer reports it (VUID-vkAllocateMemory-pAllocateInfo-01713). A segment
    // larger than one allocation may be is a sparse buffer over several allocations where the
    // device binds sparse memory.
    const bool beyond_one_allocation =
        c.max_memory_allocation_size && size > c.max_memory_allocation_size;
    if ((beyond_one_allocation && !c.sparse_binding) ||
        (c.max_buffer_size && size > c.max_buffer_size) ||
        (c.device_local_heap_size && size > c.device_local_heap_size))
      return nullptr;
    auto* seg = new Segment();
    seg->pool = stat_pool;
    seg->graph_pool = graph_pool;
    // Segments are mapped only on unified memory (off with TORCH_VK_DISABLE_UNIFIED_MEMORY=1).
    VkResult r = beyond_one_allocation
                     ? create_sparse_raw_buffer(device, size, device.device_memory_type(),
                                                &seg->raw)
                     : create_raw_buffer(device, size, device.device_memory_type(), &seg->raw,
                                         c.unified_memory);
    if (r != VK_SUCCESS) {
      delete seg;
      if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY) return nullptr;
      throw_vk_error(r, "vkAllocateMemory/vkCreateBuffer", __FILE__, __LINE__, device.index());
    }
    stats.num_device_alloc++;
    for_pool(stat_pool, [&](int i) {
      stats.reserved_bytes[i].increase(static_cast<int64_t>(size));
      stats.segment[i].increase(1);
    });
    segments[seg->raw.address] = seg;
    if (graph_pool) graph_pools[graph_pool].reserved += size;
    if (history.contexts) seg->context = context;
    record(TraceAction::SegmentAlloc, seg->raw.address, size, stream, graph_pool, context);
    auto* b = new Block();
    b->segment = seg;
    b->address = seg->raw.address;
    b->size = size;
    b->stream = stream;
    b->graph_pool = graph_pool;
    return b;
  }

  // Returns a block that is no longer in use to its pool, merging free neighbours.
  void release_block(Block* b) {
    for_pool(b->segment->pool, [&](int i) { stats.active_bytes[i].decrease(b->size); });
    record(TraceAction::FreeCompleted, b->address, b->size, b->stream, b->graph_pool,
           std::move(b->context));
    b->context.reset();
    b->allocated = false;
    b->pending = false;
    b->other_streams.clear();
    if (b->prev && !b->prev->allocated && !b->prev->pending) {
      Block* p = b->prev;
      erase_free(p);
      p->size += b->size;
      p->next = b->next;
      if (b->next) b->next->prev = p;
      delete b;
      b = p;
    }
    if (b->next && !b->next->allocated && !b->next->pending) {
      Block* n = b->next;
      erase_free(n);
      b->size += n->size;
      b->next = n->next;
      if (n->next) n->next->prev = b;
      delete n;
    }
    insert_free(b);
  }

  // Returns a block that is no longer allocated: to its pool, or to the pending list while
  // other streams may still use it (until each of them passed the work recorded by now).
  void retire(Block* b) {
    if (!b->other_streams.empty()) {
      State::Pending p{b, {}};
      for (uint32_t s : b->other_streams) p.waits.emplace_back(s, device.stream(s).current_point());
      b->pending = true;
      pending.push_back(std::move(p));
    } else {
      release_block(b);
    }
  }

  // Moves pending blocks whose streams all passed their recorded points back to the pools.
  void process_pending() {
    if (pending.empty()) return;
    std::vector<std::pair<uint32_t, uint64_t>> completed;  // per-stream cache for this call
    auto done = [&](uint32_t s, uint64_t point) {
      for (auto& [id, v] : completed)
        if (id == s) return v >= point;
      uint64_t v = device.stream(s).completed_point();
      completed.emplace_back(s, v);
      return v >= point;
    };
    size_t keep = 0;
    for (size_t i = 0; i < pending.size(); ++i) {
      bool all = true;
      for (auto& [s, point] : pending[i].waits) all = all && done(s, point);
      if (all) {
        release_block(pending[i].block);
      } else {
        // Never self-move: a vector moved onto itself may come out empty (no waits left).
        if (keep != i) pending[keep] = std::move(pending[i]);
        ++keep;
      }
    }
    pending.resize(keep);
  }

  // Frees every segment that is entirely free, except those of live graph pools (captured
  // commands reference them).
  void release_cached() {
    for (auto& pool : pools) {
      std::vector<Block*> whole;
      for (Block* b : pool.free)
        if (!b->is_split() && b->graph_pool == 0 && b->segment->graph_view_pins == 0)
          whole.push_back(b);
      for (Block* b : whole) {
        erase_free(b);
        Segment* seg = b->segment;
        for_pool(seg->pool, [&](int i) {
          stats.reserved_bytes[i].decrease(static_cast<int64_t>(seg->raw.size));
          stats.segment[i].decrease(1);
        });
        stats.num_device_free++;
        record(TraceAction::SegmentFree, seg->raw.address, seg->raw.size, b->stream, 0);
        segments.erase(seg->raw.address);
        destroy_segment_memory(device, seg->raw, seg->views);
        delete seg;
        delete b;
      }
    }
  }

  // The live block containing `address`, or null.
  Block* containing(uint64_t address) const {
    auto it = live.upper_bound(address);
    if (it == live.begin()) return nullptr;
    --it;
    Block* b = it->second;
    return address < b->address + b->size ? b : nullptr;
  }
};

Allocator::Allocator(Device& device) : device_(device), state_(std::make_unique<State>(device)) {}

Allocator::~Allocator() {
  for (auto& [addr, seg] : state_->segments) {
    destroy_segment_memory(device_, seg->raw, seg->views);
    delete seg;
  }
  // Block objects are owned by segments' lists; delete them by walking every known block.
  for (auto& pool : state_->pools)
    for (Block* b : pool.free) delete b;
  for (auto& [addr, b] : state_->live) delete b;
  for (auto& p : state_->pending) delete p.block;
  for (auto& [id, gp] : state_->graph_pools)
    for (Block* b : gp.held) delete b;
}

uint64_t Allocator::create_graph_pool() {
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t id = state_->next_graph_pool++;
  state_->graph_pools[id];
  return id;
}

void Allocator::begin_graph_capture(uint32_t stream_id, uint64_t pool) {
  std::lock_guard<std::mutex> lock(mutex_);
  State& st = *state_;
  TVK_CHECK(st.graph_pools.count(pool), "begin_graph_capture: unknown graph pool ", pool);
  if (st.capturing.count(stream_id))
    throw std::logic_error(detail::concat("torch-vk: stream ", stream_id, " of vk:",
                                          device_.index(), " is already capturing a graph"));
  st.capturing[stream_id] = pool;
}

void Allocator::end_graph_capture(uint32_t stream_id) {
  std::lock_guard<std::mutex> lock(mutex_);
  state_->capturing.erase(stream_id);
}

void Allocator::release_graph_pool(uint64_t pool) {
  std::lock_guard<std::mutex> lock(mutex_);
  State& st = *state_;
  auto it = st.graph_pools.find(pool);
  if (it == st.graph_pools.end()) return;
  for (auto c = st.capturing.begin(); c != st.capturing.end();) {
    if (c->second == pool) c = st.capturing.erase(c);
    else ++c;
  }
  // Retag every block of the pool's segments as general memory of its stream. Free blocks
  // change their free-list key, so they are taken out and put back.
  for (auto& p : st.pools) {
    std::vector<Block*> retag;
    for (Block* b : p.free)
      if (b->graph_pool == pool) retag.push_back(b);
    for (Block* b : retag) {
      st.erase_free(b);
      b->graph_pool = 0;
      st.insert_free(b);
    }
  }
  for (auto& [address, b] : st.live)
    if (b->graph_pool == pool) b->graph_pool = 0;
  for (auto& p : st.pending)
    if (p.block->graph_pool == pool) p.block->graph_pool = 0;
  for (auto& [address, seg] : st.segments)
    if (seg->graph_pool == pool) seg->graph_pool = 0;
  for (Segment* seg : it->second.view_pins) --seg->graph_view_pins;
  std::vector<Block*> held = std::move(it->second.held);
  st.graph_pools.erase(it);
  for (Block* b : held) {
    b->pending = false;
    st.retire(b);
  }
}

uint64_t Allocator::graph_pool_bytes(uint64_t pool) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = state_->graph_pools.find(pool);
  return it == state_->graph_pools.end() ? 0 : it->second.reserved;
}

uint64_t Allocator::round_size(uint64_t bytes) {
  return bytes == 0 ? kRound : round_up(bytes, kRound);
}

uint64_t Allocator::allocate(uint64_t bytes, uint32_t stream_id, AllocationContext context) {
  if (bytes == 0) return 0;
  const uint64_t size = round_size(bytes);
  const int pool = size <= kSmallSize ? 1 : 2;
  const uint64_t segment_size = size <= kSmallSize      ? kSmallBuffer
                                : size <= kMinLargeAlloc ? kLargeBuffer
                                                         : round_up(size, kRoundLarge);
  std::unique_lock<std::mutex> lock(mutex_);
  State& st = *state_;
  st.process_pending();
  const uint64_t graph_pool = st.capture_pool(stream_id);
  Block* b = st.find_free(pool, graph_pool, stream_id, size);
  // A small request the small pool cannot serve takes idle space of the large pool before
  // reserving a new segment: memory that was reserved for one big block and freed (the
  // allocator warm-up of Hugging Face's from_pretrained reserves the whole model at once and
  // frees it) then holds the small tensors that follow instead of sitting next to new 2 MiB
  // segments. Unlike CUDA's allocator, which keeps the pools apart, this trades some
  // fragmentation of large blocks for a lower reserved peak; large requests never take
  // small-pool segments.
  if (!b && pool == 1) b = st.find_free(2, graph_pool, stream_id, size);
  if (b) {
    st.erase_free(b);
  } else {
    b = st.new_segment(segment_size, pool, stream_id, graph_pool, context);
    if (!b) {
      // Out of memory: wait for all work (completing cross-stream frees), release the cache,
      // retry once.
      st.stats.num_alloc_retries++;
      device_.synchronize();
      st.process_pending();
      st.release_cached();
      b = st.find_free(pool, graph_pool, stream_id, size);
      if (b) st.erase_free(b);
      else b = st.new_segment(segment_size, pool, stream_id, graph_pool, context);
    }
    if (!b) {
      st.stats.num_ooms++;
      MemoryStats snapshot = st.stats;
      const bool traced = st.history.trace;
      lock.unlock();
      // Device::memory_info reads the statistics (the allocator's lock): outside it.
      const auto info = device_.memory_info();
      if (traced) {
        lock.lock();
        st.record(TraceAction::Oom, 0, bytes, stream_id, graph_pool, context, info.first);
        lock.unlock();
      }
      char head[160];
      std::snprintf(head, sizeof(head), "torch-vk: out of memory on vk:%d: tried to allocate %.2f MiB; ",
                    device_.index(), mib(static_cast<int64_t>(bytes)));
      throw OutOfMemoryError(head + format_summary(snapshot, info));
    }
  }

  // Split off the tail when it is worth keeping: any >= 512 B remainder in the small pool,
  // only > 1 MiB remainders in the large pool (smaller ones stay with the block).
  // A small request carved from a large-pool block splits like a small one (the rest stays in
  // the large pool).
  const uint64_t remaining = b->size - size;
  if ((pool == 1 && remaining >= kRound) || (pool == 2 && remaining > kSmallSize)) {
    auto* rest = new Block();
    rest->segment = b->segment;
    rest->address = b->address + size;
    rest->size = remaining;
    rest->stream = b->stream;
    rest->graph_pool = b->graph_pool;
    rest->prev = b;
    rest->next = b->next;
    if (b->next) b->next->prev = rest;
    b->next = rest;
    b->size = size;
    st.insert_free(rest);
  }
  b->allocated = true;
  b->requested = bytes;
  st.live[b->address] = b;
  if (st.history.contexts) b->context = context;
  st.record(TraceAction::Alloc, b->address, b->size, stream_id, b->graph_pool, std::move(context));
  st.for_pool(b->segment->pool, [&](int i) {
    st.stats.allocated_bytes[i].increase(static_cast<int64_t>(b->size));
    st.stats.active_bytes[i].increase(static_cast<int64_t>(b->size));
    st.stats.requested_bytes[i].increase(static_cast<int64_t>(bytes));
    st.stats.allocation[i].increase(1);
  });
  return b->address;
}

void Allocator::free(uint64_t address, AllocationContext context) {
  if (address == 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  State& st = *state_;
  auto it = st.live.find(address);
  if (it == st.live.end())
    throw std::runtime_error("torch-vk: free of an address that is not an allocated block: 0x" +
                             [&] { char b[32]; std::snprintf(b, sizeof(b), "%" PRIx64, address); return std::string(b); }());
  Block* b = it->second;
  st.live.erase(it);
  st.for_pool(b->segment->pool, [&](int i) {
    st.stats.allocated_bytes[i].decrease(static_cast<int64_t>(b->size));
    st.stats.requested_bytes[i].decrease(static_cast<int64_t>(b->requested));
    st.stats.allocation[i].decrease(1);
  });
  b->allocated = false;
  st.record(TraceAction::FreeRequested, b->address, b->size, b->stream, b->graph_pool,
            std::move(context));
  if (b->graph_pool == 0 && !st.capturing.empty()) {
    // A block from outside a graph pool freed while a stream that used it captures: the
    // captured commands may use it at every replay, so it is held until the graph goes.
    uint64_t holder = st.capture_pool(b->stream);
    for (uint32_t s : b->other_streams)
      if (!holder) holder = st.capture_pool(s);
    if (holder) {
      b->pending = true;  // not free: neighbours must not merge with it
      st.graph_pools[holder].held.push_back(b);
      return;
    }
  }
  st.retire(b);
}

void Allocator::record_stream(uint64_t address, uint32_t stream_id) {
  std::lock_guard<std::mutex> lock(mutex_);
  Block* b = state_->containing(address);
  TVK_CHECK(b != nullptr, "record_stream on an address that is not an allocated block");
  if (stream_id == b->stream) return;
  if (std::find(b->other_streams.begin(), b->other_streams.end(), stream_id) ==
      b->other_streams.end())
    b->other_streams.push_back(stream_id);
}

ResolvedAddress Allocator::resolve(uint64_t address) const {
  std::lock_guard<std::mutex> lock(mutex_);
  Block* b = state_->containing(address);
  if (!b) {
    char buf[96];
    std::snprintf(buf, sizeof(buf), "torch-vk: address 0x%" PRIx64 " is not inside a vk:%d allocation",
                  address, device_.index());
    throw std::runtime_error(buf);
  }
  const RawBuffer& raw = b->segment->raw;
  ResolvedAddress r;
  r.buffer = raw.buffer;
  r.offset = address - raw.address;
  r.bytes_to_end = b->address + b->size - address;
  r.host_pointer = raw.mapped ? static_cast<char*>(raw.mapped) + r.offset : nullptr;
  r.device_address = address;
  return r;
}

bool Allocator::texel_view(uint64_t address, TexelFormat format, uint32_t stream_id,
                           TexelView* out) {
  const DeviceCapabilities& caps = device_.caps();
  if (!caps.texel_buffers) return false;
  if (texel_bytes(format) < 4 && !caps.texel_16bit) return false;
  const uint32_t bytes = texel_bytes(format);
  const int f = static_cast<int>(format);
  std::lock_guard<std::mutex> lock(mutex_);
  State& st = *state_;
  Block* b = st.containing(address);
  if (!b) return false;
  Segment* seg = b->segment;
  const uint64_t offset = address - seg->raw.address;
  if (offset % bytes != 0) return false;
  if (!seg->views[f]) {
    const uint64_t texels = std::min<uint64_t>(seg->raw.size / bytes, caps.max_texel_buffer_elements);
    VkBufferViewCreateInfo vi{VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO};
    vi.buffer = seg->raw.buffer;
    vi.format = vk_format(format);
    vi.offset = 0;
    vi.range = texels * bytes;
    TVK_VK_CHECK_DEV(vk::vkCreateBufferView(device_.handle(), &vi, nullptr, &seg->views[f]),
                     device_.index());
    seg->view_texels[f] = static_cast<int64_t>(texels);
  }
  const int64_t first = static_cast<int64_t>(offset / bytes);
  if (first >= seg->view_texels[f]) return false;
  auto capture = st.capturing.find(stream_id);
  if (capture != st.capturing.end()) {
    auto pool = st.graph_pools.find(capture->second);
    if (pool != st.graph_pools.end() && pool->second.view_pins.insert(seg).second)
      ++seg->graph_view_pins;
  }
  out->view = seg->views[f];
  out->first = first;
  out->count = seg->view_texels[f] - first;
  return true;
}

bool Allocator::owns(uint64_t address) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return state_->containing(address) != nullptr;
}

uint64_t Allocator::block_size(uint64_t address) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = state_->live.find(address);
  TVK_CHECK(it != state_->live.end(), "block_size of an address that does not start a block");
  return it->second->size;
}

void Allocator::empty_cache() {
  device_.synchronize();
  std::lock_guard<std::mutex> lock(mutex_);
  state_->process_pending();
  state_->release_cached();
}

MemoryStats Allocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return state_->stats;
}

void Allocator::reset_peak_stats() {
  std::lock_guard<std::mutex> lock(mutex_);
  MemoryStats& s = state_->stats;
  for (int i = 0; i < 3; ++i)
    for (MemoryStat* m : {&s.allocated_bytes[i], &s.reserved_bytes[i], &s.active_bytes[i],
                          &s.requested_bytes[i], &s.allocation[i], &s.segment[i],
                          &s.inactive_split_bytes[i]})
      m->peak = m->current;
}

void Allocator::reset_accumulated_stats() {
  std::lock_guard<std::mutex> lock(mutex_);
  MemoryStats& s = state_->stats;
  for (int i = 0; i < 3; ++i)
    for (MemoryStat* m : {&s.allocated_bytes[i], &s.reserved_bytes[i], &s.active_bytes[i],
                          &s.requested_bytes[i], &s.allocation[i], &s.segment[i],
                          &s.inactive_split_bytes[i]})
      m->allocated = m->freed = 0;
  s.num_alloc_retries = s.num_ooms = s.num_device_alloc = s.num_device_free = 0;
}

void Allocator::set_history(const HistorySettings& settings, bool clear) {
  std::lock_guard<std::mutex> lock(mutex_);
  State& st = *state_;
  st.history = settings;
  if (clear || !settings.trace) st.trace.clear();
  while (settings.max_entries && st.trace.size() > settings.max_entries) st.trace.pop_front();
  if (!settings.contexts) {
    for (auto& [address, b] : st.live) b->context.reset();
    for (auto& p : st.pending) p.block->context.reset();
    for (auto& [address, seg] : st.segments) seg->context.reset();
  }
}

HistorySettings Allocator::history() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return state_->history;
}

std::vector<SegmentInfo> Allocator::snapshot(std::vector<TraceEntry>* trace) {
  std::lock_guard<std::mutex> lock(mutex_);
  State& st = *state_;
  // A segment's blocks: its first block (no `prev`) and the `next` chain. Every block is
  // live, free, pending or held, so each segment's first block is found in one of them.
  std::map<uint64_t, Block*> first_blocks;
  auto note = [&](Block* b) {
    if (!b->prev) first_blocks.emplace(b->segment->raw.address, b);
  };
  for (auto& pool : st.pools)
    for (Block* b : pool.free) note(b);
  for (auto& [address, b] : st.live) note(b);
  for (auto& p : st.pending) note(p.block);
  for (auto& [id, gp] : st.graph_pools)
    for (Block* b : gp.held) note(b);
  std::vector<SegmentInfo> out;
  out.reserve(st.segments.size());
  for (auto& [address, seg] : st.segments) {
    SegmentInfo info;
    info.address = seg->raw.address;
    info.total_size = seg->raw.size;
    info.large = seg->pool == 2;
    info.graph_pool = seg->graph_pool;
    info.context = seg->context;
    auto first = first_blocks.find(address);
    if (first != first_blocks.end()) info.stream = first->second->stream;
    for (Block* b = first == first_blocks.end() ? nullptr : first->second; b; b = b->next) {
      BlockInfo bi;
      bi.address = b->address;
      bi.size = b->size;
      if (b->allocated) {
        bi.state = BlockInfo::State::Allocated;
        bi.requested = b->requested;
        info.allocated_size += b->size;
        info.active_size += b->size;
        info.requested_size += b->requested;
      } else if (b->pending) {
        bi.state = BlockInfo::State::PendingFree;
        info.active_size += b->size;
      }
      bi.context = b->context;
      info.blocks.push_back(std::move(bi));
    }
    out.push_back(std::move(info));
  }
  if (trace) {
    st.record(TraceAction::Snapshot, 0, 0, 0, 0);
    trace->assign(st.trace.begin(), st.trace.end());
  }
  return out;
}

std::string Allocator::summary() const {
  MemoryStats s = stats();
  return format_summary(s, device_.memory_info());
}

// ---------------------------------------------------------------------------------------------
// HostAllocator: one dedicated mapped buffer per block, sizes bucketed to powers of two
// (>= 4 KiB, so every block is page-aligned), freed blocks cached by bucket.

namespace {
struct HostBlock {
  RawBuffer raw;
  bool allocated = false;
  std::vector<uint32_t> streams;  // record_stream
};
}  // namespace

struct HostAllocator::State {
  std::map<uintptr_t, HostBlock*> blocks;                 // every block, by host pointer
  std::map<uint64_t, std::vector<HostBlock*>> free_lists;  // cached blocks by bucket size
  struct Pending {
    HostBlock* block;
    std::vector<std::pair<uint32_t, uint64_t>> waits;
  };
  std::vector<Pending> pending;
  uint64_t allocated = 0;
  uint64_t reserved = 0;

  HostBlock* containing(const void* p) const {
    auto addr = reinterpret_cast<uintptr_t>(p);
    auto it = blocks.upper_bound(addr);
    if (it == blocks.begin()) return nullptr;
    --it;
    HostBlock* b = it->second;
    return (b->allocated && addr < it->first + b->raw.size) ? b : nullptr;
  }

  void process_pending(Device& device) {
    size_t keep = 0;
    for (size_t i = 0; i < pending.size(); ++i) {
      bool all = true;
      for (auto& [s, point] : pending[i].waits)
        all = all && device.stream(s).completed_point() >= point;
      if (all) {
        free_lists[pending[i].block->raw.size].push_back(pending[i].block);
      } else {
        // Never self-move: a vector moved onto itself may come out empty, and a block with
        // no waits left would be handed out while its copies still read it.
        if (keep != i) pending[keep] = std::move(pending[i]);
        ++keep;
      }
    }
    pending.resize(keep);
  }

  void release_cached(Device& device) {
    for (auto& [size, list] : free_lists) {
      for (HostBlock* b : list) {
        blocks.erase(reinterpret_cast<uintptr_t>(b->raw.mapped));
        reserved -= b->raw.size;
        destroy_raw_buffer(device, b->raw);
        delete b;
      }
    }
    free_lists.clear();
  }
};

HostAllocator::HostAllocator(Device& device) : device_(device), state_(std::make_unique<State>()) {}

HostAllocator::~HostAllocator() {
  for (auto& [p, b] : state_->blocks) {
    destroy_raw_buffer(device_, b->raw);
    delete b;
  }
}

void* HostAllocator::allocate(uint64_t bytes) {
  if (bytes == 0) return nullptr;
  uint64_t size = 4096;
  while (size < bytes) size <<= 1;
  std::lock_guard<std::mutex> lock(mutex_);
  State& st = *state_;
  if (!st.pending.empty()) st.process_pending(device_);
  HostBlock* b = nullptr;
  auto it = st.free_lists.find(size);
  if (it != st.free_lists.end() && !it->second.empty()) {
    b = it->second.back();
    it->second.pop_back();
  } else {
    const DeviceCapabilities& c = device_.caps();
    const bool too_big = (c.max_memory_allocation_size && size > c.max_memory_allocation_size) ||
                         (c.max_buffer_size && size > c.max_buffer_size);
    b = new HostBlock();
    VkResult r = too_big ? VK_ERROR_OUT_OF_HOST_MEMORY
                         : create_raw_buffer(device_, size, device_.host_memory_type(), &b->raw);
    if ((r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY) && !too_big) {
      st.release_cached(device_);
      r = create_raw_buffer(device_, size, device_.host_memory_type(), &b->raw);
    }
    if (r != VK_SUCCESS) {
      delete b;
      if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY) {
        char buf[160];
        std::snprintf(buf, sizeof(buf),
                      "torch-vk: out of pinned host memory on vk:%d: tried to allocate %.2f MiB",
                      device_.index(), mib(static_cast<int64_t>(bytes)));
        throw OutOfMemoryError(buf);
      }
      throw_vk_error(r, "vkAllocateMemory (pinned host memory)", __FILE__, __LINE__, device_.index());
    }
    TVK_CHECK(b->raw.mapped != nullptr, "pinned host memory is not mappable");
    st.blocks[reinterpret_cast<uintptr_t>(b->raw.mapped)] = b;
    st.reserved += size;
  }
  b->allocated = true;
  st.allocated += size;
  return b->raw.mapped;
}

void HostAllocator::free(void* host_pointer) {
  if (!host_pointer) return;
  std::lock_guard<std::mutex> lock(mutex_);
  State& st = *state_;
  auto it = st.blocks.find(reinterpret_cast<uintptr_t>(host_pointer));
  TVK_CHECK(it != st.blocks.end() && it->second->allocated,
            "free of a pointer that is not a pinned host block");
  HostBlock* b = it->second;
  b->allocated = false;
  st.allocated -= b->raw.size;
  if (b->streams.empty()) {
    st.free_lists[b->raw.size].push_back(b);
    return;
  }
  State::Pending p{b, {}};
  for (uint32_t s : b->streams) p.waits.emplace_back(s, device_.stream(s).current_point());
  b->streams.clear();
  st.pending.push_back(std::move(p));
}

void HostAllocator::record_stream(void* host_pointer, uint32_t stream_id) {
  std::lock_guard<std::mutex> lock(mutex_);
  HostBlock* b = state_->containing(host_pointer);
  TVK_CHECK(b != nullptr, "record_stream on a pointer that is not pinned host memory");
  if (std::find(b->streams.begin(), b->streams.end(), stream_id) == b->streams.end())
    b->streams.push_back(stream_id);
}

bool HostAllocator::is_pinned(const void* host_pointer) const {
  if (!host_pointer) return false;
  std::lock_guard<std::mutex> lock(mutex_);
  return state_->containing(host_pointer) != nullptr;
}

ResolvedAddress HostAllocator::resolve(const void* host_pointer) const {
  std::lock_guard<std::mutex> lock(mutex_);
  HostBlock* b = state_->containing(host_pointer);
  TVK_CHECK(b != nullptr, "pointer is not pinned host memory of vk:", device_.index());
  ResolvedAddress r;
  r.buffer = b->raw.buffer;
  r.offset = reinterpret_cast<uintptr_t>(host_pointer) - reinterpret_cast<uintptr_t>(b->raw.mapped);
  r.bytes_to_end = b->raw.size - r.offset;
  r.host_pointer = const_cast<void*>(host_pointer);
  r.device_address = b->raw.address + r.offset;
  return r;
}

void HostAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mutex_);
  state_->process_pending(device_);
  state_->release_cached(device_);
}

uint64_t HostAllocator::allocated_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return state_->allocated;
}

uint64_t HostAllocator::reserved_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return state_->reserved;
}

}  // namespace tvk
