#include "driver/connection.hpp"

#include <poll.h>

namespace sqllock::detail {

bool connection::closed_by_server() const noexcept {
  const int fd = socket();
  if (fd < 0) return false;
  // Only the hang-up counts: readable data alone may be a notification (LISTEN) or a parameter
  // status report waiting for the next statement, not a closed session. A server that ends a
  // session sends its error message and closes the socket, so the hang-up follows at once.
  pollfd p{fd, POLLRDHUP, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

}  // namespace sqllock::detail
