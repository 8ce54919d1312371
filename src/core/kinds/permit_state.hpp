// What sqllock::semaphore (semaphore.cpp) and sqllock::permit (permit.cpp) share: semaphore_shared,
// the handle and statements of one semaphore object that its permits keep, and permit_state, one
// held permit, which the semaphore creates when it is granted a slot and permit.cpp gives back.
// SQL lives in the dialect (dialect/permit_sql.hpp) and runs through permit_store; renewal and
// loss detection are the lease registry's.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/handle/clock.hpp"
#include "core/handle/database_impl.hpp"
#include "core/hold/ownership.hpp"
#include "core/lease/lease_registry.hpp"
#include "core/lease/permit_store.hpp"
#include "sqllock/database.hpp"
#include "sqllock/lease_claim.hpp"
#include "sqllock/semaphore.hpp"

namespace sqllock::detail {

// What both the semaphore object and its permits need: the handle (kept alive), the statements.
// Made once per semaphore object (its name and permits already checked) and never changed; each
// permit_state holds a reference, so it outlives the semaphore while a permit of it exists.
struct semaphore_shared {
  semaphore_shared(const database& d, std::string n, std::int64_t p, semaphore_options o)
      : db(d), impl(database_access::impl(d)), name(std::move(n)), permits(p), options(std::move(o)),
        sql(permit_statements(impl.dialect(), impl.options().table)),
        who("semaphore_options", "permit of semaphore '" + name + "'", "", options.on_unlock_error) {}

  // The permit statements on `conn` (which must outlive the store).
  permit_store store(connection& conn) const { return permit_store(conn, *sql, impl.sql().wakeup_channel); }

  database db;  // keeps the handle (and its watchdog) alive while a semaphore or permit exists
  database_impl& impl;
  const std::string name;
  const std::int64_t permits;
  const semaphore_options options;
  const std::shared_ptr<const permit_sql> sql;
  const ownership who;  // messages and on_unlock_error
};

// One granted permit: its lease slot, pinned in the registry, and the grant's slot number and
// generation. Defined in permit.cpp.
class permit_state {
 public:
  // Takes over a slot the registry recorded as acquired (record_acquired returned `generation`)
  // and pinned once more for this permit: the permit unpins it when it lets go. `number` is the
  // permit's slot, 0 … N-1. Registers options.on_lost, if any, on the slot's loss signal.
  permit_state(std::shared_ptr<const semaphore_shared> shared, std::shared_ptr<lease_slot> slot, std::int64_t number,
               std::uint64_t generation);
  // Releases a permit still held (errors to on_unlock_error); gives it up when that release threw.
  ~permit_state();

  // The hold as the registry sees it; not held once released, or when the slot has been granted
  // again since (another generation). Empty when this object holds nothing.
  hold_view view() const;
  // The permit's slot, 0 … N-1.
  std::int64_t number() const { return number_; }
  // This permit's hold for a guard (core/lease/lease_claim.hpp). Only while !empty(); throws
  // not_held / lock_lost as claim_hold does.
  lease_claim claim() const;
  const std::string& name() const { return shared_->name; }
  const time_source& time() const { return shared_->impl.time(); }
  // True once the slot is let go: released, given up, or found lost by release().
  bool empty() const { return !slot_; }

  // Gives the permit back (sqllock::permit::release() says what it throws). Throws not_held when
  // this object holds nothing.
  void release();

 private:
  // Gives the permit up locally: no longer renewed; if its row is still there, the watchdog
  // deletes it as an orphan.
  void abandon() noexcept;
  // Drops the slot: clears the loss callback and unpins it from the registry.
  void let_go() noexcept;

  std::shared_ptr<const semaphore_shared> shared_;
  std::shared_ptr<lease_slot> slot_;
  const std::int64_t number_;
  const std::uint64_t generation_;
};

}  // namespace sqllock::detail
