#include "core/lease/lease_claim.hpp"

#include <utility>

#include "sqllock/error.hpp"

namespace sqllock {

lease_claim::lease_claim(std::shared_ptr<const detail::claimed_rows> rows) noexcept : rows_(std::move(rows)) {}

namespace detail {

lease_claim claim_hold(const database& db, lease_table table, const std::string& what, const std::string& owner,
                       std::span<const claim_part> parts, steady::time_point now) {
  auto out = std::make_shared<claimed_rows>(claimed_rows{db, table, what, owner, {}});
  out->rows.reserve(parts.size());
  for (const auto& p : parts) {
    const hold_view& v = p.view;
    if (v.depth == 0) throw not_held("claim(): " + what + " is not held by the caller");
    if (v.queued) throw not_held("claim(): " + what + " is not held by the caller yet: its place still waits");
    if (!v.held || v.stop.stop_requested())
      throw lock_lost("claim(): " + what +
                      " was lost (its lost_token() is signalled): nothing may be written under it");
    if (now >= v.deadline)
      throw lock_lost("claim(): the lease of " + what +
                      " ran out by the local clock before it was renewed: nothing may be written under it");
    out->rows.push_back({p.resource, v.fence});
  }
  return lease_claim(std::move(out));
}

}  // namespace detail
}  // namespace sqllock
