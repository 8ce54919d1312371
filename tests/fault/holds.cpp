#include "fault/holds.hpp"

#include <map>
#include <optional>

namespace sqllock::fault {

std::vector<hold_rec> build_holds(const std::vector<event>& all, const std::vector<worker_proc>& workers) {
  std::map<pid_t, std::int64_t> killed_at;
  for (const auto& w : workers) killed_at[w.pid] = w.killed_at;
  std::map<std::pair<pid_t, int>, std::vector<const event*>> by_thread;
  for (const auto& e : all) by_thread[{e.pid, e.thread}].push_back(&e);
  std::vector<hold_rec> out;
  for (const auto& thread_events : by_thread) {
    const auto& events = thread_events.second;  // a plain reference: lambdas below use it
    std::optional<hold_rec> cur;
    // A lost signal that fired before the lock's stop_callback was registered runs in that
    // registration, which comes before the section writes A: it belongs to the next hold.
    std::int64_t lost_before_a = 0;
    const auto close = [&] {
      if (!cur) return;
      if (!cur->releasing) cur->end = killed_at[cur->pid] ? killed_at[cur->pid] : events.back()->mono;
      out.push_back(*cur);
      cur.reset();
    };
    for (const event* e : events) {
      const auto field = [&](std::size_t i) { return i < e->fields.size() ? e->fields[i] : std::string(); };
      const auto number = [&](std::size_t i, std::int64_t fallback) {
        const std::string f = field(i);
        return f.empty() ? fallback : std::stoll(f);
      };
      switch (e->type) {
        case 'A':
          close();
          cur = hold_rec{};
          cur->pid = e->pid;
          cur->thread = e->thread;
          cur->res = e->resource;
          cur->fence = e->fence;
          cur->start = e->mono;
          cur->db_us = number(0, 0);
          cur->u_first = number(1, -1);
          cur->called = number(2, e->mono);
          cur->writer = field(3) != "r";
          cur->lost_at = std::exchange(lost_before_a, 0);
          break;
        case 'N':
          if (cur) cur->reentries.emplace_back(e->mono, std::stoll(field(0)));
          break;
        case 'R':
          if (cur) {
            cur->read_end_us = number(0, 0);
            cur->u_last = number(1, -1);
          }
          break;
        case 'F':
          if (cur) {
            cur->fenced = field(0);
            cur->fenced_sent = number(1, e->mono);
            cur->fenced_done = e->mono;
          }
          break;
        case 'W':
          if (cur) {
            cur->guarded = field(0);
            cur->guarded_sent = number(1, 0);
            cur->guarded_attempted = number(2, 0);
          }
          break;
        case 'L':
          if (cur && cur->res == e->resource && cur->lost_at == 0) cur->lost_at = e->mono;
          if (!cur && lost_before_a == 0) lost_before_a = e->mono;
          break;
        case 'Y':
          if (cur) {
            cur->end = e->mono;
            cur->releasing = true;
          }
          break;
        case 'X':
          if (cur) {
            cur->release = field(0);
            cur->release_at = e->mono;
            close();
          }
          break;
        default: break;
      }
    }
    close();
  }
  return out;
}

}  // namespace sqllock::fault
