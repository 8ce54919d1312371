#include "core/handle/open_session.hpp"

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>

#include "dialect/dialect.hpp"
#include "dialect/renewal_sql.hpp"
#include "dialect/session_lock_sql.hpp"
#include "driver/bounded_connection.hpp"
#include "driver/open.hpp"
#include "driver/statement_bound.hpp"
#include "sqllock/error.hpp"

namespace sqllock::detail {

std::unique_ptr<connection> open_connection(const connection_spec& spec, std::chrono::milliseconds timeout,
                                            std::chrono::milliseconds statement_timeout) {
  const auto now = std::chrono::steady_clock::now();
  if (const auto not_after = this_thread_statement_limits().not_after; not_after != steady_time::max()) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(std::max(not_after - now, steady_time::duration{}));
    timeout = std::min(timeout, std::max(left, std::chrono::milliseconds(1000)));
  }
  auto conn = std::make_unique<bounded_connection>(open_driver(spec, timeout), statement_timeout,
                                                   statement_timer::process(), spec.display);
  for (std::string_view statement : session_setup(spec.dialect)) conn->exec_direct(statement);
  if (const auto stopper = cut_off_statement_stopper(spec.dialect); !stopper.session_id.empty()) {
    const auto id = conn->exec_direct(stopper.session_id);
    if (!id.rows.empty() && !id.rows[0].empty() && id.rows[0][0]) {
      const value session = static_cast<std::int64_t>(std::stoll(*id.rows[0][0]));
      conn->tell_server_on_cut_off([spec, timeout, stop = stopper.stop, session] {
        open_driver(spec, timeout)->exec(stop, std::span(&session, 1));
      });
    }
  }
  return conn;
}

void prepare_periodic_statements(connection& conn, dialect_kind kind, const std::string& table) {
  const auto prepare = [&](const std::string& sql) {
    try {
      conn.prepare(sql, 1);  // each takes $1: the holder session, or the session's tag
    } catch (const backend_error&) {
      // Refused by the server: prepared on first use instead, where the error means something.
    }
  };
  for (const auto& step : *renewal_statements(kind, table, lease_table::locks)) {
    prepare(step.statement);
    if (!step.readback.empty()) prepare(step.readback);
  }
  if (kind == dialect_kind::postgresql) prepare(advisory_statements(kind).session_is_mine);
}

}  // namespace sqllock::detail
