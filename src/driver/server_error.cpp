#include "driver/server_error.hpp"

#include <utility>

#include "sqllock/error.hpp"

namespace sqllock::detail {

void throw_server_error(std::string message, std::string sqlstate, long long vendor_code, bool permission) {
  if (!permission) throw backend_error(std::move(message), std::move(sqlstate), vendor_code);
  // The server names the object and the privilege; what it cannot say is which role should have
  // what, which is the same for every sqllock statement.
  message +=
      " (permission denied: this database role lacks a privilege. sqllock's locks, status, release "
      "and reaper need SELECT, INSERT, UPDATE and DELETE on the lock table and <table>_rows, plus "
      "USAGE on <table>_fence_seq on PostgreSQL; `sqllock migrate` needs the tables' owner. MySQL "
      "also reports a table that does not exist yet this way to a role granted single tables. See "
      "\"Least privilege\" in docs/operations.md)";
  throw permission_denied(std::move(message), std::move(sqlstate), vendor_code);
}

}  // namespace sqllock::detail
