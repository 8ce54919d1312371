// sqllock::semaphore and sqllock::permit: acquisition, waiting and release of permits. SQL lives in
// the dialect (dialect/permit_sql.hpp) and runs through permit_store; renewal and loss detection
// are the lease registry's, shared with table_lock (a permit is a lease_slot in its permit store).
#include "sqllock/semaphore.hpp"

#include <atomic>

#include "common/lock_name.hpp"
#include "core/handle/database_impl.hpp"
#include "core/lease/lease_claim.hpp"
#include "core/lease/lease_grant.hpp"
#include "core/lease/lease_release.hpp"
#include "core/hold/ownership.hpp"
#include "core/lease/permit_store.hpp"
#include "core/wait/retry_wait.hpp"
#include "sqllock/error.hpp"

namespace sqllock {
namespace detail {

// What a call on a permit object that holds nothing says.
constexpr const char* kEmptyPermit =
    "not held: this permit object holds no permit (it was released, moved from, or never granted); "
    "acquire one from the semaphore first";

namespace {

const std::string& checked(const std::string& name, std::int64_t permits, std::chrono::milliseconds ttl) {
  validate_lock_name(name);
  if (permits < 1 || permits > kMaxPermits)
    throw invalid_argument("semaphore '" + name + "': permits must be between 1 and " + std::to_string(kMaxPermits) +
                           ", got " + std::to_string(permits));
  validate_ttl(ttl);
  return name;
}

// Unique per permit in this process; with the handle's session token, unique everywhere.
std::string next_permit_owner(const lease_registry& registry) {
  static std::atomic<std::uint64_t> counter{0};
  return registry.session() + "/p:" + std::to_string(++counter);
}

}  // namespace

// What both the semaphore object and its permits need: the handle (kept alive), the statements.
struct semaphore_shared {
  semaphore_shared(const database& d, std::string n, std::int64_t p, semaphore_options o)
      : db(d), impl(database_access::impl(d)), name(std::move(n)), permits(p), options(std::move(o)),
        sql(permit_statements(impl.dialect(), impl.options().table)),
        who("semaphore_options", "permit of semaphore '" + name + "'", "", options.on_unlock_error) {}

  permit_store store(connection& conn) const { return permit_store(conn, *sql, impl.sql().wakeup_channel); }

  database db;  // keeps the handle (and its watchdog) alive while a semaphore or permit exists
  database_impl& impl;
  const std::string name;
  const std::int64_t permits;
  const semaphore_options options;
  const std::shared_ptr<const permit_sql> sql;
  const ownership who;  // messages and on_unlock_error
};

class permit_state {
 public:
  permit_state(std::shared_ptr<const semaphore_shared> shared, std::shared_ptr<lease_slot> slot, std::int64_t number,
               std::uint64_t generation)
      : shared_(std::move(shared)), slot_(std::move(slot)), number_(number), generation_(generation) {
    if (shared_->options.on_lost) slot_->loss.set(this, shared_->options.on_lost);
  }
  ~permit_state() {
    if (!slot_) return;
    shared_->who.unlock([&] { release(); });
    abandon();  // a release that threw gives the permit up here: it is not retried
  }

  hold_view view() const {
    if (!slot_) return {};
    auto v = shared_->impl.registry().view(*slot_);
    if (v.generation != generation_) v.held = false;
    return v;
  }
  std::int64_t number() const { return number_; }
  lease_claim claim() const {
    const claim_part part{slot_->resource, view()};
    return claim_hold(shared_->db, lease_table::permits, shared_->who.what(), slot_->owner, std::span(&part, 1),
                      shared_->impl.time().now());
  }
  const std::string& name() const { return shared_->name; }
  const time_source& time() const { return shared_->impl.time(); }
  bool empty() const { return !slot_; }

  void release() {
    if (!slot_) throw not_held(std::string("release(): ") + kEmptyPermit);
    auto& registry = shared_->impl.registry();
    // Our own reference: let_go() drops slot_, and the registry may then free the slot while the
    // lock on its op and the releasing scope still refer to it.
    const std::shared_ptr<lease_slot> slot = slot_;
    std::lock_guard op(slot->op);
    const auto v = view();
    if (!v.held) {
      abandon();
      throw not_held(shared_->who.lost_before_release("its lease expired or it was released by force"));
    }
    auto outcome = level_release::released;
    try {
      outcome = release_level(registry, *slot, v, [&](const hold_view& held) {
        auto conn = shared_->impl.borrow();
        return shared_->store(*conn).release(slot->resource, slot->owner, held.fence);
      });
    } catch (const outcome_unknown&) {
      let_go();  // no longer renewed (release_level): the permit is given up
      throw;
    }  // any other error: the permit is still held and renewed, for another release()
    let_go();
    if (outcome == level_release::lost)
      throw not_held(shared_->who.what() +
                     " is no longer held: its lease expired and another holder took the slot "
                     "over (or it was released by force)");
  }

 private:
  // Gives the permit up locally: no longer renewed; if its row is still there, the watchdog
  // deletes it as an orphan.
  void abandon() noexcept {
    if (!slot_) return;
    try {
      shared_->impl.registry().forget(*slot_);
    } catch (...) {
    }
    let_go();
  }
  void let_go() noexcept {
    if (!slot_) return;
    slot_->loss.clear(this);
    auto slot = std::move(slot_);
    try {
      shared_->impl.registry().unpin(slot);
    } catch (...) {
    }
  }

