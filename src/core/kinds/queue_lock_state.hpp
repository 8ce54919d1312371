// The state behind sqllock::fair_lock and sqllock::rw_lock (fair_lock.cpp, rw_lock.cpp): places
// in the wait queue (dialect/queue_sql.hpp), taken, waited on and given back. SQL lives in the
// dialect and runs through queue_store; the lease of a place, waiting or holding, is renewed and
// watched by lease_registry.
//
// One acquire: enqueue (a new place with a ticket, or one more level on the owner's place), then
// check until the place is at its turn (retry_wait: NOTIFY on PostgreSQL, backoff elsewhere that
// starts again whenever the queue moved up, never sleeping past the first blocker's lease end),
// then the hold is recorded. A place lost while waiting (its lease ran out while this process or
// the database was unreachable, or it was released by force) is taken again at the back of the
// queue. A timeout gives the place back.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>

#include "core/handle/clock.hpp"
#include "core/handle/database_impl.hpp"
#include "core/hold/ownership.hpp"
#include "core/lease/lease_levels.hpp"
#include "core/lease/queue_store.hpp"
#include "sqllock/database.hpp"
#include "sqllock/lease_claim.hpp"
#include "sqllock/lock_options.hpp"

namespace sqllock::detail {

// The options of both kinds, which have the same fields.
struct queue_lock_settings {
  std::chrono::milliseconds ttl;
  bool auto_renew;
  std::string owner;
  lost_callback on_lost;
  unlock_error_callback on_unlock_error;

  template <class Options>
  static queue_lock_settings of(Options o) {
    return {o.ttl, o.auto_renew, std::string(o.owner), std::move(o.on_lost), std::move(o.on_unlock_error)};
  }
};

class queue_lock_state {
 public:
  queue_lock_state(const database& db, std::string_view name, queue_kind kind, queue_lock_settings settings);
  ~queue_lock_state();

  queue_lock_state(const queue_lock_state&) = delete;
  queue_lock_state& operator=(const queue_lock_state&) = delete;

  // One level of `write` or read mode for the calling owner, waiting until `deadline` (none:
  // forever) or a stop on `stop`. False when either came first (the place is given back).
  bool acquire(bool write, std::optional<time_source::time_point> deadline, std::stop_token stop = {});

  // Gives back one level of `write` or read mode of `owner`; throws not_held when it was lost.
  void release_as(const std::string& owner, bool write);

  hold_view current() const { return levels_.current(current_owner()); }
  // The calling owner's place, held, as a guard checks it (core/lease/lease_claim.hpp).
  lease_claim claim() const;

  // Levels of the calling owner in `write` or read mode.
  std::int64_t levels(bool write) const { return levels_.count(current_owner(), write ? kWrite : kRead); }

  const std::string& name() const noexcept { return name_; }
  const ownership& who() const noexcept { return who_; }
  const time_source& time() const noexcept { return impl_.time(); }

  // The owner token of the calling thread (or of the explicit owner key): scoped to the handle.
  std::string current_owner() const { return impl_.registry().session() + "/" + who_.owner(); }

  // Whether the calling owner holds it now (by the local clock): in write mode only, in read mode
  // only, or in either. False on any error.
  bool holds_mode(bool write_only, bool read_only) const noexcept;
  // levels(write), or 0 on any error.
  std::int64_t levels_or_zero(bool write) const noexcept;

  static constexpr std::size_t kWrite = 0;  // owner_levels mode of write (exclusive) levels
  static constexpr std::size_t kRead = 1;   // and of read (shared) levels

 private:
  static const std::string& checked(const std::string& name, std::chrono::milliseconds ttl);
  queue_store store(connection& conn) const;
  queue_request request(const std::string& owner, bool write) const;
  std::string upgrade_refused() const;
  // One more level on the owner's held place. False when the place turned out to be lost (its
  // entry had run out and the enqueue made a new one, now given back; or it was released by force
  // as the level was added).
  bool add_level(const std::string& owner, const lease_levels::entry& mine, bool write);

  database db_;  // keeps the handle (and its watchdog) alive while this lock exists
  database_impl& impl_;
  const std::string name_;
  const queue_kind kind_;
  const lease_store& store_;
  const std::shared_ptr<const queue_sql> sql_;
  const queue_lock_settings settings_;
  const ownership who_;
  lease_levels levels_;
};

}  // namespace sqllock::detail
