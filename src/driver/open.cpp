#include "driver/open.hpp"

#include "sqllock/error.hpp"

namespace sqllock::detail {

std::unique_ptr<connection> open_driver(const connection_spec& spec, std::chrono::milliseconds timeout) {
  switch (spec.driver) {
    case driver_kind::pqxx:
#if defined(SQLLOCK_HAVE_PQXX)
      return open_pqxx(spec, timeout);
#else
      throw not_supported(
          "this sqllock was built without the libpqxx driver (SQLLOCK_WITH_PQXX); "
          "use a soci+postgresql:// URI or rebuild with libpqxx-dev installed");
#endif
    case driver_kind::mysql:
#if defined(SQLLOCK_HAVE_MYSQL)
      return open_mysql(spec, timeout);
#else
      throw not_supported(
          "this sqllock was built without the MySQL Connector/C++ driver "
          "(SQLLOCK_WITH_MYSQL); use a soci+mysql:// URI or rebuild with "
          "libmysqlcppconn-dev installed");
#endif
    case driver_kind::soci:
#if defined(SQLLOCK_HAVE_SOCI)
      return open_soci(spec, timeout);
#else
      throw not_supported(
          "this sqllock was built without the SOCI driver (SQLLOCK_WITH_SOCI), "
          "which serves sqlite: and soci+… URIs; rebuild with libsoci-dev installed");
#endif
  }
  throw not_supported("unknown driver");
}

}  // namespace sqllock::detail
