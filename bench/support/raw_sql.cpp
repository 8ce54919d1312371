#include "support/raw_sql.hpp"

#include <unistd.h>

#include <map>
#include <memory>
#include <mutex>

#include "common/identity.hpp"
#include "sqllock/latch.hpp"

namespace sqllock::bench {

const detail::dialect_sql& table_sql(dialect_kind kind) {
  static std::mutex mu;
  static std::map<dialect_kind, std::shared_ptr<const detail::dialect_sql>> cache;
  std::lock_guard lock(mu);
  auto& slot = cache[kind];
  if (!slot) slot = detail::make_dialect_sql(kind, kCycleTable);
  return *slot;
}

const detail::row_lock_sql& row_sql(dialect_kind kind) { return *detail::row_lock_statements(kind, kCycleTable); }

std::string owner_of(int thread) {
  static const std::string session = detail::random_token();
  return session + "/t:" + std::to_string(1000 + thread);
}

std::vector<detail::value> acquire_params(const std::string& resource, int thread) {
  static const std::string session = detail::random_token();
  return {resource,
          owner_of(thread),
          session,
          detail::host_name(),
          std::int64_t{::getpid()},
          std::to_string(1000 + thread),
          std::int64_t{30000},
          std::int64_t{1}};
}

const detail::permit_sql& permit_sql_of(dialect_kind kind) { return *detail::permit_statements(kind, kCycleTable); }

const detail::latch_sql& latch_sql_of(dialect_kind kind) { return *detail::latch_statements(kind, kCycleTable); }

std::vector<detail::value> permit_params(const std::string& resource, std::int64_t permits, int thread) {
  // resource, owner, session, host, pid, thread, lease, renew → N after the resource.
  const auto lock = acquire_params(resource, thread);
  std::vector<detail::value> p{lock[0], permits};
  for (std::size_t i = 1; i < lock.size(); ++i) p.push_back(lock[i]);
  return p;
}

std::vector<detail::value> permit_params_picked(const std::string& resource, std::int64_t slot, std::int64_t permits,
                                                int thread) {
  const auto lock = acquire_params(resource, thread);
  std::vector<detail::value> p{lock[0], slot};
  for (std::size_t i = 1; i < lock.size(); ++i) p.push_back(lock[i]);
  p.emplace_back(permits);
  return p;
}

const detail::queue_sql& queue_sql_of(dialect_kind kind) { return *detail::queue_statements(kind, kCycleTable); }

std::vector<detail::value> enqueue_params(const std::string& resource, char queue_kind, int thread) {
  // resource, owner, session, host, pid, thread, lease, renew → the kind after the resource, and
  // the write flag at the end.
  const auto lock = acquire_params(resource, thread);
  std::vector<detail::value> p{lock[0], std::string(1, queue_kind)};
  for (std::size_t i = 1; i < lock.size(); ++i) p.push_back(lock[i]);
  p.emplace_back(std::int64_t{1});
  return p;
}

void arm_latch(const database& db, const std::string& name) {
  static_cast<void>(latch(db, name).try_create(max_latch_count));
}

std::vector<detail::value> in_native_order(const detail::native_statement& s,
                                           const std::vector<detail::value>& params) {
  std::vector<detail::value> out;
  out.reserve(s.order.size());
  for (const auto i : s.order) out.push_back(params.at(i));
  return out;
}

}  // namespace sqllock::bench
