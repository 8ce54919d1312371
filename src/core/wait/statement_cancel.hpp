// Waits on the server that a std::stop_token can end: while a session-lock statement waits on its
// connection (pg_advisory_lock, GET_LOCK), a stop requested on the caller's token cancels it from
// another connection of the handle's pool (pg_cancel_backend, KILL QUERY), and the session lives on
// with every lock it holds. The client library is not involved: the request is SQL, so it works
// the same through every driver (libpq's own cancel key is not reachable through libpqxx).
//
// The server ignores a request that reaches it before the statement starts, so it is sent again
// every kResendEvery until the statement ends; and one that reaches it after the statement ended is
// ignored too (PostgreSQL ignores a cancel while it reads the next command, MariaDB resets a
// KILL QUERY when the next command starts). Requests are sent from a thread of the scope, so the
// thread that asks for the stop never waits on the network, and each under a bound of its own
// (kCancelBound, and database_options::connect_timeout when the pool must open a connection for
// it), which is the most a cut network can add to the end of the scope: it joins that thread.
// A stop needs the server to answer that second connection: on a silently cut network the waiting
// statement runs on until its own bound ends it (a timed wait's deadline), or TCP gives up.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <stop_token>
#include <thread>

#include "dialect/transaction_sql.hpp"
#include "driver/connection.hpp"

namespace sqllock::detail {

class database_impl;

// Whether a stop can cancel a waiting statement of the handle `impl`: not on SQLite, whose waits
// are the client's own, and not behind a transaction-mode pooler (PostgreSQL with ?prepare=off):
// its small pool of server connections may have none free for the request while the waiter and
// the holder keep theirs (PgBouncer's default_pool_size counts both). There a wait that can be
// stopped waits in slices instead (wait_in_stop_slices, below).
bool server_cancel_reaches(const database_impl& impl) noexcept;
inline constexpr std::chrono::milliseconds kStopSlice{250};

// A stoppable wait that no cancel can end on the server — behind a transaction-mode pooler, or in
// the caller's own transaction, where sqllock has no connection to send one from: runs
// `attempt(slice_end)`, a wait bounded by slice_end, every kStopSlice until it returns something
// true (returned), `until` has passed, or a stop is requested (then a value-initialized result:
// false, nullopt). The first attempt always runs. Each attempt waits afresh, so other waiters may
// be granted between two of them; on MySQL, whose innodb_lock_wait_timeout counts whole seconds,
// a slice lasts a second.
template <class Attempt>
auto wait_in_stop_slices(const std::stop_token& stop, std::chrono::steady_clock::time_point until, Attempt&& attempt)
    -> decltype(attempt(until)) {
  for (bool first = true;; first = false) {
    const auto now = std::chrono::steady_clock::now();
    if (!first && (stop.stop_requested() || now >= until)) return {};
    if (auto got = attempt(std::min(until, now + kStopSlice))) return got;
  }
}

inline constexpr std::chrono::milliseconds kResendEvery{100};
inline constexpr std::chrono::milliseconds kCancelBound{500};  // plus statement_deadline's 1 s

class cancel_on_stop {
 public:
  // Arms the cancel of what `waiting`, a connection of `impl`'s server, runs while this scope
  // lives, on a stop of `stop`. Asks the server for the session's id first (one round trip, on
  // the calling thread). Nothing at all when `stop` can never be stopped, or on SQLite.
  cancel_on_stop(database_impl& impl, connection& waiting, std::stop_token stop);
  // finish().
  ~cancel_on_stop();
  cancel_on_stop(const cancel_on_stop&) = delete;
  cancel_on_stop& operator=(const cancel_on_stop&) = delete;

  // Stops sending requests and waits for one in flight (bounded as above); then whether a request
  // was sent: the statement may have ended because of it.
  bool finish() noexcept;

 private:
  void run(std::stop_token done);

  database_impl& impl_;
  const statement_cancel_sql& sql_;
  std::stop_token stop_;
  std::int64_t session_id_ = 0;
  std::atomic<bool> sent_{false};
  std::jthread thread_;  // last: stops (and is joined) first
};

// Runs `statement()`, one that waits on `waiting`, in a cancel_on_stop scope, and returns what it
// returns or throws what it throws. `cancel_sent` then tells whether a cancel request was sent (the
// statement may have ended because of it), and no request is in flight any more, so nothing the
// caller runs next on the session can be cancelled by one.
template <class Statement>
decltype(auto) run_stoppable(database_impl& impl, connection& waiting, std::stop_token stop, bool& cancel_sent,
                             Statement&& statement) {
  cancel_on_stop cancel(impl, waiting, std::move(stop));
  struct report {
    cancel_on_stop& scope;
    bool& sent;
    ~report() { sent = scope.finish(); }
  } const on_end{cancel, cancel_sent};
  return statement();
}

}  // namespace sqllock::detail
