#include "core/lease/queue_store.hpp"

#include "core/handle/database_impl.hpp"
#include "core/handle/field_value.hpp"
#include "core/lease/holder_values.hpp"
#include "dialect/renewal_sql.hpp"
#include "sqllock/error.hpp"

namespace sqllock::detail {
namespace {

std::string kind_text(queue_kind k) { return std::string(1, static_cast<char>(k)); }

queue_entry entry_of(const row& r, std::size_t first) {
  return {field_int64(r.at(first), "ticket"), field_int64(r.at(first + 1), "writes"),
          field_int64(r.at(first + 2), "reads")};
}

}  // namespace

result queue_store::run(const std::string& sql, std::span<const value> params) {
  return run_lease_statement(conn_, sql_.kind, sql, params);
}

std::optional<queue_entry> queue_store::enqueue(const queue_request& r) {
  const auto params = with_holder({r.resource, kind_text(r.kind)}, r.owner, r.session, r.lease, r.auto_renew,
                                  {std::int64_t{r.write ? 1 : 0}});
  auto res = run(sql_.enqueue, params);
  if (sql_.enqueue_reads_back) {
    const value key[] = {r.resource, kind_text(r.kind), r.owner};
    res = run(sql_.enqueue_readback, key);
    if (res.rows.empty()) return std::nullopt;  // deleted between the two statements
  }
  if (res.rows.empty())
    throw backend_error("the queue table returned no entry for an enqueue of '" + r.resource +
                            "' (the upsert must return its row: check the queue table's triggers and schema "
                            "version with `sqllock migrate`)",
                        "", 0);
  return entry_of(res.rows[0], 0);
}

queue_turn queue_store::check(const std::string& resource, queue_kind kind, std::int64_t ticket,
                              const std::string& owner) {
  const value params[] = {resource, kind_text(kind), ticket, owner};
  const auto no_row = [&] { return backend_error("the queue check of '" + resource + "' returned no row", "", 0); };
  result res;
  if (sql_.check_read.empty()) {
    res = run(sql_.check, params);
  } else {
    // Read first; the delete (a write) only when an expired blocker is in the window.
    res = run(sql_.check_read, params);
    if (res.rows.empty()) throw no_row();
    if (field_int64(res.rows[0].at(3), "expired") > 0) {
      const value bounded[] = {resource, kind_text(kind), ticket, owner, field_int64(res.rows[0].at(4), "last")};
      run(sql_.check, bounded);
      res = run(sql_.check_read, params);
    }
  }
  if (res.rows.empty()) throw no_row();
  const auto& r = res.rows[0];
  queue_turn turn;
  turn.mine = field_int64(r.at(0), "mine") != 0;
  turn.blockers = field_int64(r.at(1), "blockers");
  if (r.at(2)) turn.wait = std::chrono::milliseconds(field_int64(r.at(2), "wait_ms"));
  return turn;
}

std::optional<queue_entry> queue_store::release(const std::string& resource, queue_kind kind, std::int64_t ticket,
                                                const std::string& owner, bool write) {
  const value params[] = {resource, kind_text(kind), ticket, owner, std::int64_t{write ? 1 : 0}, channel_};
  const auto counts = [&](const row& r) {
    return queue_entry{ticket, field_int64(r.at(0), "writes"), field_int64(r.at(1), "reads")};
  };
  if (sql_.release_decrement.empty()) {  // one statement: what is left, or no row when gone
    const auto res = run(sql_.release, std::span(params, channel_.empty() ? 5 : 6));
    if (res.rows.empty()) return std::nullopt;
    return counts(res.rows[0]);
  }
  // The last level deletes the entry; any other is a decrement.
  if (run(sql_.release, std::span(params, 5)).affected > 0) return queue_entry{ticket, 0, 0};
  const auto res = run(sql_.release_decrement, std::span(params, 5));
  if (!sql_.release_reads_back) {
    if (res.rows.empty()) return std::nullopt;
    return counts(res.rows[0]);
  }
  if (res.affected == 0) return std::nullopt;
  const auto back = run(sql_.release_readback, std::span(params, 4));
  if (back.rows.empty()) return std::nullopt;
  return counts(back.rows[0]);
}

bool queue_store::leave(const std::string& resource, queue_kind kind, std::int64_t ticket, const std::string& owner) {
  const value params[] = {resource, kind_text(kind), ticket, owner, channel_};
  const auto res = run(sql_.leave, std::span(params, channel_.empty() ? 4 : 5));
  return !res.rows.empty() || res.affected > 0;
}

namespace {

class queue_entries final : public lease_store {
 public:
  constexpr explicit queue_entries(queue_kind kind) noexcept
      : lease_store(lease_table::queue, static_cast<char>(kind)), kind_(kind) {}
  void end_orphan(database_impl& db, connection& conn, const held_lease& row) const override {
    const auto sql = queue_statements(db.dialect(), db.options().table);
    queue_store(conn, *sql, db.sql().wakeup_channel).leave(row.resource, kind_, row.fence, row.owner);
  }

 private:
  const queue_kind kind_;
};

constinit const queue_entries kFairEntries(queue_kind::fair);
constinit const queue_entries kRwEntries(queue_kind::rw);

}  // namespace

const lease_store& queue_entries_store(queue_kind kind) { return kind == queue_kind::fair ? kFairEntries : kRwEntries; }

}  // namespace sqllock::detail
