#include "core/lease/table_store.hpp"

#include <unistd.h>

#include <optional>
#include <thread>

#include "core/wait/backoff.hpp"
#include "core/handle/database_impl.hpp"
#include "core/handle/error_translation.hpp"
#include "core/handle/field_value.hpp"
#include "core/lease/holder_values.hpp"
#include "dialect/renewal_sql.hpp"
#include "sqllock/error.hpp"

namespace sqllock::detail {

result run_lease_statement(connection& conn, dialect_kind kind, const std::string& sql, std::span<const value> params) {
  // InnoDB can pick a release's DELETE as the victim of a deadlock with waiters' upserts of the
  // same key (their gap locks). Every statement here runs alone in autocommit, and a victim's
  // statement is rolled back whole, so running it again is safe; giving up would leave a lock its
  // owner tried to release held and renewed.
  // On Galera the same error (1213) is a certification conflict with another node's statement —
  // acquires on every node update the one fence-counter row — so the retries back off a little,
  // at random, to let the other node's write through.
  constexpr int kDeadlockAttempts = 4;
  std::optional<backoff> pause;  // made on the first retry: seeding it costs a system call
  for (int attempt = 1;; ++attempt) {
    if (attempt > 1) {
      if (!pause) pause.emplace(std::chrono::milliseconds(2), std::chrono::milliseconds(16));
      std::this_thread::sleep_for(pause->next());
    }
    try {
      return conn.exec(sql, params);
    } catch (const connection_error& e) {
      rethrow_outcome_unknown(e,
                              "the connection broke while a lock statement ran; whether it took effect is "
                              "unknown: a lease it created expires on its own");
    } catch (const backend_error& e) {
      if (classify(kind, e) != error_kind::deadlock || attempt == kDeadlockAttempts) {
        rethrow_classified(kind, e,
                           {.subject = "a lock statement failed",
                            .rolled_back = "the statement (it changed nothing)",
                            .retry = "the call"});
      }
    }
  }
}

namespace {

class lock_rows final : public lease_store {
 public:
  constexpr lock_rows() noexcept : lease_store(lease_table::locks, 'l') {}
  void end_orphan(database_impl& db, connection& conn, const held_lease& row) const override {
    table_store(conn, db.sql()).release(row.resource, row.owner, row.fence, 1);
  }
};

constinit const lock_rows kLockRows;

}  // namespace

const lease_store& lock_rows_store() { return kLockRows; }

result table_store::run(const std::string& sql, std::span<const value> params) {
  return run_lease_statement(conn_, sql_.kind, sql, params);
}

std::optional<acquired> table_store::acquire(const acquire_request& r) {
  const auto params = with_holder({r.resource}, r.owner, r.session, r.lease, r.auto_renew);
  result res;
  try {
    res = run(sql_.acquire, params);
  } catch (const deadlock&) {
    // A deadlock victim even after the retries (on Galera: certification conflicts with other
    // nodes' acquires): the statement was rolled back whole, so nothing is held. That is
    // contention, like a refusal: lock() tries again, try_lock() returns false.
    return std::nullopt;
  }
  if (!sql_.acquire_reads_back) {
    if (res.rows.empty()) return std::nullopt;
    return acquired{field_int64(res.rows[0].at(0), "count"), field_int64(res.rows[0].at(1), "fence")};
  }
  if (res.affected == 0) return std::nullopt;
  const value key[] = {r.resource, r.owner};
  const auto back = run(sql_.acquire_readback, key);
  if (back.rows.empty()) return std::nullopt;  // expired and taken over in between: not acquired
  return acquired{field_int64(back.rows[0].at(0), "count"), field_int64(back.rows[0].at(1), "fence")};
}

std::optional<std::chrono::milliseconds> table_store::lease_remaining(const std::string& resource) {
  const value params[] = {resource};
  const auto res = run(sql_.lease_remaining, params);
  if (res.rows.empty()) return std::nullopt;
  return std::chrono::milliseconds(field_int64(res.rows[0].at(0), "remaining lease"));
}

bool table_store::release(const std::string& resource, const std::string& owner, std::int64_t fence,
                          std::int64_t depth) {
  if (depth > 1) {
    const value params[] = {resource, owner, fence, depth};
    return run(sql_.release_decrement, params).affected > 0;
  }
  const value params[] = {resource, owner, fence, sql_.wakeup_channel};
  const auto res = run(sql_.release_delete, std::span(params, sql_.wakeup_channel.empty() ? 3 : 4));
  return !res.rows.empty() || res.affected > 0;
}

std::vector<held_lease> table_store::renew(const std::string& session) {
  const value params[] = {session};
  auto res = run(sql_.renew, params);
  if (sql_.renew_reads_back) res = run(sql_.renew_readback, params);
  return read_held_leases(res, &kLockRows);
}

}  // namespace sqllock::detail
