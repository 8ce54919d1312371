// The raw SQLite baseline: sqllock's statements, prepared once per session and executed with SOCI
// directly (SOCI is the client library sqllock uses for SQLite). Named raw.table.sqlite.cycle_t<n>.
#ifdef SQLLOCK_HAVE_SOCI
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
  prepared(soci::session& s, const std::string& dollar_sql, const std::vector<detail::value>& sample, long long* int_out,
           long long* int_out2, std::string* text_out)
      : native(detail::rewrite_placeholders(dollar_sql, detail::placeholder_style::colon)) {
    ints.resize(native.order.size());
    texts.resize(native.order.size());
    st = std::make_unique<soci::statement>(s);
    for (std::size_t i = 0; i < native.order.size(); ++i) {
      std::string name = "p";  // appended: "p" + to_string() trips a false -Wrestrict (g++ 12, -O3)
      name += std::to_string(i + 1);
      if (std::holds_alternative<std::int64_t>(sample.at(native.order[i]))) st->exchange(soci::use(ints[i], name));
      else st->exchange(soci::use(texts[i], name));
    }
    if (int_out) st->exchange(soci::into(*int_out));
    if (int_out2) st->exchange(soci::into(*int_out2));
    if (text_out) st->exchange(soci::into(*text_out));
    st->alloc();
    st->prepare(native.sql);
    st->define_and_bind();
  }
  // Executes with `params` ($1 …); true when a row came back.
  bool run(const std::vector<detail::value>& params) {
    for (std::size_t i = 0; i < native.order.size(); ++i) {
      const auto& v = params.at(native.order[i]);
      if (std::holds_alternative<std::int64_t>(v)) ints[i] = std::get<std::int64_t>(v);
      else texts[i] = std::get<std::string>(v);
    }
    // Step to the end, as sqllock's driver does: a statement left on its RETURNING row would keep
    // its write transaction open, so later statements would commit with it instead of alone.
    const bool got = st->execute(true);
    while (got && st->fetch()) {
    }
    return got;
  }
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
    release = std::make_unique<prepared>(session, sql.release_delete, std::vector<detail::value>{"", "", std::int64_t{0}}, nullptr, nullptr, &gone);
  }
};

void table_cycles(benchmark::State& state, int threads) {
  open_target(d::sqlite);  // the lock table exists
  const auto path = detail::parse_uri(*target_uri(d::sqlite)).path;
  std::vector<std::unique_ptr<client>> clients;
  for (int t = 0; t < threads; ++t) clients.push_back(std::make_unique<client>(path));
  report(state, run_cycles(threads, phase_seconds(), [&](int t) {
    auto& c = *clients[static_cast<std::size_t>(t)];
    const std::string resource = "raw-cycle-" + std::to_string(t);
    if (!c.acquire->run(acquire_params(resource, t))) throw std::runtime_error("raw acquire refused");
    c.release->run({resource, owner_of(t), std::int64_t{c.fence}});
  }));
}

[[maybe_unused]] const bool registered = [] {
  for (const int threads : {1, 8})
    add_case("raw.table.sqlite.cycle_t" + std::to_string(threads),
             [threads](benchmark::State& s) { table_cycles(s, threads); });
  return true;
}();

}  // namespace
}  // namespace sqllock::bench
#endif
