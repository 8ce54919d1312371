#include "dialect/renewal_sql.hpp"

#include <map>
#include <mutex>
#include <string_view>
#include <tuple>

#include "common/sql_text.hpp"
#include "dialect/dialect.hpp"
#include "dialect/permit_sql.hpp"
#include "dialect/postgresql_renew.hpp"
#include "dialect/queue_sql.hpp"

namespace sqllock::detail {
namespace {

// PostgreSQL: the clock, then the part of each table in use, then the union of what each renewed,
// tagged. The queue's rows carry their own tag: the entry's kind ('F' or 'R').
std::vector<renewal_step> postgresql(const std::string& table, lease_table_set tables) {
  std::string with(kPgRenewClock);
  std::string select;
  const auto part = [&](std::string_view cte, std::string_view rows) {
    if (!select.empty()) {
      with += ", ";
      select += " UNION ALL ";
    }
    with += cte;
    select += rows;
  };
  if (tables.contains(lease_table::locks)) part(kPgRenewLocks, "SELECT resource, owner_token, fence, 'l' FROM l");
  if (tables.contains(lease_table::permits)) part(kPgRenewPermits, "SELECT resource, owner_token, fence, 'p' FROM p");
  if (tables.contains(lease_table::queue)) part(kPgRenewQueue, "SELECT resource, owner_token, ticket, kind FROM q");
  return {renewal_step{expand_table_template(with + " " + select, dialect_kind::postgresql, table), "", 0}};
}

// MySQL/MariaDB and SQLite, and a single table anywhere: each table's own renewal, in turn.
std::vector<renewal_step> one_per_table(dialect_kind kind, const std::string& table, lease_table_set tables) {
  std::vector<renewal_step> steps;
  if (tables.contains(lease_table::locks)) {
    const auto d = make_dialect_sql(kind, table);
    steps.push_back({d->renew, d->renew_reads_back ? d->renew_readback : "", 'l'});
  }
  if (tables.contains(lease_table::permits)) {
    const auto p = permit_statements(kind, table);
    steps.push_back({p->renew, p->renew_reads_back ? p->renew_readback : "", 'p'});
  }
  if (tables.contains(lease_table::queue)) {
    const auto q = queue_statements(kind, table);
    steps.push_back({q->renew, q->renew_reads_back ? q->renew_readback : "", 0});
  }
  return steps;
}

}  // namespace

std::shared_ptr<const std::vector<renewal_step>> renewal_statements(dialect_kind kind, const std::string& table,
                                                                    lease_table_set tables) {
  static std::mutex mu;
  static std::map<std::tuple<dialect_kind, std::string, unsigned>, std::shared_ptr<const std::vector<renewal_step>>>
      cache;
  std::lock_guard lock(mu);
  auto& entry = cache[{kind, table, tables.bits()}];
  if (!entry)
    // One table: its own statement, on every dialect (what a handle holding only lock rows has
    // always sent).
    entry = std::make_shared<const std::vector<renewal_step>>(kind == dialect_kind::postgresql && tables.several()
                                                                  ? postgresql(table, tables)
                                                                  : one_per_table(kind, table, tables));
  return entry;
}

}  // namespace sqllock::detail
