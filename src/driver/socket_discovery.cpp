#include "driver/socket_discovery.hpp"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>

namespace sqllock::detail {
namespace {

// Calls visit(fd, inode) for each open socket descriptor of the process.
void for_each_socket(const std::function<void(int, ino_t)>& visit) {
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return;
  const int own = ::dirfd(dir);
  while (const dirent* entry = ::readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || fd == own) continue;
    struct stat st {};
    if (::fstat(static_cast<int>(fd), &st) == 0 && S_ISSOCK(st.st_mode)) visit(static_cast<int>(fd), st.st_ino);
  }
  ::closedir(dir);
}

bool peer_matches(int fd, int port, const std::string& unix_path) {
  sockaddr_storage peer{};
  socklen_t size = sizeof peer;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &size) != 0) return false;
  if (!unix_path.empty()) {
    if (peer.ss_family != AF_UNIX) return false;
    const auto* un = reinterpret_cast<const sockaddr_un*>(&peer);
    return ::strncmp(un->sun_path, unix_path.c_str(), sizeof un->sun_path) == 0;
  }
  if (peer.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&peer)->sin_port) == port;
  if (peer.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(&peer)->sin6_port) == port;
  return false;
}

}  // namespace

std::vector<ino_t> socket_inodes() {
  std::vector<ino_t> out;
  for_each_socket([&](int, ino_t inode) { out.push_back(inode); });
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<found_socket> new_socket_to(const std::vector<ino_t>& before, int port, const std::string& unix_path) {
  std::optional<found_socket> found;
  int matches = 0;
  for_each_socket([&](int fd, ino_t inode) {
    if (std::binary_search(before.begin(), before.end(), inode) || !peer_matches(fd, port, unix_path)) return;
    ++matches;
    found = found_socket{fd, inode};
  });
  if (matches != 1) return std::nullopt;
  return found;
}

int socket_still_open(const found_socket& s) noexcept {
  struct stat st {};
  if (::fstat(s.fd, &st) != 0 || !S_ISSOCK(st.st_mode) || st.st_ino != s.inode) return -1;
  return s.fd;
}

}  // namespace sqllock::detail
