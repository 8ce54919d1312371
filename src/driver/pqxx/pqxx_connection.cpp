#include "driver/pqxx/pqxx_connection.hpp"

#include <unistd.h>

#include <optional>
#include <utility>
#include <vector>

#include <pqxx/except>
#include <pqxx/nontransaction>
#include <pqxx/prepared_statement>
#include <pqxx/result>

#include "driver/abandon.hpp"
#include "driver/pg_statements.hpp"
#include "driver/statement_kind.hpp"
#include "sqllock/error.hpp"

namespace sqllock::detail {
pqxx_connection::pqxx_connection(std::unique_ptr<pqxx::connection> native, std::string display, bool prepare)
    : native_(std::move(native)), quiet_(std::make_unique<pqxx::quiet_errorhandler>(*native_)),
      statements_(placeholder_style::dollar), display_(std::move(display)), prepare_(prepare) {
  // libpqxx 6 silently reconnects a broken connection on next use. A new session would have lost
  // the old one's session locks without anyone noticing, so broken must stay broken.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  native_->inhibit_reactivation(true);
#pragma GCC diagnostic pop
}

pqxx_connection::~pqxx_connection() = default;

statement_cache<pqxx_connection::prepared>::entry& pqxx_connection::cached(std::string_view sql,
                                                                           std::size_t param_count) {
  return statements_.get(
      sql, param_count,
      [&](const native_statement& native) {
        prepared p{prepare_ ? pg_statement_name(native.sql) : std::string(), is_query_statement(sql)};
        if (prepare_) native_->prepare(p.name, native.sql);  // sent to the server on first execution
        return p;
      },
      [&](prepared& p) {
        if (!p.name.empty()) native_->unprepare(p.name);
      });
}

void pqxx_connection::prepare(std::string_view sql, std::size_t param_count) {
  guarded([&] {
    const auto& statement = cached(sql, param_count);
    if (!statement.handle.name.empty()) native_->prepare_now(statement.handle.name);
    return result{};
  });
}

result pqxx_connection::exec(std::string_view sql, std::span<const value> params) {
  return guarded([&] {
    const auto& statement = cached(sql, params.size());
    std::vector<std::string> storage;
    const std::vector<const char*> texts = pqxx_parameter_texts(params, storage);
    const auto dynamic = pqxx::prepare::make_dynamic_params(texts);
    pqxx::nontransaction tx(*native_);
    if (statement.handle.name.empty())
      return pqxx_to_result(tx.exec_params(statement.native.sql, dynamic), statement.handle.query);
    try {
      return pqxx_to_result(tx.exec_prepared(statement.handle.name, dynamic), statement.handle.query);
    } catch (const pqxx::sql_error& e) {
      if (!is_pg_statement_name_error(e.sqlstate())) throw;
      // pqxx's record of what this connection prepared no longer matches the server session.
      broken_ = true;
      throw backend_error(pqxx_message(e.what()) + pg_statement_name_hint(), e.sqlstate(), 0);
    }
  });
}

result pqxx_connection::exec_direct(std::string_view sql) {
  return guarded([&] {
    pqxx::nontransaction tx(*native_);
    return pqxx_to_result(tx.exec(std::string(sql)), is_query_statement(sql));
  });
}

void pqxx_connection::abandon() noexcept {
  broken_ = true;
  if (!native_) return;
  for (auto& r : receivers_) leak_on_purpose(r);  // they would UNLISTEN on the parent's session
  // Closing our copy of the socket leaves the parent's copy, and so its session, untouched.
  if (const int fd = native_->sock(); fd >= 0) ::close(fd);
  leak_on_purpose(quiet_);
  leak_on_purpose(native_);
}

namespace {

// Queues the payloads of one channel's notifications for pqxx_connection::await.
class payload_receiver final : public pqxx::notification_receiver {
 public:
  payload_receiver(pqxx::connection_base& c, const std::string& channel, std::vector<std::string>& sink)
      : pqxx::notification_receiver(c, channel), sink_(sink) {}
  void operator()(const std::string& payload, int) override { sink_.push_back(payload); }

 private:
  std::vector<std::string>& sink_;
};

}  // namespace

void pqxx_connection::listen(const std::string& channel) {
  guarded([&] {
    receivers_.push_back(std::make_unique<payload_receiver>(*native_, channel, pending_));
    native_->get_notifs();  // pqxx issues LISTEN lazily; make sure it has been sent
    return result{};
  });
}

std::vector<std::string> pqxx_connection::await(std::chrono::milliseconds timeout) {
  guarded([&] {
    if (pending_.empty()) {
      const auto us = std::chrono::duration_cast<std::chrono::microseconds>(timeout).count();
      native_->await_notification(static_cast<long>(us / 1000000), static_cast<long>(us % 1000000));
    }
    return result{};
  });
  return std::exchange(pending_, {});
}

template <class F>
result pqxx_connection::guarded(F&& run) {
  if (broken_) {
    throw connection_error("connection to " + display_ + " is broken or was abandoned; use a new one");
  }
  try {
    return run();
  } catch (const pqxx::pqxx_exception&) {
    rethrow_pqxx_error(*native_, display_, broken_);
  }
}

}  // namespace sqllock::detail
