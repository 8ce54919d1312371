// A connection whose every statement has a time limit: the decorator the pool hands out.
//
// Before each statement it arms the statement timer (statement_timer.hpp) with the connection's
// socket and the statement's deadline (statement_bound.hpp: the connection's bound, or the calling
// thread's scopes); the timer shuts the socket down if the deadline passes while the statement is
// in flight. The statement then fails with connection_error saying it exceeded its bound and how to
// raise it, and the connection reports broken(), so the pool discards it. A statement that
// returned as its deadline passed keeps its result; the connection is discarded all the same.
//
// Closing the connection is bounded the same way: a client library may talk to the server as it
// closes (libpqxx sends UNLISTEN, SOCI DEALLOCATE, every library its goodbye), which on a frozen
// network would block the destructor. So is LISTEN; a wait for notifications gets its own timeout
// on top of the bound.
//
// A cut-off ends the call, not the server's work: a statement waiting on the server for a lock goes
// on waiting — and keeps the locks it took — until the server notices the closed socket, which
// MariaDB does not do during a lock wait. So the opener may give the connection a way to tell the
// server (tell_server_on_cut_off): it runs on a thread of its own after each cut-off (it may itself
// block on a cut network, and the caller must not wait for it).
//
// Drivers whose connection exposes no socket (socket() == -1: SQLite, which has no network, or a
// MySQL connection whose socket could not be identified) run their statements unwatched.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "driver/connection.hpp"
#include "driver/statement_timer.hpp"

namespace sqllock::detail {

class bounded_connection final : public connection, public notification_source {
 public:
  // `bound`: how long a statement may take (positive). `display` names the database in errors.
  bounded_connection(std::unique_ptr<connection> inner, std::chrono::milliseconds bound, statement_timer& timer,
                     std::string display);
  ~bounded_connection() override;

  result exec(std::string_view sql, std::span<const value> params) override;
  result exec_direct(std::string_view sql) override;
  void prepare(std::string_view sql, std::size_t param_count) override;
  bool broken() const noexcept override { return cut_ || inner_->broken(); }
  int socket() const noexcept override { return cut_ ? -1 : inner_->socket(); }
  void abandon() noexcept override { inner_->abandon(); }
  std::string_view driver_name() const noexcept override { return inner_->driver_name(); }
  notification_source* notifications() noexcept override { return inner_->notifications() ? this : nullptr; }

  // Runs `tell` (on a detached thread, exceptions swallowed) whenever a statement is cut off.
  void tell_server_on_cut_off(std::function<void()> tell) { tell_server_ = std::move(tell); }

  void listen(const std::string& channel) override;
  std::vector<std::string> await(std::chrono::milliseconds timeout) override;

 private:
  template <class F>
  auto bounded(F&& run, std::chrono::milliseconds extra = {});
  void cut_off();  // marks the connection cut and tells the server

  std::unique_ptr<connection> inner_;
  std::chrono::milliseconds bound_;
  statement_timer& timer_;
  std::string display_;
  bool cut_ = false;  // the timer shut the socket down
  std::function<void()> tell_server_;
};

// How a statement-bound failure reads: "statement to <display> got no answer within <bound>…".
// `by_caller`: the caller's deadline decided the bound, not the connection's own.
std::string bound_exceeded_message(const std::string& display, std::chrono::milliseconds bound, bool by_caller);

}  // namespace sqllock::detail
