// The libpqxx driver: one PostgreSQL connection behind sqllock's driver seam.
//
// Statements run outside any pqxx transaction object (pqxx::nontransaction): the core sends
// BEGIN / COMMIT itself as SQL, so pqxx must not wrap statements in transactions of its own.
// Like every connection, use it from one thread at a time.
// Only code inside src/ includes this header; it is the one place that exposes pqxx types.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <pqxx/connection>
#include <pqxx/errorhandler>
#include <pqxx/notification>

#include "driver/connection.hpp"
#include "driver/pqxx/pqxx_support.hpp"
#include "driver/statement_cache.hpp"

namespace sqllock::detail {

class pqxx_connection final : public connection, public notification_source {
 public:
  // Takes an open connection. `display` (the URI without its password) names it in errors.
  // prepare: statements are prepared under names derived from their text; false runs them
  // unnamed (?prepare=off; see driver/pg_statements.hpp).
  pqxx_connection(std::unique_ptr<pqxx::connection> native, std::string display, bool prepare = true);
  ~pqxx_connection() override;

  result exec(std::string_view sql, std::span<const value> params) override;
  result exec_direct(std::string_view sql) override;
  void prepare(std::string_view sql, std::size_t param_count) override;
  bool broken() const noexcept override { return broken_; }
  int socket() const noexcept override { return broken_ || !native_ ? -1 : native_->sock(); }
  void abandon() noexcept override;
  std::string_view driver_name() const noexcept override { return "pqxx"; }
  notification_source* notifications() noexcept override { return this; }

  void listen(const std::string& channel) override;
  std::vector<std::string> await(std::chrono::milliseconds timeout) override;

  // The underlying connection, for features the seam does not cover (LISTEN / NOTIFY). Callers
  // must translate pqxx exceptions themselves and must not use it once broken() is true or
  // after abandon(). Not thread-safe, like the rest of this object.
  pqxx::connection& native() noexcept { return *native_; }

 private:
  template <class F>
  result guarded(F&& run);

  std::unique_ptr<pqxx::connection> native_;
  // Keeps server NOTICEs (e.g. "relation already exists, skipping") off stderr. Declared after
  // native_ so that it is unregistered before the connection goes away.
  std::unique_ptr<pqxx::quiet_errorhandler> quiet_;
  struct prepared {
    std::string name;  // the statement's name within pqxx and on the server; empty: run unnamed
    bool query;        // reads only: its row count is not an affected-row count
  };
  statement_cache<prepared> statements_;
  // The cache entry of `sql`, registered with pqxx (which prepares it on the server on first use).
  statement_cache<prepared>::entry& cached(std::string_view sql, std::size_t param_count);
  std::string display_;
  bool prepare_;
  bool broken_ = false;
  // LISTEN subscriptions; declared last so they unsubscribe before the connection closes.
  std::vector<std::string> pending_;  // payloads received, not yet returned by await()
  std::vector<std::unique_ptr<pqxx::notification_receiver>> receivers_;
};

}  // namespace sqllock::detail
