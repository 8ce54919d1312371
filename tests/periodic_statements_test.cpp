// What the lease watchdog and the PostgreSQL session keepalive send periodically is prepared when
// a connection opens (core/handle/open_session.hpp), so that their first run on a connection costs one
// round trip, not two (over a slow link the second made leases lapse and live sessions look dead).
#include <string>

#include "core/handle/database_impl.hpp"
#include "support/lock_fixture.hpp"

namespace sqllock::test {
namespace {

class PeriodicStatementsTest : public LockTableTest {};

TEST_P(PeriodicStatementsTest, AreOnTheServerAsSoonAsAConnectionOpens) {
  const database db = open();
  auto conn = detail::database_access::impl(db).borrow();
  if (GetParam().dialect == dialect_kind::postgresql) {
    // sqllock's statement names start with "sqllock_" (driver/pg_statements.hpp).
    const auto r = conn->exec_direct("SELECT COUNT(*) FROM pg_prepared_statements WHERE name LIKE 'sqllock\\_%'");
    EXPECT_GE(std::stoll(r.rows.at(0).at(0).value()), 2) << "the renewal and the keepalive's session_is_mine";
  } else if (GetParam().name.rfind("soci", 0) != 0) {  // SOCI prepares MySQL statements on the client
    const auto r = conn->exec_direct("SHOW SESSION STATUS LIKE 'Com_stmt_prepare'");
    EXPECT_GE(std::stoll(r.rows.at(0).at(1).value()), 1) << "the renewal";
  }
}

TEST_P(PeriodicStatementsTest, ANewHandleBeforeMigrateStillOpens) {
  database_options o;
  o.table = unique_name("not_migrated");
  EXPECT_NO_THROW(database(GetParam().uri, o)) << "the server refuses to prepare: no table yet";
}

INSTANTIATE_TEST_SUITE_P(Servers, PeriodicStatementsTest, ::testing::ValuesIn(server_targets()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace sqllock::test