  std::shared_ptr<const semaphore_shared> shared_;
  std::shared_ptr<lease_slot> slot_;
  const std::int64_t number_;
  const std::uint64_t generation_;
};

class semaphore_state {
 public:
  semaphore_state(const database& db, std::string_view name, std::int64_t permits, semaphore_options options)
      : shared_(std::make_shared<const semaphore_shared>(db, checked(std::string(name), permits, options.ttl), permits,
                                                         std::move(options))) {}

  std::unique_ptr<permit_state> attempt() {
    auto& impl = shared_->impl;
    auto& registry = impl.registry();
    const auto& opt = shared_->options;
    const std::string owner = next_permit_owner(registry);
    auto slot = registry.pin(shared_->name, owner, permit_rows_store());
    const scoped_pin pinned(registry, slot);

    std::lock_guard op(slot->op);
    std::optional<permit_grant> got;
    time_source::time_point sent;
    {
      auto conn = impl.borrow();
      auto store = shared_->store(*conn);
      // One acquire statement; a late grant is given back by owner and fence (lease_grant.hpp).
      got = acquire_in_time(
          registry, std::span(&slot, 1), impl.time(), opt.ttl, sent,
          [&] {
            return store.acquire({shared_->name, shared_->permits, owner, registry.session(), opt.ttl, opt.auto_renew});
          },
          [&](const permit_grant& late) { store.release(shared_->name, owner, late.fence); });
    }
    if (!got) return nullptr;
    const auto generation = registry.record_acquired(*slot, acquired{1, got->fence}, opt.ttl, opt.auto_renew, sent);
    registry.pin(shared_->name, owner, permit_rows_store());  // the permit keeps the slot while it holds it
    return std::make_unique<permit_state>(shared_, slot, got->slot, generation);
  }

  std::unique_ptr<permit_state> until(std::optional<time_source::time_point> deadline, std::stop_token stop) {
    std::unique_ptr<permit_state> got;
    retry_until(shared_->impl, shared_->name, deadline,
                {.attempt = [&] { return (got = attempt()) != nullptr; },
                 .lease_remaining =
                     [&] {
                       auto conn = shared_->impl.borrow();
                       return shared_->store(*conn).lease_remaining(shared_->name, shared_->permits);
                     }},
                std::move(stop));
    return got;
  }

  const std::string& name() const noexcept { return shared_->name; }
  std::int64_t permits() const noexcept { return shared_->permits; }

 private:
  std::shared_ptr<const semaphore_shared> shared_;
};

}  // namespace detail

// ---- permit

permit::permit() noexcept = default;
permit::permit(std::unique_ptr<detail::permit_state> state) noexcept : state_(std::move(state)) {}
permit::permit(permit&& other) noexcept = default;
permit& permit::operator=(permit&& other) noexcept {
  if (this != &other) {
    state_.reset();  // releases what this one held
    state_ = std::move(other.state_);
  }
  return *this;
}
permit::~permit() = default;

bool permit::holds() const noexcept {
  try {
    if (!state_) return false;
    return detail::holds_now(state_->view(), state_->time().now());
  } catch (...) {
    return false;
  }
}

namespace {
const detail::permit_state& held(const std::unique_ptr<detail::permit_state>& s, const char* call) {
  if (!s || s->empty()) throw not_held(std::string(call) + ": " + detail::kEmptyPermit);
  return *s;
}
}  // namespace

std::int64_t permit::slot() const { return held(state_, "slot()").number(); }

std::int64_t permit::fence() const { return held(state_, "fence()").view().fence; }

std::stop_token permit::lost_token() const { return held(state_, "lost_token()").view().stop; }

const std::string& permit::name() const { return held(state_, "name()").name(); }

lease_claim permit::claim() const { return held(state_, "claim()").claim(); }

void permit::release() {
  if (!state_) throw not_held(std::string("release(): ") + detail::kEmptyPermit);
  state_->release();
}

// ---- semaphore

semaphore::semaphore(const database& db, std::string_view name, std::int64_t permits, semaphore_options options)
    : state_(std::make_unique<detail::semaphore_state>(db, name, permits, std::move(options))) {}

semaphore::~semaphore() = default;

std::optional<permit> semaphore::try_acquire() {
  if (auto got = state_->attempt()) return permit(std::move(got));
  return std::nullopt;
}

std::optional<permit> semaphore::try_acquire_until_steady(std::chrono::steady_clock::time_point deadline,
                                                          std::stop_token stop) {
  if (auto got = state_->until(deadline, std::move(stop))) return permit(std::move(got));
  return std::nullopt;
}

permit semaphore::acquire() { return permit(state_->until(std::nullopt, {})); }

std::optional<permit> semaphore::acquire(std::stop_token stop) {
  if (auto got = state_->until(std::nullopt, std::move(stop))) return permit(std::move(got));
  return std::nullopt;
}

const std::string& semaphore::name() const noexcept { return state_->name(); }

std::int64_t semaphore::permits() const noexcept { return state_->permits(); }

}  // namespace sqllock
