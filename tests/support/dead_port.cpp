#include "support/dead_port.hpp"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace sqllock::test {

dead_port::dead_port(bool listening) {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "socket");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);  // port 0: the kernel picks a free one
  socklen_t len = sizeof a;
  if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || (listening && ::listen(fd_, 16) != 0) ||
      ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    const int e = errno;
    ::close(fd_);
    throw std::system_error(e, std::generic_category(), "binding a loopback port");
  }
  port_ = ntohs(a.sin_port);
}

dead_port::~dead_port() { ::close(fd_); }

std::string dead_port::uri(std::string_view scheme) const {
  return std::string(scheme) + "://nobody@127.0.0.1:" + std::to_string(port_) + "/x";
}

}  // namespace sqllock::test
