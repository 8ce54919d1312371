#include "core/lease/lease_guard.hpp"

#include <string>
#include <vector>

#include "core/handle/database_impl.hpp"
#include "common/message_text.hpp"
#include "core/lease/lease_claim.hpp"
#include "dialect/guard_sql.hpp"
#include "sqllock/error.hpp"

namespace sqllock::detail {

void guard_in_caller_transaction(connection& conn, dialect_kind dialect, const lease_claim& claim,
                                 const caller_connection& caller) {
  const claimed_rows& c = claim.rows();
  database_impl& impl = database_access::impl(c.db);
  if (impl.dialect() != dialect) {
    throw invalid_argument("guard(): the transaction runs on " + std::string(to_string(dialect)) + ", but " + c.what +
                           " lives in a " + std::string(to_string(impl.dialect())) +
                           " database: guard in a transaction on the lock's own database");
  }
  if (c.rows.empty()) return;
  const auto sql = guard_statements(dialect, impl.options().table);
  const auto& form = caller_on_multi_node_galera(conn, dialect, caller) ? sql->replicated : sql->check;
  const std::string& statement = form.of(c.table);
  for (const auto& claimed : c.rows) {
    const std::vector<value> params{claimed.resource, c.owner, claimed.fence};
    const result answer = conn.exec(statement, params);
    const bool held = form.writes ? answer.affected > 0 : !answer.rows.empty();
    if (!held) {
      throw lock_lost("guard(): " + c.what + " is no longer held by this holder in the database (name '" +
                      message_text(claimed.resource) + "', fence " + std::to_string(claimed.fence) +
                      "): its lease expired, or it was taken over or released by force. Roll the transaction back: "
                      "its writes are not protected by the lock");
    }
  }
}

}  // namespace sqllock::detail
