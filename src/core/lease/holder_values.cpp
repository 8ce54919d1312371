#include "core/lease/holder_values.hpp"

#include "common/identity.hpp"

namespace sqllock::detail {

std::vector<value> with_holder(std::initializer_list<value> before, const std::string& owner,
                               const std::string& session, std::chrono::milliseconds lease, bool auto_renew,
                               std::initializer_list<value> after) {
  std::vector<value> out(before);
  out.reserve(before.size() + 7 + after.size());
  out.insert(out.end(), {owner, session, host_name(), std::int64_t{process_id()}, current_thread_text(),
                         std::int64_t{lease.count()}, std::int64_t{auto_renew ? 1 : 0}});
  out.insert(out.end(), after);
  return out;
}

}  // namespace sqllock::detail
