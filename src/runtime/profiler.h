// L1: device-side profiling for torch.profiler (the Kineto plugin in
// torch_vk/csrc/profiler_kineto.cpp). While active, every command a stream records (dispatch,
// copy, fill) is bracketed by two timestamp queries and remembered with its name, the
// correlation id of the host op that launched it (a thread-local stack Kineto pushes per op)
// and the host time of its launch; Device::collect_profile() waits for the device and turns
// the queries into CommandRecords on the host clock. Host waits (synchronize, copies to the
// host) are recorded as well.
//
// Inactive, the cost is one relaxed atomic load per recorded command: no queries, no records.
// Commands recorded into a captured graph are not profiled (a replay is one command).
#pragma once

#include <cstdint>
#include <string>

namespace tvk::profiler {

enum class CommandKind : uint8_t { Kernel, Copy, Fill, HostWait };

struct CommandRecord {
  CommandKind kind = CommandKind::Kernel;
  std::string name;       // kernel (shader) name, or "copy" / "fill" / the wait's cause
  int device = 0;
  uint32_t stream = 0;
  uint64_t correlation = 0;  // of the launching host op; 0 when none was pushed
  int64_t launch_ns = 0;     // host clock (CLOCK_REALTIME, as c10::getTime) when recorded
  int64_t start_ns = 0;      // device execution (host wait: the wait) on the host clock
  int64_t end_ns = 0;
  uint64_t bytes = 0;        // copies and fills
};

bool active();
void set_active(bool on);

// The correlation stack of the calling thread (Kineto: pushCorrelationId / popCorrelationId).
void push_correlation(uint64_t id);
void pop_correlation();
uint64_t current_correlation();

// CLOCK_REALTIME in nanoseconds (the clock of c10::getTime(), which torch.profiler uses).
int64_t host_now_ns();

}  // namespace tvk::profiler
