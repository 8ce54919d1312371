// A scripted stand-in for a database connection (src/driver/connection.hpp), for unit tests of
// the core's timing and bookkeeping: no server, no network, answers in microseconds.
//
// A fake_server holds the script every connection it opens shares: rules that match a statement
// by its exact text (take the text from the handle's dialect_sql, e.g. impl.sql().renew) and
// answer it — with rows, affected rows, or by throwing (connection_error breaks the connection,
// as a real driver's would). Rules are tried in the order they were added; a rule with a count is
// used up after that many statements. A statement no rule answers is recorded in unexpected() and
// fails with backend_error, so a test sees it. Every statement is logged with its parameters.
//
// Thread-safe: the core's background threads (watchdog, keepalive, pingers) run statements
// while the test thread scripts and inspects.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "driver/connection.hpp"

namespace test {

namespace d = sqllock::detail;

// A statement a fake connection ran.
struct fake_call {
  std::string sql;
  std::vector<d::value> params;
  int connection = 0;  // which connection of the server (1, 2, … in opening order)
};

// An answer: rows as text (std::nullopt is NULL) and an affected-row count.
d::result rows(std::vector<d::row> r, std::uint64_t affected = 0);

// A bound parameter as the server would compare it: text, a number's digits, or "NULL".
std::string text(const d::value& v);

class fake_server : public std::enable_shared_from_this<fake_server> {
 public:
  using responder = std::function<d::result(std::span<const d::value> params)>;
  static constexpr int forever = -1;

  // Answers statements whose text is `sql` with `respond`, `times` times (forever: every time).
  void on(std::string sql, responder respond, int times = forever);
  // Answers `sql` with `answer`, `times` times.
  void on(std::string sql, d::result answer, int times = forever);
  // Makes `sql` throw what `fail` throws (e.g. connection_error), `times` times.
  void fail(std::string sql, std::function<void()> fail, int times = forever);

  // A new connection on this server's script (the handle's connect seam).
  std::unique_ptr<d::connection> connect();

  std::vector<fake_call> calls() const;
  // How many statements with text `sql` ran so far.
  std::size_t count(std::string_view sql) const;
  // Waits (real time, up to `timeout`) until `sql` ran at least `n` times.
  bool await(std::string_view sql, std::size_t n, std::chrono::milliseconds timeout = std::chrono::seconds(5)) const;
  std::vector<std::string> unexpected() const;
  int connections_opened() const;

 private:
  friend class fake_connection;
  struct rule {
    std::string sql;
    responder respond;
    int left;
  };
  d::result run(int connection, std::string_view sql, std::span<const d::value> params);

  mutable std::mutex mu_;
  mutable std::condition_variable ran_;
  std::vector<rule> rules_;
  std::vector<fake_call> calls_;
  std::vector<std::string> unexpected_;
  int opened_ = 0;
};

// One connection of a fake_server.
class fake_connection final : public d::connection {
 public:
  fake_connection(std::shared_ptr<fake_server> server, int id) : server_(std::move(server)), id_(id) {}
  d::result exec(std::string_view sql, std::span<const d::value> params) override;
  d::result exec_direct(std::string_view sql) override;
  bool broken() const noexcept override { return broken_; }
  void abandon() noexcept override { broken_ = true; }
  std::string_view driver_name() const noexcept override { return "fake"; }

 private:
  std::shared_ptr<fake_server> server_;
  const int id_;
  std::atomic<bool> broken_{false};
};

}  // namespace test
