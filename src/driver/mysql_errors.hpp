// MySQL / MariaDB error numbers that the drivers over libmariadb (Connector/C++, SOCI) share.
#pragma once

namespace sqllock::detail {

// True for errors after which the session is gone: the server closed it, killed it or shut
// down, or the client lost the socket. Other errors come from a server that is still talking.
constexpr bool is_mysql_connection_loss(long long code) noexcept {
  switch (code) {
    case 1053:  // ER_SERVER_SHUTDOWN
    case 1927:  // ER_CONNECTION_KILLED (MariaDB: KILL from another session)
    case 2002:  // CR_CONNECTION_ERROR
    case 2003:  // CR_CONN_HOST_ERROR
    case 2006:  // CR_SERVER_GONE_ERROR
    case 2013:  // CR_SERVER_LOST
    case 2055:  // CR_SERVER_LOST_EXTENDED
    case 4031:  // ER_CLIENT_INTERACTION_TIMEOUT (MySQL 8: idle session closed by the server)
      return true;
    default: return false;
  }
}

// True for errors that refuse a statement for lack of a privilege.
constexpr bool is_mysql_permission_error(long long code) noexcept {
  switch (code) {
    case 1044:  // ER_DBACCESS_DENIED_ERROR (e.g. CREATE DATABASE)
    case 1095:  // ER_KILL_DENIED_ERROR (KILL of another user's session)
    case 1142:  // ER_TABLEACCESS_DENIED_ERROR (e.g. CREATE/ALTER/DROP command denied)
    case 1143:  // ER_COLUMNACCESS_DENIED_ERROR
    case 1227:  // ER_SPECIFIC_ACCESS_DENIED_ERROR (needs SUPER or similar)
    case 1370:  // ER_PROCACCESS_DENIED_ERROR
    case 1419:  // ER_BINLOG_CREATE_ROUTINE_NEED_SUPER (a trigger with binary logging on)
      return true;
    default: return false;
  }
}

// Client-side errors (CR_*, 2000–2999) may hide a dead session; server errors prove the server
// answered.
constexpr bool is_mysql_client_error(long long code) noexcept { return code >= 2000 && code < 3000; }

}  // namespace sqllock::detail
