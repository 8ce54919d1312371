#include "support/client_sessions.hpp"

#include <dirent.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "sqllock/error.hpp"
#include "support/fresh_database.hpp"

namespace sqllock::test {
namespace {

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
    const auto port_of = [](const std::string& addr) {
      return std::stoi(addr.substr(addr.find(':') + 1), nullptr, 16);
    };
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

}  // namespace

std::vector<client_session> client_sessions(const database& admin) {
  const auto r = admin.dialect() == dialect_kind::postgresql
                     ? sql(admin,
                           "SELECT pid, client_port FROM pg_stat_activity WHERE backend_type = 'client backend'"
                           " AND pid <> pg_backend_pid() AND client_port IS NOT NULL")
                     : sql(admin,
                           "SELECT id, host FROM information_schema.PROCESSLIST"
                           " WHERE id <> CONNECTION_ID() AND host LIKE '%:%'");
  std::vector<client_session> out;
  for (const auto& row : r.rows) {
    if (!row[0] || !row[1]) continue;
    std::string port = *row[1];
    if (const auto colon = port.rfind(':'); colon != std::string::npos) port = port.substr(colon + 1);  // MariaDB host
    out.push_back({std::stoll(*row[0]), std::stoi(port)});
  }
  return out;
}

int server_port(const database& admin) {
  const bool pg = admin.dialect() == dialect_kind::postgresql;
  const auto r = sql(admin, pg ? "SELECT inet_server_port()" : "SELECT @@port");
  return std::stoi(r.rows.at(0).at(0).value());
}

pid_t process_of_client_port(int client_port, int server_port, const std::vector<pid_t>& candidates) {
  for (const auto& inode : socket_inodes(client_port, server_port))
    for (const pid_t p : candidates)
      if (has_socket(p, inode)) return p;
  return 0;
}

std::vector<std::int64_t> sessions_of_process(const database& admin, pid_t pid) {
  const int port = server_port(admin);
  std::vector<std::int64_t> out;
  for (const auto& s : client_sessions(admin))
    if (process_of_client_port(s.client_port, port, {pid}) == pid) out.push_back(s.id);
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

}  // namespace sqllock::test
