// sqllock::named_lock: MySQL/MariaDB GET_LOCK on a pinned session.
#include "sqllock/named_lock.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <thread>

#include "core/handle/database_impl.hpp"
#include "core/handle/error_translation.hpp"
#include "core/handle/galera_guard.hpp"
#include "common/lock_name.hpp"
#include "core/session/session_lock.hpp"
#include "core/wait/statement_cancel.hpp"
#include "core/wait/wait_bounds.hpp"
#include "common/sha256.hpp"
#include "sqllock/error.hpp"

namespace sqllock {
namespace detail {
namespace {

using steady = std::chrono::steady_clock;

// One round of lock(): long enough to cost nothing, short enough to stay far from any limit.
constexpr std::chrono::seconds kWaitRound{60};

// `d` (≥ 0) as decimal seconds with microseconds, e.g. "0.250000".
std::string seconds_text(steady::duration d) {
  const auto us = std::max<long long>(0, std::chrono::ceil<std::chrono::microseconds>(d).count());
  char text[32];
  std::snprintf(text, sizeof text, "%lld.%06lld", us / 1000000, us % 1000000);
  return text;
}

class named_protocol final : public session_lock_protocol {
 public:
  // `impl` outlives the protocol: the session_lock that owns it keeps a handle of it.
  named_protocol(database_impl& impl, std::string name, std::string server_name, std::string description)
      : impl_(impl), sql_(named_lock_statements(impl.dialect())), name_(std::move(name)),
        server_name_(std::move(server_name)), description_(std::move(description)) {}

  bool acquire(connection& conn, lock_mode, std::optional<steady::time_point> deadline, std::stop_token stop,
               attempt& state) override {
    // GET_LOCK is node-local on Galera: refused on a multi-node cluster unless the URI says every
    // client uses one node. Asked on the handle's first lock only, on this session; it never waits.
    refuse_on_galera(impl_, conn, node_local_lock::get_lock, name_);
    try {
      return wait(conn, deadline, stop, state);
    } catch (const deadlock&) {
      throw;  // the server refused the request: nothing was taken
    } catch (const backend_error&) {
      // An error the session survived may have hidden a grant (a client error whose answer was
      // lost): reset the session before the pool reuses it, so that no level stays behind.
      state.dirty = true;
      throw;
    }
  }

  bool wait(connection& conn, std::optional<steady::time_point> deadline, const std::stop_token& stop, attempt& state) {
    // A free lock costs one round trip, and the first statement never waits (see attempt).
    if (*get_lock(conn, "0")) return true;  // NULL throws here (no stop can have come yet)
    state.answered = true;
    while (true) {
      const auto now = steady::now();
      if ((deadline && now >= *deadline) || stop.stop_requested()) return false;
      // Rounds of at most kWaitRound, deadline or not: a far deadline (try_lock_for(hours::max()))
      // would otherwise be a timeout the server cannot take.
      const auto wait = deadline ? std::min<steady::duration>(*deadline - now, kWaitRound) : kWaitRound;
      {
        const server_wait_scope server_waits(wait);  // the statement's bound covers its wait
        // A stop cancels the waiting GET_LOCK (KILL QUERY), which then returns NULL — or, had the
        // lock been granted as the request came, an error; whether this session holds the lock
        // is asked once the scope ended (no request in flight any more).
        bool cancel_sent = false;
        std::optional<bool> got;
        try {
          got = run_stoppable(impl_, conn, stop, cancel_sent, [&] {
            return get_lock(conn, seconds_text(wait), /*null_is_error=*/!stop.stop_possible());
          });
        } catch (const backend_error&) {
          if (!cancel_sent) throw;
        }
        if (got && *got) return true;
        if (cancel_sent) return held_now(conn);  // a grant is kept, a stop is not undone
        if (!got) throw_interrupted();
      }
      if (deadline && steady::now() >= *deadline) return false;
      // Back before the deadline with a 0: MySQL rounds the timeout to whole seconds. Ask again,
      // pausing briefly if the server did not wait at all.
      if (deadline && steady::now() - now < wait / 2)
        std::this_thread::sleep_for(
            std::min<steady::duration>(std::chrono::milliseconds(10), *deadline - steady::now()));
    }
  }

