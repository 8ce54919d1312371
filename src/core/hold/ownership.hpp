// Who holds what through one lock object, shared by every lock kind (table_lock, the session
// locks, and the kinds to come): the calling owner's key, the levels each owner took through the
// object, the noexcept unlock() and where its errors go, the not_held messages, and the rule that
// a destroyed object gives back everything it still holds.
//
// What differs per kind is what a level lives on — a lease slot, a pinned session — the `Hold` of
// owner_levels, and how one level is taken and given back, which stays with the kind.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sqllock/lock_options.hpp"

namespace sqllock::detail {

// The owner rules and error reporting of one lock object.
class ownership {
 public:
  // `options_name` ("table_lock_options") names the options in messages; `what` ("lock 'job'")
  // names the lock. `owner_key` is the explicit owner key (empty: the calling thread owns).
  // `on_unlock_error` empty: one line on stderr. Throws invalid_argument for a key over 128 bytes.
  ownership(std::string options_name, std::string what, std::string owner_key, unlock_error_callback on_unlock_error);

  // The calling owner within this object: "k:<owner key>", or "t:<thread>" without a key.
  std::string owner() const;
  bool explicit_owner() const noexcept { return !key_.empty(); }
  const std::string& what() const noexcept { return what_; }

  // Passes `e` to on_unlock_error, swallowing whatever that throws.
  void report(const std::exception& e) const noexcept;
  // Runs `release` and reports what it throws: the never-throwing unlock() of every lock kind.
  template <class F>
  void unlock(F&& release) const noexcept {
    try {
      std::forward<F>(release)();
    } catch (const std::exception& e) {
      report(e);
    }
  }

  // The not_held message for a release by the calling owner, who holds nothing (of this kind of
  // level) here. `others_hold`: other owners of this object hold levels.
  std::string not_held_message(bool others_hold) const;
  // The not_held message for a release whose hold was lost before it; `why` says how.
  std::string lost_before_release(std::string_view why) const;

 private:
  const std::string options_name_;
  const std::string what_;
  const std::string key_;
  unlock_error_callback on_unlock_error_;
};

// The levels one lock object holds, by owner, each owner's on one Hold (the lease slot or session
// they live on), in up to two modes (exclusive, shared). Guarded by its own mutex; never calls out
// while holding it.
template <class Hold>
class owner_levels {
 public:
  static constexpr std::size_t kModes = 2;
  struct entry {
    Hold hold{};
    std::int64_t count[kModes] = {};
    std::int64_t total() const noexcept {
      std::int64_t n = 0;
      for (const auto c : count) n += c;
      return n;
    }
  };
  struct level {
    std::string owner;
    std::size_t mode;
  };

  // A copy of `owner`'s entry, or nullopt when the owner holds nothing here.
  std::optional<entry> find(const std::string& owner) const {
    std::lock_guard lock(mu_);
    auto it = by_owner_.find(owner);
    if (it == by_owner_.end()) return std::nullopt;
    return it->second;
  }
  // Levels `owner` holds in `mode`.
  std::int64_t count(const std::string& owner, std::size_t mode) const {
    std::lock_guard lock(mu_);
    auto it = by_owner_.find(owner);
    return it == by_owner_.end() ? 0 : it->second.count[mode];
  }
  // True when an owner other than `owner` holds levels here.
  bool others_hold(const std::string& owner) const {
    std::lock_guard lock(mu_);
    return by_owner_.size() > (by_owner_.count(owner) ? 1u : 0u);
  }
  std::size_t levels() const {
    std::lock_guard lock(mu_);
    std::size_t n = 0;
    for (const auto& [o, e] : by_owner_) n += static_cast<std::size_t>(e.total());
    return n;
  }
  // One level the object holds, if any: what the destructor gives back next.
  std::optional<level> any_level() const {
    std::lock_guard lock(mu_);
    for (const auto& [o, e] : by_owner_)
      for (std::size_t m = 0; m < kModes; ++m)
        if (e.count[m] > 0) return level{o, m};
    return std::nullopt;
  }

  // Records one more level of `mode` for `owner` on `hold`. When the owner's levels were on
  // another hold (it was lost: they died with it), they are replaced; the old hold is returned so
  // the caller can let go of it. `is_new` tells whether `hold` became the owner's hold now.
  struct recorded {
    bool is_new = false;
    std::optional<Hold> replaced;
  };
  template <class Same>
  recorded add(const std::string& owner, const Hold& hold, std::size_t mode, Same same) {
    std::lock_guard lock(mu_);
    recorded out;
    auto [it, inserted] = by_owner_.try_emplace(owner);
    if (inserted || !same(it->second.hold, hold)) {
      if (!inserted) out.replaced = std::move(it->second.hold);
      it->second = entry{hold, {}};
      out.is_new = true;
    }
    ++it->second.count[mode];
    return out;
  }

  // Drops one level of `mode` of `owner` if `pred(hold)` holds for the owner's hold. Returns the
  // hold when the owner has no levels left (the caller lets go of it).
  template <class Pred>
  std::optional<Hold> drop_one(const std::string& owner, std::size_t mode, Pred pred) {
    std::lock_guard lock(mu_);
    auto it = by_owner_.find(owner);
    if (it == by_owner_.end() || !pred(it->second.hold)) return std::nullopt;
    if (it->second.count[mode] > 0) --it->second.count[mode];
    if (it->second.total() > 0) return std::nullopt;
    return take(it);
  }
  std::optional<Hold> drop_one(const std::string& owner, std::size_t mode) {
    return drop_one(owner, mode, [](const Hold&) { return true; });
  }
  // Drops every level of `owner`; returns its hold, if it had one.
  std::optional<Hold> drop(const std::string& owner) {
    std::lock_guard lock(mu_);
    auto it = by_owner_.find(owner);
    if (it == by_owner_.end()) return std::nullopt;
    return take(it);
  }
  // Drops the entries whose hold satisfies `pred` (e.g. a parent process's, in a forked child)
  // without giving anything back.
  template <class Pred>
  void drop_if(Pred pred) {
    std::lock_guard lock(mu_);
    std::erase_if(by_owner_, [&](const auto& kv) { return pred(kv.second.hold); });
  }

 private:
  Hold take(typename std::map<std::string, entry>::iterator it) {
    Hold h = std::move(it->second.hold);
    by_owner_.erase(it);
    return h;
  }

  mutable std::mutex mu_;
  std::map<std::string, entry> by_owner_;
};

// The release-on-destruction rule: a lock object that goes away gives back every level it still
// holds, one at a time, with `release(owner, mode)`; each failure goes to on_unlock_error, and a
// level a failed release left recorded is given up with `forget(owner)`, so the object never
// waits for or retries a release it could not make.
template <class Hold, class Release, class Forget>
void release_everything(owner_levels<Hold>& levels, const ownership& who, Release release, Forget forget) noexcept {
  while (const auto next = levels.any_level()) {
    const auto before = levels.levels();
    try {
      release(next->owner, next->mode);
    } catch (const std::exception& e) {
      who.report(e);
    } catch (...) {
    }
    if (levels.levels() >= before) {
      try {
        forget(next->owner);
      } catch (...) {
      }
      if (levels.levels() >= before) levels.drop(next->owner);  // never loop on a level
    }
  }
}

}  // namespace sqllock::detail
