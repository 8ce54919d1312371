// The raw MariaDB baseline: sqllock's statements, prepared once per connection and executed with
// MySQL Connector/C++ directly. Named raw.<kind>.mariadb.cycle_t<threads> (kind: table, named,
// row, semaphore, fair, rw);
// raw.latch.mariadb.count_down[_participant]_t<threads>.
#include <random>
#include <set>

#ifdef SQLLOCK_HAVE_MYSQL
#include "common/uri.hpp"
#include "driver/mysql/cppconn.hpp"
#include "support/databases.hpp"
#include "support/harness.hpp"
#include "support/raw_sql.hpp"

namespace sqllock::bench {
namespace {

using d = dialect_kind;

// One prepared statement and the native order of its parameters.
struct prepared {
  std::unique_ptr<sql::PreparedStatement> st;
  detail::native_statement native;
  void bind(const std::vector<detail::value>& params) {
    const auto values = in_native_order(native, params);
    for (std::size_t i = 0; i < values.size(); ++i) {
      const auto slot = static_cast<unsigned int>(i + 1);
      if (std::holds_alternative<std::int64_t>(values[i]))
        st->setInt64(slot, std::get<std::int64_t>(values[i]));
      else
        st->setString(slot, std::get<std::string>(values[i]));
    }
  }
  int update(const std::vector<detail::value>& params) {
    bind(params);
    return st->executeUpdate();
  }
  std::unique_ptr<sql::ResultSet> query(const std::vector<detail::value>& params) {
    bind(params);
    return std::unique_ptr<sql::ResultSet>(st->executeQuery());
  }
};

// One thread's connection, set up as sqllock sets up its own (utf8mb4, UTC, no reconnect).
struct my_client {
  std::unique_ptr<sql::Connection> conn;
  std::unique_ptr<sql::Statement> direct;
  explicit my_client(const detail::connection_spec& spec) {
    sql::ConnectOptionsMap options;
    options["hostName"] = sql::SQLString("tcp://" + spec.host + ":" + std::to_string(spec.port.value_or(3306)));
    options["userName"] = sql::SQLString(spec.user);
    options["password"] = sql::SQLString(spec.password);
    options["schema"] = sql::SQLString(spec.database);
    options["OPT_RECONNECT"] = false;
    options["CLIENT_FOUND_ROWS"] = false;
    options["OPT_CHARSET_NAME"] = sql::SQLString("utf8mb4");
    conn.reset(sql::mysql::get_mysql_driver_instance()->connect(options));
    direct.reset(conn->createStatement());
    direct->execute("SET SESSION time_zone = '+00:00'");
  }
  prepared prepare(const std::string& dollar_sql) {
    auto native = detail::rewrite_placeholders(dollar_sql, detail::placeholder_style::question);
    prepared p{std::unique_ptr<sql::PreparedStatement>(conn->prepareStatement(native.sql)), std::move(native)};
    return p;
  }
};

// Per thread: a client and its prepared statements, in the order the cycle uses them.
struct thread_state {
  std::unique_ptr<my_client> client;
  std::vector<prepared> st;
};

std::vector<thread_state> connect(int threads, const std::vector<std::string>& statements) {
  const auto uri = target_uri(d::mysql);
  if (!uri) throw std::runtime_error("no MariaDB server configured (SQLLOCK_TEST_MYSQL_URI)");
  open_target(d::mysql);  // the lock table exists
  const auto spec = detail::parse_uri(*uri);
  std::vector<thread_state> out(static_cast<std::size_t>(threads));
  for (auto& ts : out) {
    ts.client = std::make_unique<my_client>(spec);
    for (const auto& s : statements) ts.st.push_back(ts.client->prepare(s));
  }
  return out;
}

void table_cycles(benchmark::State& state, int threads) {
  const auto& sql = table_sql(d::mysql);
  auto ts = connect(threads, {sql.acquire, sql.acquire_readback, sql.release_delete});
  run_and_report(state, threads, [&](int t) {
    auto& st = ts[static_cast<std::size_t>(t)].st;
    const std::string resource = "raw-cycle-" + std::to_string(t);
    const std::string owner = owner_of(t);
    if (st[0].update(acquire_params(resource, t)) == 0) throw std::runtime_error("raw acquire refused");
    const auto back = st[1].query({resource, owner});
    if (!back->next()) throw std::runtime_error("raw read-back found no row");
    st[2].update({resource, owner, static_cast<std::int64_t>(back->getInt64(2))});
  });
}

void named_cycles(benchmark::State& state, int threads) {
  const auto& sql = detail::named_lock_statements(d::mysql);
  auto ts = connect(threads, {sql.get_lock, sql.release_lock});
  run_and_report(state, threads, [&](int t) {
    auto& st = ts[static_cast<std::size_t>(t)].st;
    // As long as sqllock's names: 'sqllock:' + 56 hex digits.
    const std::string name = "sqllock:raw-cycle-" + std::string(46 - std::to_string(t).size(), '0') + std::to_string(t);
    const auto got = st[0].query({name, std::string("0")});
    if (!got->next() || got->getInt(1) != 1) throw std::runtime_error("raw GET_LOCK refused");
    st[1].query({name});
  });
}

void row_cycles(benchmark::State& state, int threads) {
  const auto& sql = row_sql(d::mysql);
  auto ts = connect(threads, {sql.probe, sql.lock, sql.ensure});
  for (std::size_t t = 0; t < ts.size(); ++t) ts[t].st[2].update({"raw-cycle-" + std::to_string(t)});
  run_and_report(state, threads, [&](int t) {
    auto& s = ts[static_cast<std::size_t>(t)];
    const std::vector<detail::value> key{"raw-cycle-" + std::to_string(t)};
    s.client->direct->execute("START TRANSACTION");
    s.st[0].query(key);
    if (!s.st[1].query(key)->next()) throw std::runtime_error("raw row lock found no row");
    s.client->direct->execute("COMMIT");
  });
}

// A semaphore of 4 permits per thread (no contention), as sqllock.semaphore.mariadb.cycle_t<n>:
// the busy slots read, a free slot picked at random (as permit_store does), the upsert of that
// slot, the fence read back, the release.
void semaphore_cycles(benchmark::State& state, int threads) {
  const auto& sql = permit_sql_of(d::mysql);
  auto ts = connect(threads, {sql.busy_slots, sql.acquire, sql.acquire_readback, sql.release});
  constexpr std::int64_t kPermits = 4;
  run_and_report(state, threads, [&](int t) {
    auto& st = ts[static_cast<std::size_t>(t)].st;
    const std::string resource = "raw-semaphore-" + std::to_string(t);
    const std::string owner = owner_of(t);
    std::set<std::int64_t> busy;
    for (auto rows = st[0].query({resource}); rows->next();) busy.insert(rows->getInt64(1));
    std::vector<std::int64_t> free;
    for (std::int64_t s = 0; s < kPermits; ++s)
      if (!busy.count(s)) free.push_back(s);
    if (free.empty()) throw std::runtime_error("raw permit acquire found every slot busy");
    thread_local std::minstd_rand pick(std::random_device{}());
    const std::int64_t slot = free[std::uniform_int_distribution<std::size_t>(0, free.size() - 1)(pick)];
    if (st[1].update(permit_params_picked(resource, slot, kPermits, t)) == 0)
      throw std::runtime_error("raw permit acquire refused");
    const auto back = st[2].query({resource, slot, owner});
    if (!back->next()) throw std::runtime_error("raw permit read-back found no row");
    if (st[3].update({resource, owner, static_cast<std::int64_t>(back->getInt64(1))}) == 0)
      throw std::runtime_error("raw permit release found no permit");
  });
}

// One write level of a fair or read-write lock per thread (no contention), as
// sqllock.fair.mariadb.cycle_t<n> and sqllock.rw.mariadb.cycle_t<n>: enqueue and its read-back,
// the check's read (at its turn at once: nothing ahead expired, so its delete does not run), release.
void queue_cycles(benchmark::State& state, int threads, char queue_kind) {
  const auto& sql = queue_sql_of(d::mysql);
  auto ts = connect(threads, {sql.enqueue, sql.enqueue_readback, sql.check_read, sql.release});
  const std::string kind(1, queue_kind);
  run_and_report(state, threads, [&](int t) {
    auto& st = ts[static_cast<std::size_t>(t)].st;
    const std::string resource = "raw-queue-" + std::to_string(t);
    const std::string owner = owner_of(t);
    st[0].update(enqueue_params(resource, queue_kind, t));
    const auto placed = st[1].query({resource, kind, owner});
    if (!placed->next()) throw std::runtime_error("raw enqueue read-back found no entry");
    const std::int64_t ticket = placed->getInt64(1);
    const std::vector<detail::value> entry{resource, kind, ticket, owner};
    const auto turn = st[2].query(entry);
    if (!turn->next() || turn->getInt64(1) != 1 || turn->getInt64(2) != 0)
      throw std::runtime_error("raw queue check found the entry not at its turn");
    if (st[3].update({resource, kind, ticket, owner, std::int64_t{1}}) != 1)
      throw std::runtime_error("raw queue release found no entry");
  });
}

// Count-downs of one latch per thread (armed with the largest count, so it never opens), with
// (`participant`: a new id each time, in sqllock's transaction) or without a participant id.
void latch_count_downs(benchmark::State& state, int threads, bool participant) {
  const auto& sql = latch_sql_of(d::mysql);
  auto ts = participant ? connect(threads, {sql.lock_latch, sql.insert_arrival, sql.decrement})
                        : connect(threads, {sql.count_down, sql.read_back});
  const database db = open_target(d::mysql);
  const std::string prefix = std::string(participant ? "raw-latch-p-" : "raw-latch-") + std::to_string(threads) + "-";
  for (int t = 0; t < threads; ++t) arm_latch(db, prefix + std::to_string(t));
  std::vector<std::int64_t> calls(static_cast<std::size_t>(threads));
  run_and_report(state, threads, [&](int t) {
    auto& s = ts[static_cast<std::size_t>(t)];
    const std::string resource = prefix + std::to_string(t);
    if (!participant) {
      if (s.st[0].update({resource}) == 0) throw std::runtime_error("raw latch count-down found no armed latch");
      if (!s.st[1].query({})->next()) throw std::runtime_error("raw latch read-back returned nothing");
      return;
    }
    s.client->direct->execute(sql.participant_isolation);
    s.client->direct->execute(sql.begin);
    const auto locked = s.st[0].query({resource});
    if (!locked->next() || locked->getInt(3) == 0)
      throw std::runtime_error("raw latch count-down found no armed latch");
    const std::int64_t generation = locked->getInt64(2);
    const std::string who = "p" + std::to_string(++calls[static_cast<std::size_t>(t)]);
    if (s.st[1].update({resource, generation, who}) == 0) throw std::runtime_error("raw latch arrival not new");
    s.st[2].update({resource, generation});
    s.client->direct->execute(sql.commit);
  });
}

[[maybe_unused]] const bool registered = [] {
  for (const int threads : {1, 8}) {
    const std::string suffix = ".mariadb.cycle_t" + std::to_string(threads);
    add_case("raw.table" + suffix, [threads](benchmark::State& s) { table_cycles(s, threads); });
    add_case("raw.named" + suffix, [threads](benchmark::State& s) { named_cycles(s, threads); });
    add_case("raw.row" + suffix, [threads](benchmark::State& s) { row_cycles(s, threads); });
    add_case("raw.semaphore" + suffix, [threads](benchmark::State& s) { semaphore_cycles(s, threads); });
    add_case("raw.fair" + suffix, [threads](benchmark::State& s) { queue_cycles(s, threads, 'F'); });
    add_case("raw.rw" + suffix, [threads](benchmark::State& s) { queue_cycles(s, threads, 'R'); });
    const std::string t = "_t" + std::to_string(threads);
    add_case("raw.latch.mariadb.count_down" + t,
             [threads](benchmark::State& s) { latch_count_downs(s, threads, false); });
    add_case("raw.latch.mariadb.count_down_participant" + t,
             [threads](benchmark::State& s) { latch_count_downs(s, threads, true); });
  }
  return true;
}();

}  // namespace
}  // namespace sqllock::bench
#endif
