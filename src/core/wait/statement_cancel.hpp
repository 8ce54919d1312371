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
// (kCancelBound), so that a cut network cannot hold the waiting thread when the scope ends: it
// joins that thread.
#pragma once

#include <atomic>
#include <chrono>
#include <stop_token>
#include <thread>

#include "dialect/session_lock_sql.hpp"
#include "driver/connection.hpp"

namespace sqllock::detail {

class database_impl;

inline constexpr std::chrono::milliseconds kResendEvery{100};
inline constexpr std::chrono::milliseconds kCancelBound{500};  // plus statement_deadline's 1 s

class cancel_on_stop {
 public:
  // Arms the cancel of what `waiting` runs while this scope lives, on a stop of `stop`. Asks the
  // server for the session's id first when it is not known (one round trip, on the calling
  // thread, once per connection). Nothing at all when `stop` can never be stopped.
  cancel_on_stop(database_impl& impl, connection& waiting, const statement_cancel_sql& sql, std::stop_token stop);
  // Stops sending requests and waits for one in flight (at most kCancelBound).
  ~cancel_on_stop();
  cancel_on_stop(const cancel_on_stop&) = delete;
  cancel_on_stop& operator=(const cancel_on_stop&) = delete;

  // Whether a request was sent: the statement may have ended because of it.
  bool sent() const noexcept { return sent_.load(); }

 private:
  void run(std::stop_token done);

  database_impl& impl_;
  const statement_cancel_sql& sql_;
  std::stop_token stop_;
  std::int64_t session_id_ = 0;
  std::atomic<bool> sent_{false};
  std::jthread thread_;  // last: stops (and is joined) first
};

}  // namespace sqllock::detail
