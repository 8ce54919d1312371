// A per-connection cache of prepared statements, keyed by sqllock's own SQL text.
//
// Drivers prepare each distinct statement once and reuse it. The dialects' SQL is a small, fixed
// set, but a statement built for a variable number of rows (renewing N leases at once) has one
// text per N, so the cache is bounded: once full, the least recently used entry is evicted and
// handed back to the driver to release. The cache also checks, before anything is sent, that the
// caller passes exactly as many parameters as the statement's highest $N asks for, so every
// driver reports a miscounted call the same way.
//
// Not thread-safe: it belongs to one connection, which is used by one thread at a time.
#pragma once

#include <algorithm>
#include <cstddef>
#include <list>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "driver/placeholders.hpp"
#include "sqllock/error.hpp"

namespace sqllock::detail {

template <class Handle>
class statement_cache {
 public:
  struct entry {
    native_statement native;  // the SQL in the library's syntax and which parameter each slot takes
    Handle handle;            // the library's prepared form
  };

  // `style` is the placeholder syntax of the driver's client library.
  explicit statement_cache(placeholder_style style, std::size_t capacity = 128)
      : style_(style), capacity_(std::max<std::size_t>(capacity, 1)) {}

  statement_cache(const statement_cache&) = delete;
  statement_cache& operator=(const statement_cache&) = delete;

  // Returns the entry for `sql`. On a miss, rewrites the placeholders, evicts the least recently
  // used entry when full (passing its handle to `release(Handle&)`), then calls
  // `prepare(const native_statement&) -> Handle` and keeps the result. Throws invalid_argument
  // for a malformed placeholder or when `param_count` differs from the highest $N; whatever
  // `prepare` or `release` throw passes through (a failed prepare caches nothing).
  template <class Prepare, class Release>
  entry& get(std::string_view sql, std::size_t param_count, Prepare&& prepare, Release&& release) {
    if (auto it = index_.find(sql); it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      check_arity(it->second->first, it->second->second.native, param_count);
      return it->second->second;
    }
    native_statement native = rewrite_placeholders(sql, style_);
    check_arity(sql, native, param_count);
    if (lru_.size() >= capacity_) evict_oldest(release);
    Handle handle = prepare(static_cast<const native_statement&>(native));
    lru_.emplace_front(std::string(sql), entry{std::move(native), std::move(handle)});
    index_.emplace(lru_.front().first, lru_.begin());
    return lru_.front().second;
  }

  // Passes every handle to `release(Handle&)`, then forgets them all.
  template <class Release>
  void clear(Release&& release) {
    for (auto& item : lru_) release(item.second.handle);
    index_.clear();
    lru_.clear();
  }

  std::size_t size() const noexcept { return lru_.size(); }

 private:
  using list = std::list<std::pair<std::string, entry>>;

  static void check_arity(std::string_view sql, const native_statement& native, std::size_t given) {
    std::size_t wanted = 0;
    for (std::size_t index : native.order) wanted = std::max(wanted, index + 1);
    if (given != wanted) {
      throw invalid_argument("statement takes " + std::to_string(wanted) + " parameter(s) but " +
                             std::to_string(given) + " were passed: " + std::string(sql));
    }
  }

  template <class Release>
  void evict_oldest(Release& release) {
    auto oldest = std::prev(lru_.end());
    Handle handle = std::move(oldest->second.handle);
    index_.erase(std::string_view(oldest->first));
    lru_.erase(oldest);
    release(handle);  // last, so the cache stays consistent if releasing throws
  }

  placeholder_style style_;
  std::size_t capacity_;
  list lru_;  // most recently used first; list nodes never move, so index_ may view their keys
  std::unordered_map<std::string_view, typename list::iterator> index_;
};

}  // namespace sqllock::detail
