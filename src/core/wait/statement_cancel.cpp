#include "core/wait/statement_cancel.hpp"

#include <condition_variable>
#include <mutex>
#include <string>

#include "core/handle/database_impl.hpp"
#include "sqllock/error.hpp"
#include "sqllock/statement_deadline.hpp"

namespace sqllock::detail {

bool server_cancel_reaches(const database_impl& impl) noexcept {
  if (statement_cancel_statements(impl.dialect()).cancel.empty()) return false;
  return impl.dialect() != dialect_kind::postgresql || impl.spec().prepare_statements;
}

cancel_on_stop::cancel_on_stop(database_impl& impl, connection& waiting, std::stop_token stop)
    : impl_(impl), sql_(statement_cancel_statements(impl.dialect())), stop_(std::move(stop)) {
  if (!stop_.stop_possible() || !server_cancel_reaches(impl)) return;
  // Asked each time, never kept: behind a transaction-mode pooler (PgBouncer) each transaction of
  // the connection may run on another server session, and a stale id would cancel another
  // client's statement. Asked inside the waiting statement's transaction, where there is one, it
  // names the server session that runs it until that transaction ends — after this scope.
  const auto r = waiting.exec(sql_.session_id, {});
  const field& id = r.rows.at(0).at(0);
  if (!id) throw backend_error("the server did not tell this session's id (" + sql_.session_id + ")", "", 0);
  session_id_ = std::stoll(*id);
  thread_ = std::jthread([this](std::stop_token done) { run(std::move(done)); });
}

cancel_on_stop::~cancel_on_stop() { finish(); }

bool cancel_on_stop::finish() noexcept {
  if (thread_.joinable()) {
    thread_.request_stop();
    thread_.join();
  }
  return sent_.load();
}

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
