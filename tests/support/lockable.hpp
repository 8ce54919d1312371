// The C++ named requirements sqllock's lock types promise, as concepts for static_asserts.
#pragma once

#include <chrono>
#include <concepts>
#include <mutex>
#include <shared_mutex>
#include <type_traits>

namespace sqllock::test {

// TimedLockable, accepting deadlines on any clock.
template <class L>
concept timed_lockable = requires(L& l) {
  l.lock();
  { l.try_lock() } -> std::same_as<bool>;
  l.unlock();
  { l.try_lock_for(std::chrono::milliseconds(1)) } -> std::same_as<bool>;
  { l.try_lock_until(std::chrono::steady_clock::now()) } -> std::same_as<bool>;
  { l.try_lock_until(std::chrono::system_clock::now()) } -> std::same_as<bool>;
};

// TimedLockable whose unlock() cannot throw, usable with every standard wrapper.
template <class L>
concept std_wrappable = timed_lockable<L> && noexcept(std::declval<L&>().unlock()) &&
                        std::is_constructible_v<std::unique_lock<L>, L&, std::try_to_lock_t>&& std::is_constructible_v<
                            std::lock_guard<L>, L&>&& std::is_constructible_v<std::scoped_lock<L>, L&>;

}  // namespace sqllock::test
