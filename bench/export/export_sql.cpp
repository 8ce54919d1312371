// sqllock_bench_sql DIR CYCLES: writes the statements sqllock issues per lock cycle as scripts for
// the external baselines, taken from the library's dialects (never retyped), and migrates the
// lock table of the servers' own test databases (SQLLOCK_TEST_PG_URI, SQLLOCK_TEST_MYSQL_URI):
//   DIR/pg_{table,advisory,row}.sql  pgbench scripts (-M prepared; :client_id is the key,
//                                    the other values come from -D; see scripts/bench.sh)
//   DIR/my_{table,named,row}.sql     mariadb client scripts: server-side PREPARE, then CYCLES
//                                    cycles of EXECUTE for the key in @r (set by the caller)
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "sqllock/migrate.hpp"
#include "support/raw_sql.hpp"
#include "support/test_env.hpp"

namespace {

using namespace sqllock;
using namespace sqllock::bench;

// `sql` with $N replaced by ":" + vars[N-1] (pgbench variables).
std::string pgbench_text(const std::string& sql, const std::vector<std::string>& vars) {
  std::string out;
  for (std::size_t i = 0; i < sql.size(); ++i) {
    if (sql[i] == '$' && i + 1 < sql.size() && std::isdigit(static_cast<unsigned char>(sql[i + 1]))) {
      std::size_t j = i + 1;
      while (j < sql.size() && std::isdigit(static_cast<unsigned char>(sql[j]))) ++j;
      out += ":" + vars.at(static_cast<std::size_t>(std::stoi(sql.substr(i + 1, j - i - 1)) - 1));
      i = j - 1;
    } else {
      out += sql[i] == '\n' ? ' ' : sql[i];
    }
  }
  return out;
}

// PREPARE name FROM '…' with MySQL placeholders; returns the USING list for `vars` ($N → @var).
std::string my_prepare(std::ofstream& out, const std::string& name, const std::string& sql,
                       const std::vector<std::string>& vars) {
  const auto native = detail::rewrite_placeholders(sql, detail::placeholder_style::question);
  std::string text;
  for (const char c : native.sql) text += c == '\'' ? std::string("''") : std::string(1, c == '\n' ? ' ' : c);
  out << "PREPARE " << name << " FROM '" << text << "';\n";
  std::string using_list;
  for (const auto i : native.order) using_list += (using_list.empty() ? " USING @" : ", @") + vars.at(i);
  return "EXECUTE " + name + using_list + ";\n";
}

void repeat(std::ofstream& out, const std::string& body, int cycles) {
  for (int i = 0; i < cycles; ++i) out << body;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: sqllock_bench_sql DIR CYCLES\n";
    return 2;
  }
  const std::string dir = argv[1];
  const int cycles = std::atoi(argv[2]);
  try {
    if (const auto uri = test::postgres_uri(); uri && !uri->empty()) {
      database db(*uri);
      migrate(db);
      const auto& t = table_sql(dialect_kind::postgresql);
      std::ofstream(dir + "/pg_table.sql")
          << pgbench_text(t.acquire, {"client_id", "owner", "session", "host", "pid", "thread", "lease", "renew"})
          << " \\gset\n"
          << pgbench_text(t.release_delete, {"client_id", "owner", "fence", "channel"}) << ";\n";
      const auto& a = detail::advisory_statements(dialect_kind::postgresql);
      // The advisory statements bind the key and the connection's server-session tag (the
      // PgBouncer guard, dialect/session_lock_sql.hpp); pgbench's :session stands for the tag.
      std::ofstream(dir + "/pg_advisory.sql") << pgbench_text(a.try_lock[0][0], {"client_id", "session"}) << ";\n"
                                              << pgbench_text(a.unlock[0][0], {"client_id", "session"}) << ";\n";
      const auto& r = row_sql(dialect_kind::postgresql);
      std::ofstream(dir + "/pg_row.sql") << "BEGIN;\n"
                                         << pgbench_text(r.probe, {"client_id"}) << ";\n"
                                         << pgbench_text(r.lock, {"client_id"}) << ";\nCOMMIT;\n";
      std::ofstream(dir + "/pg_setup.sql") << pgbench_text(r.ensure, {"client_id"}) << ";\n";
      std::ofstream(dir + "/pg_channel") << t.wakeup_channel << "\n";
    }
    if (const auto uri = test::mysql_uri(); uri && !uri->empty()) {
      database db(*uri);
      migrate(db);
      const auto& t = table_sql(dialect_kind::mysql);
      {
        std::ofstream out(dir + "/my_table.sql");
        const auto acquire = my_prepare(out, "acq", t.acquire,
                                        {"r", "owner", "session", "host", "pid", "thread", "lease", "renew"});
        // The client cannot bind a result to the next statement: the read-back stores it with INTO.
        const auto back = my_prepare(out, "rb", t.acquire_readback + " INTO @c, @fence", {"r", "owner"});
        const auto release = my_prepare(out, "rel", t.release_delete, {"r", "owner", "fence"});
        repeat(out, acquire + back + release, cycles);
      }
      {
        std::ofstream out(dir + "/my_named.sql");
        const auto& n = detail::named_lock_statements(dialect_kind::mysql);
        const auto get = my_prepare(out, "g", n.get_lock, {"name", "zero"});
        const auto rel = my_prepare(out, "rl", n.release_lock, {"name"});
        repeat(out, get + rel, cycles);
      }
      {
        std::ofstream out(dir + "/my_row.sql");
        const auto& r = row_sql(dialect_kind::mysql);
        out << my_prepare(out, "ens", r.ensure, {"r"});
        const auto probe = my_prepare(out, "pr", r.probe, {"r"});
        const auto lock = my_prepare(out, "lk", r.lock, {"r"});
        repeat(out, "START TRANSACTION;\n" + probe + lock + "COMMIT;\n", cycles);
      }
    }
  } catch (const std::exception& e) {
    std::cerr << "sqllock_bench_sql: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
