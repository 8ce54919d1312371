// Finding the socket of a connection whose client library does not expose it (MySQL Connector/C++
// 1.1 has no call that returns its descriptor), so that its statements can be bounded too
// (statement_timer.hpp) and its hang-ups seen (connection::closed_by_server).
//
// The socket is found by difference: the process's sockets are listed before connecting, and the
// one socket that is new afterwards and connected to the server's port (or Unix socket path) is
// the connection's. When another thread connected to the same server meanwhile there are two such
// sockets and neither is taken: the connection then runs unwatched, as before this existed. The
// MySQL driver serialises its own connects to make that rare (driver/mysql/open_mysql.cpp).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace sqllock::detail {

struct found_socket {
  int fd;
  ino_t inode;  // tells later whether `fd` still names this socket (see socket_still_open)
};

// The inodes of the process's open sockets, sorted.
std::vector<ino_t> socket_inodes();

// The one socket open now, and not in `before`, whose peer is TCP port `port` (any address) or,
// when `unix_path` is not empty, that Unix socket; nullopt when there is none or more than one.
std::optional<found_socket> new_socket_to(const std::vector<ino_t>& before, int port, const std::string& unix_path);

// `s.fd` when it still names the socket `s` found, -1 otherwise (the client library closed it,
// and the number may now belong to another file).
int socket_still_open(const found_socket& s) noexcept;

}  // namespace sqllock::detail