  // One GET_LOCK; true when it returned 1, false for 0 (timed out), nullopt for NULL (interrupted:
  // a KILL QUERY) unless `null_is_error`, which throws then.
  std::optional<bool> get_lock(connection& conn, const std::string& timeout, bool null_is_error = true) {
    result r;
    try {
      r = conn.exec(sql_.get_lock, std::vector<value>{server_name_, timeout});
    } catch (const backend_error& e) {
      const std::string subject = description_ + " could not be taken";
      rethrow_classified(impl_.dialect(), e,
                         {.subject = subject,
                          .rolled_back = "the GET_LOCK wait (nothing was taken)",
                          .retry = "the lock, after releasing other locks this owner holds (they are part of "
                                   "the cycle)"});
    }
    const field& got = r.rows.at(0).at(0);
    if (!got) {
      if (null_is_error) throw_interrupted();
      return std::nullopt;
    }
    return *got == "1";
  }

  [[noreturn]] void throw_interrupted() const {
    throw backend_error("GET_LOCK for " + description_ +
                            " returned NULL: the wait was interrupted (KILL QUERY) "
                            "or the server refused the name",
                        "", 0);
  }

  // Whether this session holds the lock, asked after a cancelled wait.
  bool held_now(connection& conn) {
    const auto r = conn.exec(sql_.held, std::vector<value>{server_name_});
    const field& held = r.rows.at(0).at(0);
    return held && *held == "1";
  }

  bool release(connection& conn, lock_mode) override {
    const auto r = conn.exec(sql_.release_lock, std::vector<value>{server_name_});
    const field& released = r.rows.at(0).at(0);
    return released && *released == "1";
  }

  const std::string& description() const noexcept override { return description_; }

 private:
  database_impl& impl_;
  const named_lock_sql& sql_;
  const std::string name_;
  const std::string server_name_;
  const std::string description_;
};

}  // namespace
}  // namespace detail

std::string named_lock_server_name(std::string_view name) {
  detail::validate_lock_name(name);
  return "sqllock:" + detail::sha256_hex(name).substr(0, 56);
}

named_lock::named_lock(const database& db, std::string_view name, named_lock_options options)
    : name_(name), server_name_(named_lock_server_name(name)) {
  state_ = std::make_unique<detail::session_lock>(
      db,
      std::make_unique<detail::named_protocol>(detail::database_access::impl(db), name_, server_name_,
                                               "named lock '" + name_ + "'"),
      std::move(options));
}

named_lock::~named_lock() = default;

void named_lock::lock() { state_->acquire(detail::lock_mode::exclusive, std::nullopt); }
bool named_lock::lock(std::stop_token stop) {
  return state_->acquire(detail::lock_mode::exclusive, std::nullopt, std::move(stop));
}
bool named_lock::try_lock() { return state_->acquire(detail::lock_mode::exclusive, std::chrono::steady_clock::now()); }
bool named_lock::try_lock_until_steady(std::chrono::steady_clock::time_point deadline, std::stop_token stop) {
  return state_->acquire(detail::lock_mode::exclusive, deadline, std::move(stop));
}
void named_lock::unlock() noexcept { state_->unlock(detail::lock_mode::exclusive); }
void named_lock::release() { state_->release(detail::lock_mode::exclusive); }
bool named_lock::holds() const noexcept { return state_->holds(detail::lock_mode::exclusive); }
std::int64_t named_lock::count() const noexcept { return state_->count(detail::lock_mode::exclusive); }
std::stop_token named_lock::lost_token() const { return state_->lost_token(); }
const std::string& named_lock::name() const noexcept { return name_; }
const std::string& named_lock::server_name() const noexcept { return server_name_; }

}  // namespace sqllock
