// L1: captured command graphs (contract in graph.h). The recording side lives in stream.cpp
// (Stream appends to the graph under its lock); this file owns the graph's memory and replay.
#include "runtime/graph.h"

#include <cstring>
#include <stdexcept>

#include "runtime/allocator.h"
#include "runtime/device.h"
#include "runtime/error.h"

namespace tvk {

namespace {
constexpr uint64_t kParamChunk = 64 * 1024;  // persistent parameter chunk
constexpr uint64_t kParamAlign = 16;

uint64_t round_up(uint64_t v, uint64_t m) { return (v + m - 1) / m * m; }
}  // namespace

CapturedGraph::~CapturedGraph() {
  if (!stream_) return;
  try {
    if (state_ == State::Capturing) stream_->end_capture();
  } catch (...) {
  }
  // The parameter memory may still be read by the capture run or a replay in flight.
  for (const RawBuffer& chunk : param_chunks_) {
    try {
      stream_->release_after(chunk, last_point_);
    } catch (...) {
    }
  }
  if (commands_buffer_ != VK_NULL_HANDLE) {
    try {
      stream_->release_command_buffer_after(commands_buffer_, last_point_);
    } catch (...) {
    }
  }
  try {
    stream_->device().allocator().release_graph_pool(pool_id_);
  } catch (...) {
  }
}

void CapturedGraph::start(Stream& stream, uint64_t pool_id) {
  stream_ = &stream;
  pool_id_ = pool_id;
  state_ = State::Capturing;
}

void CapturedGraph::finish(uint64_t point) {
  state_ = State::Captured;
  last_point_ = point;
}

void CapturedGraph::invalidate(const std::string& reason) {
  if (!valid_) return;  // keep the first reason
  valid_ = false;
  invalid_reason_ = reason;
}

uint64_t CapturedGraph::alloc_params(const void* data, uint64_t size) {
  Device& device = stream_->device();
  uint64_t offset = round_up(param_offset_, kParamAlign);
  if (param_chunks_.empty() || offset + size > param_chunks_.back().size) {
    RawBuffer chunk;
    TVK_VK_CHECK_DEV(create_raw_buffer(device, std::max(kParamChunk, round_up(size, 4096)),
                                       device.host_memory_type(), &chunk),
                     device.index());
    if (!chunk.mapped) {
      destroy_raw_buffer(device, chunk);
      TVK_CHECK(false, "graph parameter memory is not host-mappable");
    }
    param_chunks_.push_back(chunk);
    offset = 0;
  }
  RawBuffer& chunk = param_chunks_.back();
  if (data) std::memcpy(static_cast<char*>(chunk.mapped) + offset, data, size);
  param_offset_ = offset + size;
  return chunk.address + offset;
}

void CapturedGraph::replay(Stream& stream) {
  if (state_ == State::Empty)
    throw std::logic_error("torch-vk: replay of a graph that was never captured");
  if (state_ == State::Capturing)
    throw std::logic_error("torch-vk: replay of a graph whose capture has not ended (call end_capture)");
  if (&stream != stream_)
    throw std::invalid_argument(detail::concat(
        "torch-vk: a graph replays only on the stream it was captured on (stream ", stream_->id(),
        " of vk:", stream_->device().index(), "), not on stream ", stream.id(), " of vk:",
        stream.device().index()));
  if (!valid_)
    throw std::runtime_error("torch-vk: the graph is invalid and cannot be replayed: " +
                             invalid_reason_);
  if (stream.capturing())
    throw std::runtime_error("torch-vk: replaying a graph while its stream captures another graph "
                             "is not supported");
  last_point_ = stream.record_graph(*this);
}

void CapturedGraph::write_philox(uint64_t seed, uint64_t offset) {
  const uint64_t block = offset / 4;
  const uint32_t words[4] = {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32),
                             static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32)};
  for (int i = 0; i < 4; ++i) stream_->fill(philox_block_ + 4 * i, 4, words[i]);
}

void CapturedGraph::replay(Stream& stream, uint64_t seed, uint64_t offset) {
  if (philox_block_ != 0 && valid_ && state_ == State::Captured && &stream == stream_ &&
      !stream.capturing())
    write_philox(seed, offset);
  replay(stream);  // checks the state and reports what is wrong
}

uint64_t CapturedGraph::philox_address(uint64_t seed, uint64_t base) {
  if (state_ != State::Capturing)
    throw std::logic_error("torch-vk: philox_address outside a graph capture");
  if (philox_block_ != 0) return philox_block_;
  Stream& stream = *stream_;
  philox_block_ = stream.device().allocator().allocate(16, stream.id());  // a pool block
  philox_.seed = seed;
  philox_.base = base;
  philox_.consumed = 0;
  const size_t before = commands_.size();
  write_philox(seed, base);
  for (size_t c = before; c < commands_.size(); ++c) commands_[c].replayed = false;
  return philox_block_;
}

uint64_t CapturedGraph::pool_bytes() const {
  if (!stream_) return 0;
  return stream_->device().allocator().graph_pool_bytes(pool_id_);
}

uint64_t CapturedGraph::param_bytes() const {
  uint64_t total = 0;
  for (const RawBuffer& c : param_chunks_) total += c.size;
  return total;
}

}  // namespace tvk
