// Unit tests of the Galera guard (src/core/handle/galera_guard.*): the verdict from what a server
// answers, the refusal message, and when the server is asked (a scripted connection, no server).
#include <gtest/gtest.h>
#include <unistd.h>

#include <map>
#include <string>
#include <vector>

#include "core/handle/database_impl.hpp"
#include "core/handle/galera_guard.hpp"
#include "common/uri.hpp"
#include "dialect/galera_sql.hpp"
#include "sqllock/error.hpp"
#include "sqllock/row_lock.hpp"

namespace sqllock::detail {
namespace {

// A connection that answers SHOW statements from a script and records what it was asked.
class scripted_connection final : public connection {
 public:
  std::map<std::string, std::vector<row>, std::less<>> answers;  // by statement text; missing: no rows
  std::vector<std::string> asked;
  bool fail = false;  // every statement throws backend_error

  result exec(std::string_view sql, std::span<const value>) override { return exec_direct(sql); }
  result exec_direct(std::string_view sql) override {
    asked.emplace_back(sql);
    if (fail) throw backend_error("scripted failure", "HY000", 1105);
    result r;
    if (auto it = answers.find(sql); it != answers.end()) r.rows = it->second;
    return r;
  }
  bool broken() const noexcept override { return false; }
  void abandon() noexcept override {}
  std::string_view driver_name() const noexcept override { return "scripted"; }
};

const galera_probe_sql& probe() { return galera_probe_statements(dialect_kind::mysql); }

// A server as MariaDB with Galera answers: wsrep_cluster_size = size, wsrep_on = on.
scripted_connection galera_node(const std::string& size, const std::string& on = "ON") {
  scripted_connection c;
  c.answers[probe().cluster_size] = {{"wsrep_cluster_size", size}};
  c.answers[probe().wsrep_on] = {{"wsrep_on", on}};
  return c;
}

galera_verdict judge(std::optional<std::string> size, std::optional<std::string> on) {
  return judge_galera(galera_facts{std::move(size), std::move(on)});
}

TEST(GaleraVerdict, ServersWithoutAClusterOfSeveralNodesAreNotRefused) {
  EXPECT_FALSE(judge(std::nullopt, std::nullopt).multi_node) << "MySQL 8: no wsrep rows at all";
  EXPECT_FALSE(judge("0", std::nullopt).multi_node) << "MariaDB without a wsrep provider";
  EXPECT_FALSE(judge("0", "OFF").multi_node);
  EXPECT_FALSE(judge("1", "ON").multi_node) << "a single-node cluster is a plain server";
  EXPECT_FALSE(judge("3", "OFF").multi_node) << "wsrep off: the node does not replicate";
  EXPECT_FALSE(judge("3", "off").multi_node);
  EXPECT_FALSE(judge("3", "0").multi_node);
  EXPECT_FALSE(judge("", "ON").multi_node);
  EXPECT_FALSE(judge("abc", "ON").multi_node);
  EXPECT_FALSE(judge("-3", "ON").multi_node);
  EXPECT_FALSE(judge("3 nodes", "ON").multi_node);
}

TEST(GaleraVerdict, AClusterOfSeveralNodesWithWsrepOnIsRefused) {
  const auto v = judge("3", "ON");
  EXPECT_TRUE(v.multi_node);
  EXPECT_EQ(v.cluster_size, 3);
  EXPECT_EQ(v.wsrep_on, "ON");
  EXPECT_TRUE(judge("2", "ON").multi_node);
  EXPECT_TRUE(judge("2", "on").multi_node);
  EXPECT_TRUE(judge("2", "1").multi_node);
  EXPECT_TRUE(judge("64", "ON").multi_node);
  // A server that reports a cluster but no wsrep_on: refusing is the safe mistake.
  EXPECT_TRUE(judge("3", std::nullopt).multi_node);
}

TEST(GaleraVerdict, ClusterSizeParsing) {
  EXPECT_EQ(galera_cluster_size(std::nullopt), 0);
  EXPECT_EQ(galera_cluster_size("0"), 0);
  EXPECT_EQ(galera_cluster_size("3"), 3);
  EXPECT_EQ(galera_cluster_size("12"), 12);
  EXPECT_EQ(galera_cluster_size(""), 0);
  EXPECT_EQ(galera_cluster_size("3.0"), 0);
  EXPECT_EQ(galera_cluster_size("99999999999999999999999"), 0);
}

TEST(GaleraMessage, NamedLockSaysWhyAndWhatToDo) {
  const auto m = galera_refusal_message(node_local_lock::get_lock, "x", "the server at mysql://app:***@db1:3306/app",
                                        judge("3", "ON"), "add ?galera=pinned to the URI");
  EXPECT_EQ(m,
            "named lock 'x' refused: the server at mysql://app:***@db1:3306/app is a node of a 3-node Galera "
            "cluster (wsrep_on=ON, wsrep_cluster_size=3), where GET_LOCK only locks on the node that runs it, so "
            "clients on other nodes would be granted the same lock. Use sqllock::table_lock, which is safe on "
            "Galera, or add ?galera=pinned to the URI if every client of these locks connects to the same node.");
}

TEST(GaleraMessage, RowLockNamesForUpdate) {
  const auto m = galera_refusal_message(node_local_lock::for_update, "account:42", "the server at mysql://h/d",
                                        judge("2", "ON"), "add ?galera=pinned to the URI");
  EXPECT_EQ(m.rfind("row lock 'account:42' refused: the server at mysql://h/d is a node of a 2-node Galera cluster "
                    "(wsrep_on=ON, wsrep_cluster_size=2), where SELECT … FOR UPDATE only locks on the node that "
                    "runs it",
                    0),
            0u)
      << m;
  EXPECT_NE(m.find("Use sqllock::table_lock, which is safe on Galera, or add ?galera=pinned to the URI if every "
                   "client of these locks connects to the same node."),
            std::string::npos)
      << m;
}

TEST(GaleraMessage, NamesAndValuesStayOnOneLine) {
  galera_verdict v = judge("3", "ON\x1b[2J");
  const auto m = galera_refusal_message(node_local_lock::get_lock, "a\nb", "the server at mysql://h/d", v, "x");
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  EXPECT_EQ(m.find('\x1b'), std::string::npos) << m;
  EXPECT_NE(m.find("'a\\x0ab'"), std::string::npos) << m;
  EXPECT_NE(m.find("wsrep_on=ON\\x1b[2J"), std::string::npos) << m;
  EXPECT_NE(galera_refusal_message(node_local_lock::get_lock, "n", "s", judge("3", std::nullopt), "x")
                .find("wsrep_on=unknown"),
            std::string::npos);
}

TEST(GaleraProbe, AServerWithoutGaleraCostsOneStatement) {
  scripted_connection mysql8;  // no rows for anything
  EXPECT_FALSE(probe_galera(mysql8, probe()).multi_node);
  EXPECT_EQ(mysql8.asked, std::vector<std::string>{probe().cluster_size});

  scripted_connection mariadb;
  mariadb.answers[probe().cluster_size] = {{"wsrep_cluster_size", "0"}};
  mariadb.answers[probe().wsrep_on] = {{"wsrep_on", "OFF"}};
  EXPECT_FALSE(probe_galera(mariadb, probe()).multi_node);
  EXPECT_EQ(mariadb.asked.size(), 1u);
}

TEST(GaleraProbe, AGaleraNodeIsAskedBothAndRowsAreMatchedByExactName) {
  auto node = galera_node("3");
  // LIKE's '_' matches any character: a lookalike row must not be taken for the real one.
  node.answers[probe().cluster_size].insert(node.answers[probe().cluster_size].begin(), row{"wsrepXcluster_size", "1"});
  const auto v = probe_galera(node, probe());
  EXPECT_TRUE(v.multi_node);
  EXPECT_EQ(v.cluster_size, 3);
  EXPECT_EQ(node.asked, (std::vector<std::string>{probe().cluster_size, probe().wsrep_on}));

  auto off = galera_node("3", "OFF");
  EXPECT_FALSE(probe_galera(off, probe()).multi_node);
}

TEST(GaleraProbe, TheSqlIsMysqlOnly) {
  EXPECT_TRUE(galera_probe_statements(dialect_kind::mysql).applies);
  EXPECT_EQ(galera_probe_statements(dialect_kind::mysql).cluster_size, "SHOW GLOBAL STATUS LIKE 'wsrep_cluster_size'");
  EXPECT_EQ(galera_probe_statements(dialect_kind::mysql).wsrep_on, "SHOW GLOBAL VARIABLES LIKE 'wsrep_on'");
  EXPECT_FALSE(galera_probe_statements(dialect_kind::postgresql).applies);
  EXPECT_FALSE(galera_probe_statements(dialect_kind::sqlite).applies);
}

// A handle that was never connected (database_impl does not connect; database's constructor does).
std::unique_ptr<database_impl> handle(const std::string& uri) {
  return std::make_unique<database_impl>(parse_uri(uri), database_options{});
}

TEST(GaleraHandle, AsksOnceAndKeepsTheVerdict) {
  auto impl = handle("mysql://app:secret@db1:3306/app");
  auto node = galera_node("3");
  for (int i = 0; i < 3; ++i) {
    try {
      refuse_on_galera(*impl, node, i % 2 ? node_local_lock::for_update : node_local_lock::get_lock, "job");
      ADD_FAILURE() << "accepted on a 3-node cluster";
    } catch (const not_supported& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("the server at mysql://app:***@db1:3306/app is a node of a 3-node Galera cluster"),
                std::string::npos)
          << m;
      EXPECT_NE(m.find("add ?galera=pinned to the URI"), std::string::npos) << m;
      EXPECT_EQ(m.find("secret"), std::string::npos) << m;
    }
  }
  EXPECT_EQ(node.asked.size(), 2u) << "one probe (two statements on a Galera node) for the handle's life";

