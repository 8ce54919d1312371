#include "fault/victims.hpp"

#include <dirent.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "fault/schema.hpp"
#include "sqllock/error.hpp"
#include "sqllock/named_lock.hpp"
#include "support/fresh_database.hpp"

namespace sqllock::fault {
namespace {

using test::sql;

// Socket inodes of connections from local port `client` to remote port `server` (IPv4 table).
std::vector<std::string> socket_inodes(int client_port, int server_port) {
  std::vector<std::string> out;
  std::ifstream in("/proc/net/tcp");
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string sl, local, remote, st, queues, tr, retr, uid, timeout, inode;
    if (!(f >> sl >> local >> remote >> st >> queues >> tr >> retr >> uid >> timeout >> inode)) continue;
    const auto port_of = [](const std::string& addr) { return std::stoi(addr.substr(addr.find(':') + 1), nullptr, 16); };
    if (port_of(local) == client_port && port_of(remote) == server_port) out.push_back(inode);
  }
  return out;
}

bool has_socket(pid_t pid, const std::string& inode) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  DIR* d = ::opendir(dir.c_str());
  if (!d) return false;
  const std::string want = "socket:[" + inode + "]";
  bool found = false;
  char buf[64];
  while (const dirent* e = ::readdir(d)) {
    const std::string link = dir + "/" + e->d_name;
    const ssize_t n = ::readlink(link.c_str(), buf, sizeof buf - 1);
    if (n > 0 && std::string(buf, static_cast<std::size_t>(n)) == want) {
      found = true;
      break;
    }
  }
  ::closedir(d);
  return found;
}

// (session, client port) pairs of the sessions to consider, per dialect and lock kind.
std::vector<std::pair<std::int64_t, int>> sessions(const database& admin, lock_kind kind, int resources) {
  std::vector<std::pair<std::int64_t, int>> out;
  const auto add_rows = [&](const detail::result& r) {
    for (const auto& row : r.rows) {
      if (!row[0] || !row[1]) continue;
      std::string port = *row[1];
      if (const auto colon = port.rfind(':'); colon != std::string::npos) port = port.substr(colon + 1);  // MariaDB host
      out.emplace_back(std::stoll(*row[0]), std::stoi(port));
    }
  };
  if (admin.dialect() == dialect_kind::postgresql) {
    const std::string filter = kind == lock_kind::advisory
        ? " AND a.pid IN (SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted)"
        : kind == lock_kind::row ? " AND a.state = 'idle in transaction'" : "";
    add_rows(sql(admin, "SELECT a.pid, a.client_port FROM pg_stat_activity a WHERE a.datname = current_database()"
                        " AND a.backend_type = 'client backend' AND a.pid <> pg_backend_pid() AND a.client_port IS NOT NULL" +
                            filter));
  } else if (kind == lock_kind::named) {
    for (int i = 0; i < resources; ++i) {
      add_rows(sql(admin, "SELECT p.id, p.host FROM information_schema.PROCESSLIST p WHERE p.id = IS_USED_LOCK($1)",
                   {named_lock_server_name(resource_name(i))}));
    }
  } else {
    const std::string filter = kind == lock_kind::row
        ? " AND p.id IN (SELECT trx_mysql_thread_id FROM information_schema.INNODB_TRX WHERE trx_rows_locked > 0)"
        : "";
    add_rows(sql(admin, "SELECT p.id, p.host FROM information_schema.PROCESSLIST p WHERE p.db = DATABASE()"
                        " AND p.id <> CONNECTION_ID() AND p.host LIKE '%:%'" + filter));
  }
  return out;
}

}  // namespace

pid_t process_of_client_port(int client_port, int server_port, const std::vector<pid_t>& candidates) {
  for (const auto& inode : socket_inodes(client_port, server_port))
    for (const pid_t p : candidates)
      if (has_socket(p, inode)) return p;
  return 0;
}

std::vector<victim> find_victims(const database& admin, lock_kind kind, int resources, int server_port,
                                 const std::vector<pid_t>& workers) {
  std::vector<victim> out;
  for (const auto& [session, port] : sessions(admin, kind, resources)) {
    if (const pid_t p = process_of_client_port(port, server_port, workers)) out.push_back({session, p});
  }
  return out;
}

bool kill_session(const database& admin, std::int64_t session) {
  try {
    if (admin.dialect() == dialect_kind::postgresql) {
      sql(admin, "SELECT pg_terminate_backend(CAST($1 AS integer))", {session});
    } else {
      // KILL takes no placeholder; the id is an integer the server itself reported.
      sql(admin, "KILL " + std::to_string(session));
    }
    return true;
  } catch (const error&) {
    return false;
  }
}

}  // namespace sqllock::fault
