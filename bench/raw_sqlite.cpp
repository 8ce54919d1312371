// The raw SQLite baseline: sqllock's statements, prepared once per session and executed with SOCI
// directly (SOCI is the client library sqllock uses for SQLite). Named raw.table.sqlite.cycle_t<n>,
// raw.semaphore.sqlite.cycle_t<n>, raw.fair.sqlite.cycle_t<n>, raw.rw.sqlite.cycle_t<n> and
// raw.latch.sqlite.count_down[_participant]_t<n>.
#ifdef SQLLOCK_HAVE_SOCI
#include <random>
#include <soci/soci.h>
#include <soci/sqlite3/soci-sqlite3.h>

#include "common/uri.hpp"
#include "support/databases.hpp"
#include "support/harness.hpp"
#include "support/raw_sql.hpp"

namespace sqllock::bench {
namespace {

using d = dialect_kind;

// A prepared statement whose parameters are bound, by reference, to its own storage: set the
// values, then execute.
struct prepared {
  std::vector<long long> ints;
  std::vector<std::string> texts;
  detail::native_statement native;
  std::unique_ptr<soci::statement> st;

  // `sample` has a value of the right type (integer or text) for each $N.
  prepared(soci::session& s, const std::string& dollar_sql, const std::vector<detail::value>& sample,
           long long* int_out, long long* int_out2, std::string* text_out, long long* int_out3 = nullptr)
      : native(detail::rewrite_placeholders(dollar_sql, detail::placeholder_style::colon)) {
    ints.resize(native.order.size());
    texts.resize(native.order.size());
    st = std::make_unique<soci::statement>(s);
    for (std::size_t i = 0; i < native.order.size(); ++i) {
      std::string name = "p";  // appended: "p" + to_string() trips a false -Wrestrict (g++ 12, -O3)
      name += std::to_string(i + 1);
      if (std::holds_alternative<std::int64_t>(sample.at(native.order[i])))
        st->exchange(soci::use(ints[i], name));
      else
        st->exchange(soci::use(texts[i], name));
    }
    if (int_out) st->exchange(soci::into(*int_out));
    if (int_out2) st->exchange(soci::into(*int_out2));
    if (text_out) st->exchange(soci::into(*text_out));
    if (int_out3) st->exchange(soci::into(*int_out3));
    st->alloc();
    st->prepare(native.sql);
    st->define_and_bind();
  }
  // Executes with `params` ($1 …); true when a row came back.
  bool run(const std::vector<detail::value>& params) {
    for (std::size_t i = 0; i < native.order.size(); ++i) {
      const auto& v = params.at(native.order[i]);
      if (std::holds_alternative<std::int64_t>(v))
        ints[i] = std::get<std::int64_t>(v);
      else
        texts[i] = std::get<std::string>(v);
    }
    // Step to the end, as sqllock's driver does: a statement left on its RETURNING row would keep
    // its write transaction open, so later statements would commit with it instead of alone.
    const bool got = st->execute(true);
    while (got && st->fetch()) {
    }
    return got;
  }
  // Rows the last run changed.
  long long affected() { return st->get_affected_rows(); }
};

// One thread's session and statements.
struct client {
  soci::session session;
  long long count = 0, fence = 0;
  std::string gone;
  std::unique_ptr<prepared> acquire, release;
  explicit client(const std::string& path) : session(*soci::factory_sqlite3(), path) {
    // As sqllock's SOCI driver sets up its sessions (the file is already in WAL mode).
    session << "PRAGMA busy_timeout = 10000";
    session << "PRAGMA synchronous = NORMAL";
    const auto& sql = table_sql(d::sqlite);
    acquire = std::make_unique<prepared>(session, sql.acquire, acquire_params("", 0), &count, &fence, nullptr);
    release = std::make_unique<prepared>(session, sql.release_delete,
                                         std::vector<detail::value>{"", "", std::int64_t{0}}, nullptr, nullptr, &gone);
  }
};

void table_cycles(benchmark::State& state, int threads) {
  open_target(d::sqlite);  // the lock table exists
  const auto path = detail::parse_uri(*target_uri(d::sqlite)).path;
  std::vector<std::unique_ptr<client>> clients;
  for (int t = 0; t < threads; ++t) clients.push_back(std::make_unique<client>(path));
  run_and_report(state, threads, [&](int t) {
    auto& c = *clients[static_cast<std::size_t>(t)];
    const std::string resource = "raw-cycle-" + std::to_string(t);
    if (!c.acquire->run(acquire_params(resource, t))) throw std::runtime_error("raw acquire refused");
    c.release->run({resource, owner_of(t), std::int64_t{c.fence}});
  });
}

// A semaphore of 4 permits per thread (no contention), as sqllock.semaphore.sqlite.cycle_t<n>.
void semaphore_cycles(benchmark::State& state, int threads) {
  struct permit_client {
    soci::session session;
    long long busy = 0, fence = 0;
    std::string gone;
    std::unique_ptr<prepared> busy_slots, acquire, release;
    std::minstd_rand pick{std::random_device{}()};
    explicit permit_client(const std::string& path) : session(*soci::factory_sqlite3(), path) {
      session << "PRAGMA busy_timeout = 10000";
      session << "PRAGMA synchronous = NORMAL";
      const auto& sql = permit_sql_of(d::sqlite);
      // As permit_store does: read the busy slots, pick a free one at random, take it (RETURNING
      // its fence). Each thread has its own semaphore, so no slot is ever busy here.
      busy_slots = std::make_unique<prepared>(session, sql.busy_slots, std::vector<detail::value>{""}, &busy, nullptr,
                                              nullptr);
      acquire = std::make_unique<prepared>(session, sql.acquire, permit_params_picked("", 0, 4, 0), &fence, nullptr,
                                           nullptr);
      release = std::make_unique<prepared>(session, sql.release, std::vector<detail::value>{"", "", std::int64_t{0}},
                                           nullptr, nullptr, &gone);
    }
  };
  open_target(d::sqlite);
  const auto path = detail::parse_uri(*target_uri(d::sqlite)).path;
  std::vector<std::unique_ptr<permit_client>> clients;
  for (int t = 0; t < threads; ++t) clients.push_back(std::make_unique<permit_client>(path));
  run_and_report(state, threads, [&](int t) {
    auto& c = *clients[static_cast<std::size_t>(t)];
    const std::string resource = "raw-semaphore-" + std::to_string(t);
    if (c.busy_slots->run({resource})) throw std::runtime_error("raw permit acquire found a busy slot");
    const std::int64_t slot = std::uniform_int_distribution<std::int64_t>(0, 3)(c.pick);
    if (!c.acquire->run(permit_params_picked(resource, slot, 4, t)))
      throw std::runtime_error("raw permit acquire refused");
    if (!c.release->run({resource, owner_of(t), std::int64_t{c.fence}}))
      throw std::runtime_error("raw permit release found no permit");
  });
}

// One write level of a fair or read-write lock per thread (no contention), as
// sqllock.fair.sqlite.cycle_t<n> and sqllock.rw.sqlite.cycle_t<n>: enqueue (RETURNING the ticket),
// the check's read (at its turn at once: nothing ahead expired, so its delete does not run), release.
void queue_cycles(benchmark::State& state, int threads, char queue_kind) {
  struct queue_client {
    soci::session session;
    long long ticket = 0, writes = 0, reads = 0, mine = 0, blockers = 0;
    std::unique_ptr<prepared> enqueue, check_read, release;
    explicit queue_client(const std::string& path) : session(*soci::factory_sqlite3(), path) {
      session << "PRAGMA busy_timeout = 10000";
      session << "PRAGMA synchronous = NORMAL";
      const auto& sql = queue_sql_of(d::sqlite);
      const std::vector<detail::value> entry{"", "", std::int64_t{0}, ""};
      enqueue = std::make_unique<prepared>(session, sql.enqueue, enqueue_params("", 'F', 0), &ticket, &writes, nullptr,
                                           &reads);
      // mine and blockers; wait_ms is NULL without blockers, and expired and last are not read.
      check_read = std::make_unique<prepared>(session, sql.check_read, entry, &mine, &blockers, nullptr);
      release = std::make_unique<prepared>(session, sql.release,
                                           std::vector<detail::value>{"", "", std::int64_t{0}, "", std::int64_t{0}},
                                           nullptr, nullptr, nullptr);
    }
  };
  open_target(d::sqlite);
  const auto path = detail::parse_uri(*target_uri(d::sqlite)).path;
  std::vector<std::unique_ptr<queue_client>> clients;
  for (int t = 0; t < threads; ++t) clients.push_back(std::make_unique<queue_client>(path));
  const std::string kind(1, queue_kind);
  run_and_report(state, threads, [&](int t) {
    auto& c = *clients[static_cast<std::size_t>(t)];
    const std::string resource = "raw-queue-" + std::to_string(t);
    const std::string owner = owner_of(t);
    if (!c.enqueue->run(enqueue_params(resource, queue_kind, t)))
      throw std::runtime_error("raw enqueue returned no entry");
    const std::vector<detail::value> entry{resource, kind, std::int64_t{c.ticket}, owner};
    if (!c.check_read->run(entry) || c.mine != 1 || c.blockers != 0)
      throw std::runtime_error("raw queue check found the entry not at its turn");
    c.release->run({resource, kind, std::int64_t{c.ticket}, owner, std::int64_t{1}});
    if (c.release->affected() != 1) throw std::runtime_error("raw queue release found no entry");
  });
}

// Count-downs of one latch per thread (armed with the largest count, so it never opens), with
// (`participant`: a new id each time, in sqllock's BEGIN IMMEDIATE transaction) or without one.
void latch_count_downs(benchmark::State& state, int threads, bool participant) {
  const auto& sql = latch_sql_of(d::sqlite);
  struct latch_client {
    soci::session session;
    long long count = 0, generation = 0, armed = 0;
    std::unique_ptr<prepared> count_down, lock_latch, insert_arrival, decrement;
    latch_client(const std::string& path, const detail::latch_sql& sql) : session(*soci::factory_sqlite3(), path) {
      session << "PRAGMA busy_timeout = 10000";
      session << "PRAGMA synchronous = NORMAL";
      const std::vector<detail::value> text{""}, text_int{"", std::int64_t{0}}, text_int_text{"", std::int64_t{0}, ""};
      count_down = std::make_unique<prepared>(session, sql.count_down, text, &count, nullptr, nullptr);
      lock_latch = std::make_unique<prepared>(session, sql.lock_latch, text, &count, &generation, nullptr, &armed);
      insert_arrival = std::make_unique<prepared>(session, sql.insert_arrival, text_int_text, nullptr, nullptr,
                                                  nullptr);
      decrement = std::make_unique<prepared>(session, sql.decrement, text_int, nullptr, nullptr, nullptr);
    }
  };
  const database db = open_target(d::sqlite);
  const auto path = detail::parse_uri(*target_uri(d::sqlite)).path;
  const std::string prefix = std::string(participant ? "raw-latch-p-" : "raw-latch-") + std::to_string(threads) + "-";
  for (int t = 0; t < threads; ++t) arm_latch(db, prefix + std::to_string(t));
  std::vector<std::unique_ptr<latch_client>> clients;
  for (int t = 0; t < threads; ++t) clients.push_back(std::make_unique<latch_client>(path, sql));
  std::vector<std::int64_t> calls(static_cast<std::size_t>(threads));
  run_and_report(state, threads, [&](int t) {
    auto& c = *clients[static_cast<std::size_t>(t)];
    const std::string resource = prefix + std::to_string(t);
    if (!participant) {
      if (!c.count_down->run({resource})) throw std::runtime_error("raw latch count-down found no armed latch");
      return;
    }
    c.session << sql.begin;
    try {
      if (!c.lock_latch->run({resource}) || c.armed == 0)
        throw std::runtime_error("raw latch count-down found no armed latch");
      const std::string who = "p" + std::to_string(++calls[static_cast<std::size_t>(t)]);
      c.insert_arrival->run({resource, std::int64_t{c.generation}, who});
      if (c.insert_arrival->affected() == 0) throw std::runtime_error("raw latch arrival not new");
      c.decrement->run({resource, std::int64_t{c.generation}});
    } catch (...) {
      c.session << sql.rollback;
      throw;
    }
    c.session << sql.commit;
  });
}

[[maybe_unused]] const bool registered = [] {
  for (const int threads : {1, 8}) {
    add_case("raw.table.sqlite.cycle_t" + std::to_string(threads),
             [threads](benchmark::State& s) { table_cycles(s, threads); });
    add_case("raw.semaphore.sqlite.cycle_t" + std::to_string(threads),
             [threads](benchmark::State& s) { semaphore_cycles(s, threads); });
    add_case("raw.fair.sqlite.cycle_t" + std::to_string(threads),
             [threads](benchmark::State& s) { queue_cycles(s, threads, 'F'); });
    add_case("raw.rw.sqlite.cycle_t" + std::to_string(threads),
             [threads](benchmark::State& s) { queue_cycles(s, threads, 'R'); });
    const std::string t = "_t" + std::to_string(threads);
    add_case("raw.latch.sqlite.count_down" + t,
             [threads](benchmark::State& s) { latch_count_downs(s, threads, false); });
    add_case("raw.latch.sqlite.count_down_participant" + t,
             [threads](benchmark::State& s) { latch_count_downs(s, threads, true); });
  }
  return true;
}();

}  // namespace
}  // namespace sqllock::bench
#endif
