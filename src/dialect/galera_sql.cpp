// The Galera probe (see galera_sql.hpp). SHOW … LIKE rather than SELECT @@wsrep_on: a variable
// that does not exist is an error on MySQL, while SHOW just returns no row. GLOBAL status, because
// the session's own wsrep_cluster_size is the same number and GLOBAL says what is meant. The
// patterns carry no backslash escapes (under NO_BACKSLASH_ESCAPES, which an application's own
// connection may run with, '\_' would match a literal backslash and find nothing); an unescaped
// '_' matches any character, so the core picks the row whose Variable_name is exactly the one asked.
#include "dialect/galera_sql.hpp"

namespace sqllock::detail {

const galera_probe_sql& galera_probe_statements(dialect_kind kind) {
  static const galera_probe_sql none{};
  static const galera_probe_sql mysql{
      true,
      "SHOW GLOBAL STATUS LIKE 'wsrep_cluster_size'",
      "wsrep_cluster_size",
      "SHOW GLOBAL VARIABLES LIKE 'wsrep_on'",
      "wsrep_on",
  };
  return kind == dialect_kind::mysql ? mysql : none;
}

}  // namespace sqllock::detail
