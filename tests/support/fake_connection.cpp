#include "support/fake_connection.hpp"

#include <algorithm>
#include <string>
#include <variant>

#include "sqllock/error.hpp"

namespace test {

std::string text(const d::value& v) {
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  if (const auto* i = std::get_if<std::int64_t>(&v)) return std::to_string(*i);
  return "NULL";
}

d::result rows(std::vector<d::row> r, std::uint64_t affected) {
  d::result out;
  out.rows = std::move(r);
  out.affected = affected;
  return out;
}

void fake_server::on(std::string sql, responder respond, int times) {
  std::lock_guard lock(mu_);
  rules_.push_back({std::move(sql), std::move(respond), times});
}

void fake_server::on(std::string sql, d::result answer, int times) {
  on(
      std::move(sql), [answer](std::span<const d::value>) { return answer; }, times);
}

void fake_server::fail(std::string sql, std::function<void()> fail, int times) {
  on(
      std::move(sql),
      [fail = std::move(fail)](std::span<const d::value>) -> d::result {
        fail();
        return {};
      },
      times);
}

std::unique_ptr<d::connection> fake_server::connect() {
  std::lock_guard lock(mu_);
  return std::make_unique<fake_connection>(shared_from_this(), ++opened_);
}

d::result fake_server::run(int connection, std::string_view sql, std::span<const d::value> params) {
  responder respond;
  {
    std::lock_guard lock(mu_);
    calls_.push_back({std::string(sql), {params.begin(), params.end()}, connection});
    for (auto& r : rules_) {
      if (r.left == 0 || r.sql != sql) continue;
      if (r.left > 0) --r.left;
      respond = r.respond;
      break;
    }
    if (!respond) unexpected_.emplace_back(sql);
  }
  ran_.notify_all();
  if (!respond) throw sqllock::backend_error("fake_server: no rule answers this statement", "XX000", 0);
  return respond(params);  // outside the mutex: a responder may block until the test lets it go
}

std::vector<fake_call> fake_server::calls() const {
  std::lock_guard lock(mu_);
  return calls_;
}

std::size_t fake_server::count(std::string_view sql) const {
  std::lock_guard lock(mu_);
  return static_cast<std::size_t>(
      std::count_if(calls_.begin(), calls_.end(), [&](const auto& c) { return c.sql == sql; }));
}

bool fake_server::await(std::string_view sql, std::size_t n, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mu_);
  return ran_.wait_for(lock, timeout, [&] {
    return static_cast<std::size_t>(
               std::count_if(calls_.begin(), calls_.end(), [&](const auto& c) { return c.sql == sql; })) >= n;
  });
}

std::vector<std::string> fake_server::unexpected() const {
  std::lock_guard lock(mu_);
  return unexpected_;
}

int fake_server::connections_opened() const {
  std::lock_guard lock(mu_);
  return opened_;
}

d::result fake_connection::exec(std::string_view sql, std::span<const d::value> params) {
  if (broken_) throw sqllock::connection_error("fake connection: broken");
  try {
    return server_->run(id_, sql, params);
  } catch (const sqllock::connection_error&) {
    broken_ = true;
    throw;
  }
}

d::result fake_connection::exec_direct(std::string_view sql) { return exec(sql, {}); }

}  // namespace test
