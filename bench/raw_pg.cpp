// The raw PostgreSQL baseline: sqllock's statements, prepared once per connection and executed
// with libpqxx directly — what a hand-written client of the same library would send.
// Named raw.<kind>.pg.cycle_t<threads> (kind: table, advisory, row, semaphore, fair, rw); raw.latch.pg.count_down[_participant]_t<threads>.
#ifdef SQLLOCK_HAVE_PQXX
#include <pqxx/pqxx>

#include "sqllock/advisory_lock.hpp"
#include "support/databases.hpp"
#include "support/harness.hpp"
#include "support/raw_sql.hpp"

namespace sqllock::bench {
namespace {

using d = dialect_kind;

std::vector<std::string> texts(const std::vector<detail::value>& params) {
  std::vector<std::string> out;
  for (const auto& v : params)
    out.push_back(std::holds_alternative<std::int64_t>(v) ? std::to_string(std::get<std::int64_t>(v))
                                                          : std::get<std::string>(v));
  return out;
}

// One thread's connection with the statements of one lock kind prepared.
struct pg_client {
  pqxx::connection conn;
  explicit pg_client(const std::string& uri) : conn(uri) {}
  pqxx::result run(pqxx::transaction_base& tx, const std::string& name, const std::vector<detail::value>& params) {
    return tx.exec_prepared(name, pqxx::prepare::make_dynamic_params(texts(params)));
  }
};

std::vector<std::unique_ptr<pg_client>> connect(int threads) {
  const auto uri = target_uri(d::postgresql);
  if (!uri) throw std::runtime_error("no PostgreSQL server configured (SQLLOCK_TEST_PG_URI)");
  open_target(d::postgresql);  // the lock table exists
  std::vector<std::unique_ptr<pg_client>> out;
  for (int t = 0; t < threads; ++t) out.push_back(std::make_unique<pg_client>(*uri));
  return out;
}

void table_cycles(benchmark::State& state, int threads) {
  auto clients = connect(threads);
  const auto& sql = table_sql(d::postgresql);
  for (auto& c : clients) {
    c->conn.prepare("acquire", sql.acquire);
    c->conn.prepare("release", sql.release_delete);
  }
  run_and_report(state, threads, [&](int t) {
    auto& c = *clients[static_cast<std::size_t>(t)];
    const std::string resource = "raw-cycle-" + std::to_string(t);
    pqxx::nontransaction tx(c.conn);
    const auto r = c.run(tx, "acquire", acquire_params(resource, t));
    if (r.empty()) throw std::runtime_error("raw acquire refused");
    c.run(tx, "release", {resource, owner_of(t), r[0][1].as<std::int64_t>(), sql.wakeup_channel});
  });
}

void advisory_cycles(benchmark::State& state, int threads) {
  auto clients = connect(threads);
  const auto& sql = detail::advisory_statements(d::postgresql);
  for (auto& c : clients) {
    c->conn.prepare("try_lock", sql.try_lock[0][0]);
    c->conn.prepare("unlock", sql.unlock[0][0]);
  }
  run_and_report(state, threads, [&](int t) {
    auto& c = *clients[static_cast<std::size_t>(t)];
    const std::int64_t key = advisory_key::from_name("raw-cycle-" + std::to_string(t)).value();
    // The statements' second parameter is the connection's server-session tag
    // (dialect/session_lock_sql.hpp); one per client, as sqllock keeps one per connection.
    const std::string tag = "raw-client-" + std::to_string(t);
    pqxx::nontransaction tx(c.conn);
    if (c.run(tx, "try_lock", {key, tag})[0][0].as<std::string>() != "true")
      throw std::runtime_error("raw advisory lock refused");
    c.run(tx, "unlock", {key, tag});
  });
}

void row_cycles(benchmark::State& state, int threads) {
  auto clients = connect(threads);
  const auto& sql = row_sql(d::postgresql);
  for (std::size_t t = 0; t < clients.size(); ++t) {
    auto& c = *clients[t];
    c.conn.prepare("probe", sql.probe);
    c.conn.prepare("lock", sql.lock);
    c.conn.prepare("ensure", sql.ensure);
    pqxx::nontransaction tx(c.conn);
    c.run(tx, "ensure", {"raw-cycle-" + std::to_string(t)});
  }
  run_and_report(state, threads, [&](int t) {
    auto& c = *clients[static_cast<std::size_t>(t)];
    const std::vector<detail::value> key{"raw-cycle-" + std::to_string(t)};
    pqxx::work tx(c.conn);  // BEGIN … COMMIT
    c.run(tx, "probe", key);
    if (c.run(tx, "lock", key).empty()) throw std::runtime_error("raw row lock found no row");
    tx.commit();
  });
}

// A semaphore of 4 permits per thread (no contention), as sqllock.semaphore.pg.cycle_t<n>.
void semaphore_cycles(benchmark::State& state, int threads) {
  auto clients = connect(threads);
  const auto& sql = permit_sql_of(d::postgresql);
  const auto& channel = table_sql(d::postgresql).wakeup_channel;
  for (auto& c : clients) {
    c->conn.prepare("acquire", sql.acquire);
    c->conn.prepare("release", sql.release);
  }
  run_and_report(state, threads, [&](int t) {
    auto& c = *clients[static_cast<std::size_t>(t)];
    const std::string resource = "raw-semaphore-" + std::to_string(t);
    pqxx::nontransaction tx(c.conn);
    const auto r = c.run(tx, "acquire", permit_params(resource, 4, t));
    if (r.empty() || r[0][1].is_null()) throw std::runtime_error("raw permit acquire refused");
    if (c.run(tx, "release", {resource, owner_of(t), r[0][1].as<std::int64_t>(), channel}).empty())
      throw std::runtime_error("raw permit release found no permit");
  });
}

// One write level of a fair or read-write lock per thread (no contention), as
// sqllock.fair.pg.cycle_t<n> and sqllock.rw.pg.cycle_t<n>: enqueue, check (at its turn at once),
// release.
void queue_cycles(benchmark::State& state, int threads, char queue_kind) {
  auto clients = connect(threads);
  const auto& sql = queue_sql_of(d::postgresql);
  const auto& channel = table_sql(d::postgresql).wakeup_channel;
  for (auto& c : clients) {
    c->conn.prepare("enqueue", sql.enqueue);
    c->conn.prepare("check", sql.check);
    c->conn.prepare("release", sql.release);
  }
  const std::string kind(1, queue_kind);
  run_and_report(state, threads, [&](int t) {
    auto& c = *clients[static_cast<std::size_t>(t)];
    const std::string resource = "raw-queue-" + std::to_string(t);
    const std::string owner = owner_of(t);
    pqxx::nontransaction tx(c.conn);
    const auto placed = c.run(tx, "enqueue", enqueue_params(resource, queue_kind, t));
    if (placed.empty()) throw std::runtime_error("raw enqueue returned no entry");
    const auto ticket = placed[0][0].as<std::int64_t>();
    const auto turn = c.run(tx, "check", {resource, kind, ticket, owner});
    if (turn.empty() || turn[0][0].as<std::int64_t>() != 1 || turn[0][1].as<std::int64_t>() != 0)
      throw std::runtime_error("raw queue check found the entry not at its turn");
    if (c.run(tx, "release", {resource, kind, ticket, owner, std::int64_t{1}, channel}).empty())
      throw std::runtime_error("raw queue release found no entry");
  });
}

// Count-downs of one latch per thread (armed with the largest count, so it never opens), with
// (`participant`: a new id each time) or without a participant id, as sqllock.latch.pg.*.
void latch_count_downs(benchmark::State& state, int threads, bool participant) {
  auto clients = connect(threads);
  const auto& sql = latch_sql_of(d::postgresql);
  const auto& channel = table_sql(d::postgresql).wakeup_channel;
  const database db = open_target(d::postgresql);
  const std::string prefix = std::string(participant ? "raw-latch-p-" : "raw-latch-") + std::to_string(threads) + "-";
  for (int t = 0; t < threads; ++t) arm_latch(db, prefix + std::to_string(t));
  for (auto& c : clients) c->conn.prepare("count_down", participant ? sql.count_down_participant : sql.count_down);
  std::vector<std::int64_t> calls(static_cast<std::size_t>(threads));
  run_and_report(state, threads, [&](int t) {
    auto& c = *clients[static_cast<std::size_t>(t)];
    const std::string resource = prefix + std::to_string(t);
    pqxx::nontransaction tx(c.conn);
    const auto r = participant ? c.run(tx, "count_down",
                                       {resource, "p" + std::to_string(++calls[static_cast<std::size_t>(t)]), channel})
                               : c.run(tx, "count_down", {resource, channel});
    if (r.empty() || (participant && r[0][2].as<int>() != 1))
      throw std::runtime_error("raw latch count-down did not count");
  });
}

[[maybe_unused]] const bool registered = [] {
  for (const int threads : {1, 8}) {
    const std::string suffix = ".pg.cycle_t" + std::to_string(threads);
    add_case("raw.table" + suffix, [threads](benchmark::State& s) { table_cycles(s, threads); });
    add_case("raw.advisory" + suffix, [threads](benchmark::State& s) { advisory_cycles(s, threads); });
    add_case("raw.row" + suffix, [threads](benchmark::State& s) { row_cycles(s, threads); });
    add_case("raw.semaphore" + suffix, [threads](benchmark::State& s) { semaphore_cycles(s, threads); });
    add_case("raw.fair" + suffix, [threads](benchmark::State& s) { queue_cycles(s, threads, 'F'); });
    add_case("raw.rw" + suffix, [threads](benchmark::State& s) { queue_cycles(s, threads, 'R'); });
    const std::string t = "_t" + std::to_string(threads);
    add_case("raw.latch.pg.count_down" + t, [threads](benchmark::State& s) { latch_count_downs(s, threads, false); });
    add_case("raw.latch.pg.count_down_participant" + t,
             [threads](benchmark::State& s) { latch_count_downs(s, threads, true); });
  }
  return true;
}();

}  // namespace
}  // namespace sqllock::bench
#endif
