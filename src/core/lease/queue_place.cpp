#include "core/lease/queue_place.hpp"

#include <mutex>

namespace sqllock::detail {

queue_place::~queue_place() {
  if (!done_) {
    try {
      give_back(false);
    } catch (...) {
    }
  }
}

void queue_place::give_back_all() noexcept {
  try {
    give_back(true);
  } catch (...) {
  }
}

void queue_place::give_back(bool all) {
  done_ = true;
  auto& registry = impl_.registry();
  std::lock_guard op(slot_->op);
  const releasing_scope releasing(registry, *slot_);
  try {
    auto conn = impl_.borrow();
    queue_store st(*conn, sql_, impl_.sql().wakeup_channel);
    if (all) {
      st.leave(key_.name, key_.kind, key_.ticket, key_.owner);
      registry.forget(*slot_);
      return;
    }
    const auto left = st.release(key_.name, key_.kind, key_.ticket, key_.owner, key_.write);
    if (left && left->levels() > 0)
      registry.record_released(*slot_);
    else
      registry.forget(*slot_);
  } catch (...) {
    // Stop renewing: the entry runs out with its lease, or the watchdog deletes it as an orphan.
    registry.forget(*slot_);
    throw;
  }
}

}  // namespace sqllock::detail
