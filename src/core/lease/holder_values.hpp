// The holder columns that every acquire of a leased row binds (lock rows, permits, multi-lock
// rows, queue entries), in the order the statements take them: owner token, holder session, host,
// pid, thread, lease in ms, auto-renew (0/1). One place, so the four stores cannot drift apart.
#pragma once

#include <chrono>
#include <initializer_list>
#include <string>
#include <vector>

#include "driver/connection.hpp"

namespace sqllock::detail {

// `before`, then the seven holder values of this process's calling thread, then `after`.
std::vector<value> with_holder(std::initializer_list<value> before, const std::string& owner,
                               const std::string& session, std::chrono::milliseconds lease, bool auto_renew,
                               std::initializer_list<value> after = {});

}  // namespace sqllock::detail
