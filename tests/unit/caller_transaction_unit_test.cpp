// A row lock in the caller's own MySQL transaction whose wait a stop can end: it waits in bounded
// attempts, each of which a server running innodb_rollback_on_timeout would answer, on timing
// out, by rolling back the caller's whole transaction. So that server is refused before the first
// attempt, and no other server is asked. A scripted connection (no server): the setting can only
// be chosen when a server starts, and the test servers run one MariaDB.
#include <gtest/gtest.h>

#include <stop_token>
#include <string>

#include "core/handle/galera_guard.hpp"
#include "core/session/row_lock_core.hpp"
#include "dialect/galera_sql.hpp"
#include "dialect/row_lock_sql.hpp"
#include "sqllock/error.hpp"
#include "support/fake_connection.hpp"

namespace test {
namespace {

constexpr const char* kTable = "distributed_lock";

class CallerTransactionUnitTest : public ::testing::Test {
 protected:
  // A plain MariaDB (no Galera) whose innodb_rollback_on_timeout is `rollback_on_timeout`, where
  // every row lock is granted at once.
  void serve(const std::string& rollback_on_timeout) {
    const auto& probe = d::galera_probe_statements(sqllock::dialect_kind::mysql);
    server->on(probe.cluster_size, rows({}));
    server->on(probe.wsrep_on, rows({}));
    server->on(sql->timeout_ends_transaction, rows({{rollback_on_timeout}}));
    server->on(sql->lock_wait.get, rows({{"50"}}));
    server->on(sql->lock_wait.set, rows({}));
    server->on(sql->lock_wait.restore, rows({}));
    server->on(sql->ensure, rows({}, 1));
    server->on(sql->lock, rows({{"1"}}));
  }
  bool lock(d::row_wait wait) {
    auto conn = server->connect();
    // Its own key in the Galera verdict cache (galera_guard.hpp), so no other test's verdict is used.
    return d::lock_row_in_caller_transaction(*conn, sqllock::dialect_kind::mysql, kTable, "account", wait,
                                             {this, 0, "the test's connection"});
  }

  std::shared_ptr<fake_server> server = std::make_shared<fake_server>();
  std::shared_ptr<const d::row_lock_sql> sql = d::row_lock_statements(sqllock::dialect_kind::mysql, kTable);
  std::stop_source stop;
};

TEST_F(CallerTransactionUnitTest, AStoppableWaitIsRefusedWhereATimeoutRollsBackTheWholeTransaction) {
  serve("1");
  EXPECT_THROW(lock({d::row_wait_kind::block, {}, stop.get_token()}), sqllock::not_supported);
  EXPECT_EQ(server->count(sql->ensure) + server->count(sql->lock), 0u) << "an attempt ran before the refusal";
  EXPECT_TRUE(server->unexpected().empty());
}

TEST_F(CallerTransactionUnitTest, AStoppableWaitRunsWhereATimeoutRollsBackItsStatementOnly) {
  serve("0");
  EXPECT_TRUE(lock({d::row_wait_kind::block, {}, stop.get_token()}));
  EXPECT_EQ(server->count(sql->timeout_ends_transaction), 1u);
  EXPECT_EQ(server->count(sql->lock), 1u);
  EXPECT_TRUE(server->unexpected().empty());
}

// Waits that do not run in attempts never ask: without a stop token, NOWAIT, a stop requested before
// the call (one attempt without waiting).
TEST_F(CallerTransactionUnitTest, WaitsThatAreNotSlicedDoNotAskTheServer) {
  serve("1");
  EXPECT_TRUE(lock({d::row_wait_kind::block, {}}));
  server->on(sql->lock_nowait, rows({{"1"}}));
  EXPECT_TRUE(lock({d::row_wait_kind::nowait, {}, stop.get_token()}));
  stop.request_stop();
  EXPECT_TRUE(lock({d::row_wait_kind::block, {}, stop.get_token()}));
  EXPECT_EQ(server->count(sql->timeout_ends_transaction), 0u);
  EXPECT_TRUE(server->unexpected().empty());
}

}  // namespace
}  // namespace test
