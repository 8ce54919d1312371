#include "core/lease/permit_store.hpp"

#include <random>
#include <set>

#include "core/handle/database_impl.hpp"
#include "core/handle/field_value.hpp"
#include "core/lease/holder_values.hpp"
#include "dialect/renewal_sql.hpp"

namespace sqllock::detail {
namespace {

// Picks beyond N that an acquire may spend: on deadlock victims (rolled back whole, so not
// necessarily a slot that someone else took) and on slots released and taken again meanwhile.
constexpr std::int64_t kSparePicks = 4;

}  // namespace

result permit_store::run(const std::string& sql, std::span<const value> params) {
  return run_lease_statement(conn_, sql_.kind, sql, params);
}

// A pick that loses its slot to a concurrent acquire picks again among the slots still free, until
// one is taken or the read finds all N busy. Each lost pick is a slot that another acquire now
// holds, committed (the losing statement decided on the newest version of the row: the ON
// CONFLICT arbiter, the duplicate key's row lock, SQLite's single writer), so the next read sees
// it busy and it is not picked again. Unless permits are released meanwhile, that ends after at
// most N lost picks; the bound of N + kSparePicks only stops endless churn (a release and a new
// grant for every pick) from keeping one attempt going. An uncontended acquire sends exactly what
// it did before: one statement on PostgreSQL.
std::optional<permit_grant> permit_store::acquire(const permit_request& r) {
  const std::int64_t picks = r.permits + kSparePicks;
  for (std::int64_t attempt = 0; attempt < picks; ++attempt) {
    if (!sql_.picks_slot_on_client) {
      const auto params = with_holder({r.resource, r.permits}, r.owner, r.session, r.lease, r.auto_renew);
      result res;
      try {
        res = run(sql_.acquire, params);
      } catch (const deadlock&) {
        continue;  // rolled back whole: nothing taken
      }
      if (res.rows.empty()) return std::nullopt;  // every slot below N is busy
      const auto& first = res.rows[0];
      if (!first.at(1)) continue;  // the picked slot was taken meanwhile
      return permit_grant{field_int64(first.at(0), "slot"), field_int64(first.at(1), "fence")};
    }
    // MySQL, SQLite: read the busy slots, pick a free one at random, take it (MySQL: read its fence
    // back).
    const value key[] = {r.resource};
    std::set<std::int64_t> busy;
    for (const auto& busy_row : run(sql_.busy_slots, key).rows) busy.insert(field_int64(busy_row.at(0), "slot"));
    std::vector<std::int64_t> free;
    for (std::int64_t s = 0; s < r.permits && free.size() < 64; ++s)
      if (!busy.count(s)) free.push_back(s);
    if (free.empty()) return std::nullopt;
    thread_local std::minstd_rand pick(std::random_device{}());
    const std::int64_t slot = free[std::uniform_int_distribution<std::size_t>(0, free.size() - 1)(pick)];
    const auto params = with_holder({r.resource, slot}, r.owner, r.session, r.lease, r.auto_renew, {r.permits});
    result res;
    try {
      res = run(sql_.acquire, params);
    } catch (const deadlock&) {
      continue;
    }
    if (sql_.acquire_readback.empty()) {
      if (res.rows.empty()) continue;  // taken by a live permit meanwhile
      return permit_grant{slot, field_int64(res.rows[0].at(0), "fence")};
    }
    if (res.affected == 0) continue;  // taken by a live permit meanwhile
    const value back[] = {r.resource, slot, r.owner};
    const auto got = run(sql_.acquire_readback, back);
    if (got.rows.empty()) continue;  // expired and taken over in between
    return permit_grant{slot, field_int64(got.rows[0].at(0), "fence")};
  }
  return std::nullopt;
}

std::optional<std::chrono::milliseconds> permit_store::lease_remaining(const std::string& resource,
                                                                       std::int64_t permits) {
  const value params[] = {resource, permits};
  const auto res = run(sql_.lease_remaining, params);
  if (res.rows.empty() || !res.rows[0].at(0)) return std::nullopt;
  return std::chrono::milliseconds(field_int64(res.rows[0].at(0), "remaining lease"));
}

bool permit_store::release(const std::string& resource, const std::string& owner, std::int64_t fence) {
  const value params[] = {resource, owner, fence, channel_};
  const auto res = run(sql_.release, std::span(params, channel_.empty() ? 3 : 4));
  return !res.rows.empty() || res.affected > 0;
}

namespace {

class permit_rows final : public lease_store {
 public:
  constexpr permit_rows() noexcept : lease_store(lease_table::permits, 'p') {}
  void end_orphan(database_impl& db, connection& conn, const held_lease& row) const override {
    const auto sql = permit_statements(db.dialect(), db.options().table);
    permit_store(conn, *sql, db.sql().wakeup_channel).release(row.resource, row.owner, row.fence);
  }
};

constinit const permit_rows kPermitRows;

}  // namespace

const lease_store& permit_rows_store() { return kPermitRows; }

}  // namespace sqllock::detail
