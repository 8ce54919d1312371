// Glue for include/sqllock/adapters/pqxx.hpp: wraps the application's transaction as a
// connection and hands it to the core. No lock semantics here.
#include "sqllock/adapters/pqxx.hpp"

#include <pqxx/nontransaction>

#include "core/lease/lease_guard.hpp"
#include "core/session/row_lock_core.hpp"
#include "driver/pqxx/pqxx_tx_connection.hpp"
#include "sqllock/error.hpp"

namespace sqllock::detail {

bool pqxx_lock_row(pqxx::transaction_base& tx, std::string_view name, row_wait_kind wait,
                   std::chrono::steady_clock::time_point deadline, std::string_view table, std::stop_token stop) {
  if (dynamic_cast<pqxx::nontransaction*>(&tx) != nullptr) {
    throw invalid_argument(
        "a row lock needs a transaction, but pqxx::nontransaction runs each statement on its "
        "own, where FOR UPDATE ends at once; use pqxx::work (or another transaction)");
  }
  pqxx_tx_connection conn(tx);
  return lock_row_in_caller_transaction(conn, dialect_kind::postgresql, table, name, {wait, deadline, std::move(stop)});
}

}  // namespace sqllock::detail

namespace sqllock {

void guard(pqxx::transaction_base& tx, const lease_claim& claim) {
  if (dynamic_cast<pqxx::nontransaction*>(&tx) != nullptr) {
    throw invalid_argument(
        "guard() needs a transaction, but pqxx::nontransaction runs each statement on its own, where the "
        "guard's row lock ends at once; use pqxx::work (or another transaction)");
  }
  detail::pqxx_tx_connection conn(tx);
  detail::guard_in_caller_transaction(conn, dialect_kind::postgresql, claim);
}

}  // namespace sqllock
