// sqllock::permit and the permit_state behind it (permit_state.hpp): what a granted permit
// answers, and its release. SQL lives in the dialect (dialect/permit_sql.hpp) and runs through
// permit_store; renewal and loss detection are the lease registry's, shared with table_lock (a
// permit is a lease_slot in its permit store). Acquiring one is semaphore.cpp's.
#include "core/kinds/permit_state.hpp"

#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <utility>

#include "core/lease/lease_claim.hpp"
#include "core/lease/lease_release.hpp"
#include "sqllock/error.hpp"

namespace sqllock {
namespace detail {

// What a call on a permit object that holds nothing says.
constexpr const char* kEmptyPermit =
    "not held: this permit object holds no permit (it was released, moved from, or never granted); "
    "acquire one from the semaphore first";

permit_state::permit_state(std::shared_ptr<const semaphore_shared> shared, std::shared_ptr<lease_slot> slot,
                           std::int64_t number, std::uint64_t generation)
    : shared_(std::move(shared)), slot_(std::move(slot)), number_(number), generation_(generation) {
  if (shared_->options.on_lost) slot_->loss.set(this, shared_->options.on_lost);
}

permit_state::~permit_state() {
  if (!slot_) return;
  shared_->who.unlock([&] { release(); });
  abandon();  // a release that threw gives the permit up here: it is not retried
}

hold_view permit_state::view() const {
  if (!slot_) return {};
  auto v = shared_->impl.registry().view(*slot_);
  if (v.generation != generation_) v.held = false;
  return v;
}

lease_claim permit_state::claim() const {
  const claim_part part{slot_->resource, view()};
  return claim_hold(shared_->db, lease_table::permits, shared_->who.what(), slot_->owner, std::span(&part, 1),
                    shared_->impl.time().now());
}

void permit_state::release() {
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

void permit_state::abandon() noexcept {
  if (!slot_) return;
  try {
    shared_->impl.registry().forget(*slot_);
  } catch (...) {
  }
  let_go();
}

void permit_state::let_go() noexcept {
  if (!slot_) return;
  slot_->loss.clear(this);
  auto slot = std::move(slot_);
  try {
    shared_->impl.registry().unpin(slot);
  } catch (...) {
  }
}

}  // namespace detail

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

}  // namespace sqllock
