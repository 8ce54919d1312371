// The statements of one kind of object (row locks, permits, …) are built once per dialect and
// lock table and shared by every handle: per_table_cache<T>::get returns the same object for the
// same arguments, building it with `build(kind, table)` the first time.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "sqllock/dialect_kind.hpp"
#include "sqllock/error.hpp"

namespace sqllock::detail {

template <class T>
class per_table_cache {
 public:
  template <class Build>
  static std::shared_ptr<const T> get(dialect_kind kind, const std::string& table, Build build) {
    static std::mutex mu;
    static std::map<std::pair<dialect_kind, std::string>, std::shared_ptr<const T>> cache;
    std::lock_guard lock(mu);
    auto& entry = cache[{kind, table}];
    if (!entry) entry = std::make_shared<const T>(build(kind, table));
    return entry;
  }

  // The same, with one builder per dialect.
  using builder = T (*)(const std::string& table);
  static std::shared_ptr<const T> get(dialect_kind kind, const std::string& table, builder postgresql, builder mysql,
                                      builder sqlite) {
    return get(kind, table, [&](dialect_kind k, const std::string& t) {
      switch (k) {
        case dialect_kind::postgresql: return postgresql(t);
        case dialect_kind::mysql: return mysql(t);
        case dialect_kind::sqlite: return sqlite(t);
      }
      throw not_supported("unknown dialect");
    });
  }
};

}  // namespace sqllock::detail
