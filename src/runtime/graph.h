// L1: captured command graphs (like CUDA graphs). A stream that captures into a CapturedGraph
// executes its commands exactly as usual (the capture run produces correct results) and also
// appends them to the graph; replay() later runs the same commands again -- same pipelines,
// same push-constant bytes, same buffers and offsets -- in one call, with no per-op work above
// L1. The commands are recorded once, at the first replay, into a secondary command buffer of
// the capture stream (simultaneous use); every replay records one vkCmdExecuteCommands, so its
// host cost does not grow with the graph.
//
// Capture (Stream::begin_capture / end_capture, see stream.h):
//   captured      dispatch (with its texel views: Allocator::texel_view keeps their segments
//                 while the graph lives), copy, fill (the resolved VkBuffer + offset of both
//                 ends);
//   redirected    upload_params: the block goes to graph-owned persistent host-visible memory
//                 instead of the stream's ring, so the address baked into push constants stays
//                 valid for every replay;
//   allowed       flush, query, current_point, completed_point, device_error_address,
//                 check_device_errors, Event::record without timing (no command is recorded);
//   forbidden     copy_from_host, copy_to_host, copy_to_pinned_host, write_timestamp (timing
//                 events), wait_for_point (synchronize, Event::synchronize and every other
//                 blocking wait on the capturing stream, Device::synchronize), and
//                 wait_for_stream_point (waits on events of other streams): they mark the graph
//                 invalid and throw std::runtime_error("torch-vk: <what> is not allowed while a
//                 graph is being captured"). The capture goes on until end_capture, but an
//                 invalid graph cannot be replayed.
//
// Memory (Allocator, allocator.h): while stream S captures into G, Allocator::allocate(_, S)
// serves blocks from G's private pool (segments of its own); frees of pool blocks return them to
// the pool, where only later allocations of G's capture reuse them. Pool blocks still allocated
// after end_capture (the graph's outputs) stay pool blocks. Blocks allocated before the capture
// and freed during it (on S) are held until G is destroyed, because captured commands may use
// them. When G is destroyed its pool segments become ordinary cached segments of stream S (safe
// without waiting: later users on S are stream-ordered after the replays; other streams never
// reuse S's blocks without record_stream); live blocks of the pool are then freed to the
// general cache. empty_cache() releases the segments to the driver.
//
// Contracts for the user (as with CUDA graphs): memory allocated outside the capture that the
// captured commands read or write (static inputs, parameters) must stay allocated while the
// graph is replayed; replay only on the capture stream; a graph is captured once.
//
// Thread safety: the graph's command list is written only under the capturing stream's lock;
// replay() may run concurrently with other streams, not with another replay of the same graph.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/raw_buffer.h"
#include "runtime/stream.h"
#include "runtime/vulkan_api.h"

namespace tvk {

class Device;

struct GraphCommand {
  enum class Kind : uint8_t { Dispatch, Copy, Fill };
  Kind kind = Kind::Dispatch;
  // Dispatch
  VkPipeline pipeline = VK_NULL_HANDLE;
  uint32_t groups[3] = {0, 0, 0};
  uint32_t push_size = 0;  // already padded to a multiple of 4
  uint32_t view_count = 0;  // storage texel buffers at bindings 0 .. view_count - 1
  VkBufferView views[kMaxTexelBindings] = {};
  // Copy / fill
  VkBuffer src = VK_NULL_HANDLE;
  VkBuffer dst = VK_NULL_HANDLE;
  uint64_t src_offset = 0;
  uint64_t dst_offset = 0;
  uint64_t bytes = 0;
  uint32_t pattern = 0;
  // False for commands that only the capture run executes (the initial write of the Philox
  // block, see CapturedGraph::philox_address); replays skip them.
  bool replayed = true;
  // What the command reads and writes: replays record the barriers these call for.
  AccessSet accesses;
  alignas(16) uint8_t push[kMaxPushConstantBytes];
};

class CapturedGraph {
 public:
  CapturedGraph() = default;
  // Ends a capture still in progress; hands the parameter memory to the stream for release once
  // the last capture / replay completed; returns the pool to the allocator (see above).
  ~CapturedGraph();
  CapturedGraph(const CapturedGraph&) = delete;
  CapturedGraph& operator=(const CapturedGraph&) = delete;

