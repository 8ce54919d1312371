// Glue for the advisory functions of include/sqllock/adapters/pqxx.hpp: wraps the application's
// transaction as a connection and hands it to the core. No lock semantics here.
#include <pqxx/nontransaction>

#include "core/session/advisory_protocol.hpp"
#include "driver/pqxx/pqxx_tx_connection.hpp"
#include "sqllock/adapters/pqxx.hpp"
#include "sqllock/error.hpp"

namespace sqllock::detail {

bool pqxx_advisory_xact_lock(pqxx::transaction_base& tx, const advisory_key& key, advisory_mode mode,
                             std::optional<std::chrono::steady_clock::time_point> deadline, std::stop_token stop) {
  if (dynamic_cast<pqxx::nontransaction*>(&tx) != nullptr) {
    throw invalid_argument(
        "a transaction-level advisory lock needs a transaction, but pqxx::nontransaction runs "
        "each statement on its own, where the lock ends at once; use pqxx::work (or another "
        "transaction), or sqllock::advisory_lock for a session-level lock");
  }
  pqxx_tx_connection conn(tx);
  return advisory_xact_lock_in_caller_transaction(conn, dialect_kind::postgresql, key, mode, deadline, std::move(stop));
}

}  // namespace sqllock::detail
