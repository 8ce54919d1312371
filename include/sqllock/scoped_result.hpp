// sqllock/scoped_result.hpp — what the scoped lock functions (with_row_lock, with_advisory_xact_lock
// and their try_… forms) hand back from the caller's function. Included by those headers; nothing
// here is needed directly.
//
// A try_… form may not run the function at all (the lock was held elsewhere), so it returns
//   bool              when the function returns void: whether it ran;
//   std::optional<R>  when it returns R: its result, or std::nullopt when it did not run.
// The with_… forms always run it (or throw) and return R itself.
#pragma once

#include <functional>
#include <optional>
#include <type_traits>
#include <utility>

namespace sqllock::detail {

// The result of a function returning R, run under a lock that may not be taken.
template <class R>
struct scoped_result {
  static_assert(!std::is_reference_v<R>, "the function must return a value (or void), not a reference");

  // bool for void, std::optional<R> otherwise (see the header comment).
  using type = std::conditional_t<std::is_void_v<R>, bool, std::optional<R>>;

  // Runs `fn` through `run`: run(callback) calls callback(args…) at most once, under the lock,
  // and returns whether it did; callback passes args… on to fn and keeps what fn returns.
  // Exceptions from fn or run propagate unchanged.
  template <class Run, class Fn>
  static type keep(Run&& run, Fn& fn) {
    if constexpr (std::is_void_v<R>) {
      return std::forward<Run>(run)([&](auto&&... args) { std::invoke(fn, std::forward<decltype(args)>(args)...); });
    } else {
      std::optional<R> out;
      std::forward<Run>(run)(
          [&](auto&&... args) { out.emplace(std::invoke(fn, std::forward<decltype(args)>(args)...)); });
      return out;
    }
  }

  // For the with_… forms, whose function always ran: nothing for void, fn's result otherwise.
  static R value([[maybe_unused]] type&& kept) {
    if constexpr (!std::is_void_v<R>) return std::move(*kept);
  }
};

}  // namespace sqllock::detail