  // Runs every captured command again, in order, on `stream` (one execute-commands command
  // after the first replay). Never waits. Throws
  // std::invalid_argument when `stream` is not the capture stream, std::logic_error when the
  // graph was never captured or its capture has not ended, std::runtime_error when it is
  // invalid or when `stream` is capturing (graphs do not nest).
  void replay(Stream& stream);

  // Random numbers (the scheme of CUDA graphs' Philox bookkeeping). Kernels that draw random
  // numbers during a capture read their generator seed and counter base from a 16-byte device
  // block of the graph (uint32 words: seed lo, seed hi, counter block lo, hi; a counter block
  // is 4 counter values) plus a per-kernel delta baked into their push constants, instead of
  // baking the seed and offset themselves. replay(stream, seed, offset) first writes the
  // block, so each replay draws the numbers an eager run at that generator state would.
  // L1 only keeps the numbers; generators live above it (src/aten/generator.h).
  struct PhiloxCapture {
    uint64_t seed = 0;
    uint64_t base = 0;      // generator offset (counter values) at the capture's first draw
    uint64_t consumed = 0;  // counter values the capture drew, from `base`
  };
  // During the capture: the block's address, created by the first call, which also writes
  // {seed, base / 4} for the capture run (commands the replays skip) and sets philox().seed /
  // base. Throws std::logic_error outside a capture.
  uint64_t philox_address(uint64_t seed, uint64_t base);
  // Whether a kernel of the capture drew random numbers through the block.
  bool draws_random() const { return philox_block_ != 0; }
  PhiloxCapture& philox() { return philox_; }
  // replay() for graphs that draw random numbers: writes {seed, offset / 4} (offset: a
  // multiple of 4) into the Philox block first (stream-ordered after earlier replays). Graphs
  // that draw nothing ignore the values.
  void replay(Stream& stream, uint64_t seed, uint64_t offset);
  // Marks the graph invalid (it cannot be replayed) with `reason`; the first reason is kept.
  void invalidate(const std::string& reason);

  size_t command_count() const { return commands_.size(); }
  // Bytes of device memory in the graph's private pool (segments).
  uint64_t pool_bytes() const;
  // Bytes of persistent host-visible parameter memory (upload_params during capture).
  uint64_t param_bytes() const;
  // False once something not capturable happened during the capture.
  bool valid() const { return valid_; }
  // Why the graph is invalid ("" when valid).
  const std::string& invalid_reason() const { return invalid_reason_; }
  bool capturing() const { return state_ == State::Capturing; }
  // True once end_capture ran (the graph can then be replayed, if valid).
  bool captured() const { return state_ == State::Captured; }
  // The capture stream (null before begin_capture).
  Stream* stream() const { return stream_; }
  const std::vector<GraphCommand>& commands() const { return commands_; }

 private:
  friend class Stream;
  enum class State { Empty, Capturing, Captured };

  // Called by Stream, with the stream's recording lock held.
  void start(Stream& stream, uint64_t pool_id);
  void finish(uint64_t point);
  uint64_t alloc_params(const void* data, uint64_t size);
  // Records the fills that write {seed, offset / 4} into the Philox block, on stream_.
  void write_philox(uint64_t seed, uint64_t offset);

  State state_ = State::Empty;
  Stream* stream_ = nullptr;
  uint64_t pool_id_ = 0;
  bool valid_ = true;
  std::string invalid_reason_;
  std::vector<GraphCommand> commands_;
  // Parameter memory: a bump allocator over host-visible chunks that live as long as the graph.
  std::vector<RawBuffer> param_chunks_;
  uint64_t param_offset_ = 0;  // in param_chunks_.back()
  // Timeline point of `stream_` after the capture / the last replay: the graph's memory may be
  // released once it completed.
  uint64_t last_point_ = 0;
  // The captured commands as a secondary command buffer of stream_'s pool (recorded by the
  // first replay; freed by the stream once last_point_ completed).
  VkCommandBuffer commands_buffer_ = VK_NULL_HANDLE;
  uint64_t philox_block_ = 0;  // device address of the Philox block (a pool block), or 0
  PhiloxCapture philox_;
};

}  // namespace tvk