  auto plain = handle("mysql://app@db1/app");
  scripted_connection mariadb;
  mariadb.answers[probe().cluster_size] = {{"wsrep_cluster_size", "0"}};
  for (int i = 0; i < 5; ++i) refuse_on_galera(*plain, mariadb, node_local_lock::get_lock, "job");
  EXPECT_EQ(mariadb.asked.size(), 1u) << "one round trip per handle on a server without Galera";
}

TEST(GaleraHandle, AFailedProbeIsNotKept) {
  auto impl = handle("mysql://app@db1/app");
  auto node = galera_node("3");
  node.fail = true;
  EXPECT_THROW(refuse_on_galera(*impl, node, node_local_lock::get_lock, "job"), backend_error);
  node.fail = false;
  EXPECT_THROW(refuse_on_galera(*impl, node, node_local_lock::get_lock, "job"), not_supported);
  EXPECT_EQ(node.asked.size(), 3u) << "the failed statement, then the probe again";
}

TEST(GaleraHandle, PinnedHandlesAndOtherDialectsAreNeverAsked) {
  auto node = galera_node("3");
  refuse_on_galera(*handle("mysql://app@db1/app?galera=pinned"), node, node_local_lock::get_lock, "job");
  refuse_on_galera(*handle("mariadb://app@db1/app?galera=pinned"), node, node_local_lock::for_update, "job");
  refuse_on_galera(*handle("soci+mysql://app@db1/app?galera=pinned"), node, node_local_lock::for_update, "job");
  refuse_on_galera(*handle("postgresql://app@db1/app"), node, node_local_lock::for_update, "job");
  refuse_on_galera(*handle("sqlite:///tmp/never-opened-" + std::to_string(::getpid()) + ".db"), node,
                   node_local_lock::for_update, "job");
  EXPECT_TRUE(node.asked.empty());
}

class GaleraCaller : public ::testing::Test {
 protected:
  void TearDown() override { set_caller_row_locks_galera_pinned(false); }
  int object_a = 0, object_b = 0;  // stand-ins for two application connection objects
};

TEST_F(GaleraCaller, RefusedWithTheAdaptersOptIn) {
  auto node = galera_node("3");
  try {
    refuse_on_galera(node, dialect_kind::mysql, {&object_a, 7, "the application's SOCI session"}, "account:42");
    ADD_FAILURE() << "accepted on a 3-node cluster";
  } catch (const not_supported& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("row lock 'account:42' refused: the server of the application's SOCI session is a node of a "
                     "3-node Galera cluster"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("call sqllock::set_caller_row_locks_galera_pinned(true) if every client"), std::string::npos) << m;
  }
}

TEST_F(GaleraCaller, CachedPerConnectionObjectAndSession) {
  scripted_connection mariadb;
  mariadb.answers[probe().cluster_size] = {{"wsrep_cluster_size", "0"}};
  for (int i = 0; i < 5; ++i) refuse_on_galera(mariadb, dialect_kind::mysql, {&object_a, 1, "a"}, "n");
  EXPECT_EQ(mariadb.asked.size(), 1u) << "one probe per connection, not per call";
  refuse_on_galera(mariadb, dialect_kind::mysql, {&object_a, 2, "a"}, "n");
  EXPECT_EQ(mariadb.asked.size(), 2u) << "another server session at the same address is asked again";
  refuse_on_galera(mariadb, dialect_kind::mysql, {&object_b, 0, "b"}, "n");
  refuse_on_galera(mariadb, dialect_kind::mysql, {&object_b, 0, "b"}, "n");
  EXPECT_EQ(mariadb.asked.size(), 3u);

  // A refusal is kept too: the next call does not ask.
  auto node = galera_node("2");
  EXPECT_THROW(refuse_on_galera(node, dialect_kind::mysql, {&object_b, 9, "b"}, "n"), not_supported);
  EXPECT_THROW(refuse_on_galera(node, dialect_kind::mysql, {&object_b, 9, "b"}, "n"), not_supported);
  EXPECT_EQ(node.asked.size(), 2u);
}

TEST_F(GaleraCaller, TheOptInAndPostgresqlAskNothing) {
  auto node = galera_node("3");
  refuse_on_galera(node, dialect_kind::postgresql, {&object_a, 3, "a"}, "n");
  set_caller_row_locks_galera_pinned(true);
  refuse_on_galera(node, dialect_kind::mysql, {&object_a, 4, "a"}, "n");
  EXPECT_TRUE(node.asked.empty());
  set_caller_row_locks_galera_pinned(false);
  EXPECT_THROW(refuse_on_galera(node, dialect_kind::mysql, {&object_a, 4, "a"}, "n"), not_supported);
}

}  // namespace
}  // namespace sqllock::detail
