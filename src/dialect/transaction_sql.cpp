#include "dialect/transaction_sql.hpp"

namespace sqllock::detail {

savepoint_sql make_savepoint_sql(std::string_view name) {
  const std::string n(name);
  return {"SAVEPOINT " + n, "RELEASE SAVEPOINT " + n, "ROLLBACK TO SAVEPOINT " + n};
}

lock_wait_sql postgresql_lock_wait(bool transaction_local) {
  // set_config(…, true) is SET LOCAL with a bound value: it ends with the transaction and is
  // undone by ROLLBACK TO SAVEPOINT. lock_timeout = 0 means "no limit", hence the minimum 1.
  lock_wait_sql w;
  w.unit_ms = 1;
  w.min = 1;
  w.max = 2147483647;  // INT_MAX ms, about 24.8 days
  w.shortest = 1;
  w.unlimited = 0;
  w.transaction_local = transaction_local;
  const std::string local = transaction_local ? "true" : "false";
  w.get = "SELECT current_setting('lock_timeout')";
  w.set = "SELECT set_config('lock_timeout', CAST($1 AS text) || 'ms', " + local + ")";
  w.restore = "SELECT set_config('lock_timeout', $1, " + local + ")";
  if (!transaction_local) w.reset = "RESET lock_timeout";
  return w;
}

const statement_cancel_sql& statement_cancel_statements(dialect_kind kind) {
  static const statement_cancel_sql postgresql{"SELECT pg_backend_pid()",
                                               "SELECT pg_cancel_backend(CAST($1 AS integer))"};
  static const statement_cancel_sql mysql{"SELECT CONNECTION_ID()", "KILL QUERY $1"};
  static const statement_cancel_sql none{};
  switch (kind) {
    case dialect_kind::postgresql: return postgresql;
    case dialect_kind::mysql: return mysql;
    case dialect_kind::sqlite: return none;
  }
  return none;
}

}  // namespace sqllock::detail
