// L1: the profiler switch and the per-thread correlation stack (see profiler.h).
#include "runtime/profiler.h"

#include <time.h>

#include <atomic>
#include <vector>

namespace tvk::profiler {
namespace {
std::atomic<bool> g_active{false};
thread_local std::vector<uint64_t> tl_correlations;
}  // namespace

bool active() { return g_active.load(std::memory_order_relaxed); }
void set_active(bool on) { g_active.store(on, std::memory_order_release); }

void push_correlation(uint64_t id) { tl_correlations.push_back(id); }
void pop_correlation() {
  if (!tl_correlations.empty()) tl_correlations.pop_back();
}
uint64_t current_correlation() { return tl_correlations.empty() ? 0 : tl_correlations.back(); }

int64_t host_now_ns() {
  timespec t{};
  clock_gettime(CLOCK_REALTIME, &t);
  return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
}

}  // namespace tvk::profiler
