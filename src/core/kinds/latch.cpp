// sqllock::latch: arming, count-downs, waiting and state. SQL lives in the dialect
// (dialect/latch_sql.hpp) and runs through latch_store; waiting is the lock kinds' retry_until
// (capped backoff, PostgreSQL wake-ups).
#include "sqllock/latch.hpp"

#include <algorithm>

#include "common/lock_name.hpp"
#include "common/message_text.hpp"
#include "core/handle/database_impl.hpp"
#include "core/kinds/latch_store.hpp"
#include "core/wait/retry_wait.hpp"
#include "sqllock/error.hpp"

namespace sqllock {
namespace detail {
namespace {

// How often an anonymous count-down tries again when it found the latch open and, by the time it
// looked why, armed again: it then counts in the new generation. Each retry needs another
// opening and re-arming by others in between, so the bound is never reached in practice.
constexpr int kRearmedAttempts = 8;

std::string latch_what(const std::string& name) {
  std::string out("latch '");  // appended: GCC 12 -O3 warns falsely on `"…" + std::string&&`
  return out.append(message_text(name)).append("'");
}

[[noreturn]] void throw_absent(const std::string& name, bool expired) {
  throw latch_not_armed(latch_what(name) +
                            (expired ? " is absent: its ttl ran out before it opened"
                                     : " is absent: it was never created (or its name is "
                                       "misspelled), or the reaper deleted it") +
                            "; nothing was counted. Create it first (try_create)",
                        true);
}

[[noreturn]] void throw_open(const std::string& name) {
  throw latch_not_armed(latch_what(name) +
                            " is already open: it reached zero, so this count-down is one more than its count; "
                            "nothing was counted. Re-arm it (try_create) to start its next generation",
                        false);
}

// Runs `f` with a latch_store on a pooled connection of the handle.
template <class F>
auto with_store(const database& db, F&& f) {
  auto& impl = database_access::impl(db);
  const auto sql = latch_statements(impl.dialect(), impl.options().table);
  auto conn = impl.borrow();
  latch_store store(*conn, *sql, impl.sql().wakeup_channel);
  return f(store);
}

}  // namespace
}  // namespace detail

std::string_view to_string(latch_wait_result result) noexcept {
  switch (result) {
    case latch_wait_result::open: return "open";
    case latch_wait_result::timed_out: return "timed_out";
    case latch_wait_result::absent: return "absent";
  }
  return "unknown";
}

latch::latch(const database& db, std::string_view name) : db_(db), name_(name) {
  detail::validate_lock_name(name_, "latch name");
}

std::optional<std::int64_t> latch::try_create(std::int64_t count, const latch_options& options) {
  if (count < 1 || count > max_latch_count)
    throw invalid_argument(detail::latch_what(name_) + ": count must be between 1 and " +
                           std::to_string(max_latch_count) + ", got " + std::to_string(count));
  if (options.ttl && (*options.ttl < std::chrono::milliseconds(1) || *options.ttl > detail::kMaxTtl))
    throw invalid_argument(detail::latch_what(name_) + ": ttl must be between 1 ms and 365 days, got " +
                           std::to_string(options.ttl->count()) + " ms");
  return detail::with_store(db_, [&](detail::latch_store& s) { return s.arm(name_, count, options.ttl); });
}

latch_count_down_result latch::count_down() {
  return detail::with_store(db_, [&](detail::latch_store& s) {
    for (int attempt = 1;; ++attempt) {
      const auto out = s.count_down(name_);
      if (out.counted) return latch_count_down_result{true, out.remaining};
      // Nothing counted: say why. The latch may have changed since; an armed one was re-armed in
      // between (it was open when the count-down ran), so count again, in its new generation.
      const auto row = s.find(name_);
      if (!row || row->expired) detail::throw_absent(name_, row.has_value());
      if (row->open() || attempt == detail::kRearmedAttempts) detail::throw_open(name_);
    }
  });
}

latch_count_down_result latch::count_down(std::string_view participant) {
  detail::validate_lock_name(participant, "latch participant id");
  const std::string who(participant);
  return detail::with_store(db_, [&](detail::latch_store& s) {
    const auto out = s.count_down(name_, who);
    if (!out.found) detail::throw_absent(name_, false);
    if (out.counted || out.armed) return latch_count_down_result{out.counted, out.remaining};  // armed: counted before
    if (out.remaining > 0) detail::throw_absent(name_, true);  // armed, but past its ttl
    // Open: a retry of a count-down that counted (perhaps the one that opened it) is not an error.
    if (s.arrived(name_, out.generation, who)) return latch_count_down_result{false, 0};
    detail::throw_open(name_);
  });
}

latch_wait_result latch::wait() { return wait_until_steady(std::nullopt, {}); }

latch_wait_result latch::wait(std::stop_token stop) { return wait_until_steady(std::nullopt, std::move(stop)); }

latch_wait_result latch::wait_until_steady(std::optional<std::chrono::steady_clock::time_point> deadline,
                                           std::stop_token stop) {
  auto& impl = detail::database_access::impl(db_);
  const auto sql = detail::latch_statements(impl.dialect(), impl.options().table);
  // The latch waited for: the one (created_at) and the generation the first check found. Seeing
  // a later generation of the same latch means this one opened (only an open latch is re-armed
  // without a new created_at); a different latch under the name means this one is gone.
  std::optional<std::pair<std::string, std::int64_t>> waited_for;
  std::optional<latch_wait_result> verdict;
  std::optional<std::chrono::milliseconds> ttl_left;
  const auto check = [&] {
    auto conn = impl.borrow();
    const auto row = detail::latch_store(*conn, *sql).find(name_);
    if (!row) {
      verdict = latch_wait_result::absent;
    } else if (!waited_for) {
      waited_for.emplace(row->instance, row->generation);
      if (row->expired)
        verdict = latch_wait_result::absent;
      else if (row->open())
        verdict = latch_wait_result::open;
    } else if (row->instance != waited_for->first || row->generation < waited_for->second) {
      verdict = latch_wait_result::absent;  // deleted, perhaps replaced by a new latch
    } else if (row->generation > waited_for->second || row->open()) {
      verdict = latch_wait_result::open;
    } else if (row->expired) {
      verdict = latch_wait_result::absent;
    }
    ttl_left = row ? row->expires_in : std::nullopt;
    return verdict.has_value();
  };
  // No lease to outwait; a ttl that runs out makes the latch absent, so wake by then.
  const auto until_ttl = [&]() -> std::optional<std::chrono::milliseconds> {
    if (!ttl_left) return std::nullopt;
    return std::max(*ttl_left, std::chrono::milliseconds::zero());
  };
  if (!detail::retry_until(impl, name_, deadline, {.attempt = check, .lease_remaining = until_ttl}, std::move(stop)))
    return latch_wait_result::timed_out;
  return *verdict;
}

std::optional<latch_state> latch::state() const {
  return detail::with_store(db_, [&](detail::latch_store& s) -> std::optional<latch_state> {
    const auto row = s.find(name_);
    if (!row || row->expired) return std::nullopt;
    latch_state out;
    out.count = row->count;
    out.initial = row->initial;
    out.generation = row->generation;
    out.open = row->open();
    out.armed_at = row->armed_at;
    out.opened_at = row->opened_at.value_or("");
    out.expires_in = row->expires_in;
    out.arrived = s.arrivals(name_, row->generation);
    return out;
  });
}

}  // namespace sqllock
