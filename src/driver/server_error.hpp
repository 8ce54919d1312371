// The exception for an error the server reported on a working connection, shared by the drivers.
#pragma once

#include <string>
#include <string_view>

namespace sqllock::detail {

// PostgreSQL's SQLSTATE for a missing privilege (insufficient_privilege, also "must be owner").
constexpr bool is_postgresql_permission_error(std::string_view sqlstate) noexcept { return sqlstate == "42501"; }

// Throws permission_denied when `permission` is true — the server refused the statement for lack
// of a privilege; the message then also says which privileges sqllock needs and that migrations
// need the owner — and backend_error otherwise. `message` is the server's text.
[[noreturn]] void throw_server_error(std::string message, std::string sqlstate, long long vendor_code, bool permission);

}  // namespace sqllock::detail
