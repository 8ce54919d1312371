#include "fault/hold_story.hpp"

#include <algorithm>
#include <sstream>

namespace sqllock::fault {
namespace {

constexpr std::int64_t kMs = 1'000'000;
constexpr std::int64_t kBefore = 6'000 * kMs, kAfter = 1'000 * kMs;
constexpr std::size_t kMaxFaults = 6;

}  // namespace

std::int64_t run_start(const std::vector<event>& events) {
  if (events.empty()) return 0;
  std::int64_t t = events.front().mono;
  for (const auto& e : events) t = std::min(t, e.mono);
  return t;
}

std::string at_ms(std::int64_t ns, std::int64_t t0) { return "t=" + std::to_string((ns - t0) / kMs) + "ms"; }

std::string describe_hold(const hold_rec& h, std::int64_t t0) {
  std::ostringstream s;
  s << h.res << " fence " << h.fence << " pid " << h.pid << "/" << h.thread << " [" << at_ms(h.start, t0) << ", "
    << at_ms(h.end, t0) << "]";
  return s.str();
}

std::string hold_story(const hold_rec& h, const std::vector<fault_event>& faults, std::int64_t t0) {
  std::ostringstream s;
  s << "called " << at_ms(h.called, t0);
  for (const auto& [t, inner] : h.reentries) s << "; re-entered " << at_ms(t, t0) << " (" << inner << ")";
  s << "; lost " << (h.lost_at ? at_ms(h.lost_at, t0) : std::string("never"));
  if (h.release.empty())
    s << "; died";
  else
    s << "; release " << h.release << " " << at_ms(h.release_at, t0);
  std::size_t shown = 0;
  for (const auto& f : faults) {
    if ((f.pid != h.pid && f.pid != 0) || f.end < h.called - kBefore || f.start > h.end + kAfter) continue;
    s << (shown == 0 ? "; faults: " : ", ") << f.kind;
    if (f.pid) s << " pid " << f.pid;
    s << " [" << at_ms(f.start, t0) << ", " << at_ms(f.end, t0) << "]";
    if (++shown == kMaxFaults) break;
  }
  if (shown == 0) s << "; no fault of its process or the server near it";
  return s.str();
}

}  // namespace sqllock::fault
