#include "driver/bounded_connection.hpp"

#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>

#include "driver/statement_bound.hpp"
#include "sqllock/error.hpp"

namespace sqllock::detail {
namespace {

std::string seconds_text(std::chrono::milliseconds d) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g s", static_cast<double>(d.count()) / 1000.0);
  return text;
}

}  // namespace

std::string bound_exceeded_message(const std::string& display, std::chrono::milliseconds bound, bool by_caller) {
  std::string m = "a statement to " + display + " got no answer ";
  if (by_caller) {
    m += "by the caller's deadline (plus " + seconds_text(kDeadlineGrace) +
         "), so it was cut off: the network or the server stopped answering";
  } else {
    m += "within its bound of " + seconds_text(bound) +
         " (statement_timeout), so it was cut off: the network or the server stopped answering, or the "
         "statement needs longer (raise ?statement_timeout= in the URI or database_options::statement_timeout)";
  }
  return m + "; the connection was closed and the pool opens a new one";
}

bounded_connection::bounded_connection(std::unique_ptr<connection> inner, std::chrono::milliseconds bound,
                                       statement_timer& timer, std::string display)
    : inner_(std::move(inner)), bound_(bound), timer_(timer), display_(std::move(display)) {}

namespace {

// The tells still running. A tell uses the client library (it connects and sends a statement),
// whose global state the process's exit destroys: exit() first waits a moment for them, so a tell
// on a live network (milliseconds) always finishes. One hung on a cut network is given up on.
struct tells_in_flight {
  std::mutex mu;
  std::condition_variable done;
  int running = 0;
  pid_t owner = 0;  // the process whose threads they are (a forked child has none of them)

  static tells_in_flight& process() {
    static auto* t = new tells_in_flight;  // never destroyed: a tell may outlive every static
    return *t;
  }
  static void wait_at_exit() {
    auto& t = process();
    std::unique_lock lock(t.mu);
    if (t.owner != ::getpid()) return;
    t.done.wait_for(lock, std::chrono::seconds(2), [&] { return t.running == 0; });
  }
};

}  // namespace

void bounded_connection::cut_off() {
  cut_ = true;
  if (!tell_server_) return;
  static std::once_flag at_exit;
  std::call_once(at_exit, [] { std::atexit(tells_in_flight::wait_at_exit); });
  auto& tells = tells_in_flight::process();
  {
    std::lock_guard lock(tells.mu);
    if (tells.owner != ::getpid()) {  // the first tell of this process (or of a forked child)
      tells.running = 0;
      tells.owner = ::getpid();
    }
    ++tells.running;
  }
  try {
    std::thread([tell = tell_server_, &tells]() noexcept {
      try {
        tell();
      } catch (...) {  // the server ends the statement by its own limits then
      }
      std::lock_guard lock(tells.mu);
      --tells.running;
      tells.done.notify_all();
    }).detach();
  } catch (const std::system_error&) {  // no thread to be had: as above
    std::lock_guard lock(tells.mu);
    --tells.running;
  }
}

template <class F>
auto bounded_connection::bounded(F&& run, std::chrono::milliseconds extra) {
  if (cut_) throw connection_error("connection to " + display_ + " was cut off at its statement bound; use a new one");
  const auto deadline = deadline_of_statement(statement_timer::clock::now(), bound_ + extra);
  statement_timer::ticket ticket = timer_.arm(inner_->socket(), deadline.at);
  try {
    auto r = run();
    if (ticket.disarm()) cut_ = true;  // answered just as the bound passed: the result stands, the socket is gone
    return r;
  } catch (const std::exception& e) {
    if (!ticket.disarm()) throw;
    cut_off();
    // Whatever the client library made of the shut-down socket, the cause is the bound.
    throw connection_error(bound_exceeded_message(display_, bound_, deadline.by_caller) + " (" + e.what() + ")");
  }
}

bounded_connection::~bounded_connection() {
  if (!inner_) return;
  const auto ticket = timer_.arm(inner_->socket(), statement_timer::clock::now() + bound_);
  inner_.reset();  // may talk to the server (UNLISTEN, DEALLOCATE, goodbye): bounded like a statement
}

void bounded_connection::listen(const std::string& channel) {
  bounded([&] {
    inner_->notifications()->listen(channel);
    return 0;
  });
}

std::vector<std::string> bounded_connection::await(std::chrono::milliseconds timeout) {
  return bounded([&] { return inner_->notifications()->await(timeout); }, timeout);
}

result bounded_connection::exec(std::string_view sql, std::span<const value> params) {
  return bounded([&] { return inner_->exec(sql, params); });
}

void bounded_connection::prepare(std::string_view sql, std::size_t param_count) {
  bounded([&] {
    inner_->prepare(sql, param_count);
    return 0;
  });
}

result bounded_connection::exec_direct(std::string_view sql) {
  return bounded([&] { return inner_->exec_direct(sql); });
}

}  // namespace sqllock::detail
