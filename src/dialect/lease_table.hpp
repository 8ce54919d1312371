// The tables of leased rows that sit beside a lock table: its own rows (table_lock, multi_lock), the
// semaphore permits (`<table>_permits`, migration 0003) and the wait queue (`<table>_queue`,
// fair_lock and rw_lock, migration 0005). One name for them everywhere: which tables a renewal
// renews (renewal_sql.hpp), which table an operator statement works on (admin_sql.hpp), and which
// table a lease store's rows live in (core/lease/lease_store.hpp).
#pragma once

namespace sqllock::detail {

enum class lease_table : unsigned { locks, permits, queue };

// Every lease table, in the order the reaper visits them.
inline constexpr lease_table kLeaseTables[] = {lease_table::locks, lease_table::permits, lease_table::queue};

// A set of lease tables (the tables one renewal covers).
class lease_table_set {
 public:
  constexpr lease_table_set() noexcept = default;
  // Implicit: a table is a set of one.
  constexpr lease_table_set(lease_table t) noexcept : bits_(bit(t)) {}
  constexpr lease_table_set& add(lease_table t) noexcept {
    bits_ |= bit(t);
    return *this;
  }
  constexpr bool contains(lease_table t) const noexcept { return (bits_ & bit(t)) != 0; }
  constexpr bool empty() const noexcept { return bits_ == 0; }
  // More than one table.
  constexpr bool several() const noexcept { return (bits_ & (bits_ - 1)) != 0; }
  constexpr unsigned bits() const noexcept { return bits_; }

 private:
  static constexpr unsigned bit(lease_table t) noexcept { return 1u << static_cast<unsigned>(t); }
  unsigned bits_ = 0;
};

}  // namespace sqllock::detail
