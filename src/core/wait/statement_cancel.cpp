#include "core/wait/statement_cancel.hpp"

#include <condition_variable>
#include <mutex>
#include <string>

#include "core/handle/database_impl.hpp"
#include "sqllock/error.hpp"
#include "sqllock/statement_deadline.hpp"

namespace sqllock::detail {

cancel_on_stop::cancel_on_stop(database_impl& impl, connection& waiting, const statement_cancel_sql& sql,
                               std::stop_token stop)
    : impl_(impl), sql_(sql), stop_(std::move(stop)) {
  if (!stop_.stop_possible()) return;
  if (waiting.server_session_id == 0) {
    const auto r = waiting.exec(sql_.session_id, {});
    const field& id = r.rows.at(0).at(0);
    if (!id) throw backend_error("the server did not tell this session's id (" + sql_.session_id + ")", "", 0);
    waiting.server_session_id = std::stoll(*id);
  }
  session_id_ = waiting.server_session_id;
  thread_ = std::jthread([this](std::stop_token done) { run(std::move(done)); });
}

cancel_on_stop::~cancel_on_stop() = default;  // thread_ is asked to stop and joined

void cancel_on_stop::run(std::stop_token done) {
  std::mutex m;
  std::condition_variable_any cv;
  const std::stop_callback wake(stop_, [&] {
    const std::lock_guard lock(m);
    cv.notify_all();
  });
  std::unique_lock lock(m);
  if (!cv.wait(lock, done, [&] { return stop_.stop_requested(); })) return;  // the statement ended first
  while (!done.stop_requested()) {
    lock.unlock();
    sent_ = true;  // from here the statement may end because of a request, even one whose reply is lost
    try {
      const statement_deadline bound(std::chrono::steady_clock::now() + kCancelBound);
      auto conn = impl_.borrow();
      const value id[] = {session_id_};
      conn->exec(sql_.cancel, id);
    } catch (const std::exception&) {
      // The server is out of reach: the statement runs on until it ends, or its own bound ends it.
    }
    lock.lock();
    cv.wait_for(lock, done, kResendEvery, [] { return false; });
  }
}

}  // namespace sqllock::detail
