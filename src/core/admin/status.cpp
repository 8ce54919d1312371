// Operator views of the lock table, the permits and the wait queue (list, find, pg_locks) and
// forced release.
#include "sqllock/status.hpp"

#include "core/admin/admin_store.hpp"
#include "core/handle/database_impl.hpp"
#include "common/lock_name.hpp"
#include "sqllock/error.hpp"

namespace sqllock {
namespace {

// Runs `body` with an admin_store on a pooled connection of `db`.
template <class F>
auto with_store(const database& db, F&& body, detail::lease_table which = detail::lease_table::locks) {
  auto& impl = detail::database_access::impl(db);
  const auto sql = detail::make_admin_sql(impl.dialect(), db.table(), which);
  auto conn = impl.borrow();
  detail::admin_store store(*conn, *sql);
  return body(store, impl);
}

}  // namespace

std::vector<lock_info> list_locks(const database& db) {
  return with_store(db, [](detail::admin_store& s, auto&) { return s.list_locks(); });
}

std::optional<lock_info> find_lock(const database& db, std::string_view name) {
  detail::validate_lock_name(name);
  return with_store(db, [&](detail::admin_store& s, auto&) { return s.find_lock(std::string(name)); });
}

std::vector<advisory_lock_info> list_advisory_locks(const database& db) {
  if (db.dialect() != dialect_kind::postgresql)
    throw not_supported("advisory locks exist on PostgreSQL only, not on " + std::string(to_string(db.dialect())));
  return with_store(db, [](detail::admin_store& s, auto&) { return s.advisory_locks(); });
}

std::optional<lock_info> force_release(const database& db, std::string_view name) {
  detail::validate_lock_name(name);
  return with_store(db, [&](detail::admin_store& s, detail::database_impl& impl) {
    return s.force_release(std::string(name), impl.sql().wakeup_channel);
  });
}

std::vector<permit_info> list_permits(const database& db) {
  return with_store(
      db, [](detail::admin_store& s, auto&) { return s.list_permits(); }, detail::lease_table::permits);
}

std::vector<permit_info> find_permits(const database& db, std::string_view name) {
  detail::validate_lock_name(name);
  return with_store(
      db, [&](detail::admin_store& s, auto&) { return s.find_permits(std::string(name)); },
      detail::lease_table::permits);
}

std::vector<permit_info> force_release_permits(const database& db, std::string_view name) {
  detail::validate_lock_name(name);
  return with_store(
      db,
      [&](detail::admin_store& s, detail::database_impl& impl) {
        return s.force_release_permits(std::string(name), impl.sql().wakeup_channel);
      },
      detail::lease_table::permits);
}

std::vector<queue_entry_info> list_queue_entries(const database& db) {
  return with_store(
      db, [](detail::admin_store& s, auto&) { return s.list_queue(); }, detail::lease_table::queue);
}

std::vector<queue_entry_info> find_queue_entries(const database& db, std::string_view name,
                                                 std::optional<queue_lock_kind> kind) {
  detail::validate_lock_name(name);
  return with_store(
      db, [&](detail::admin_store& s, auto&) { return s.find_queue(std::string(name), kind); },
      detail::lease_table::queue);
}

std::vector<queue_entry_info> force_release_queue_entries(const database& db, std::string_view name,
                                                          std::optional<queue_lock_kind> kind) {
  detail::validate_lock_name(name);
  return with_store(
      db,
      [&](detail::admin_store& s, detail::database_impl& impl) {
        return s.force_release_queue(std::string(name), impl.sql().wakeup_channel, kind);
      },
      detail::lease_table::queue);
}

}  // namespace sqllock
