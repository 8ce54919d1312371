# Guarded writes: guard() in an application's own transaction, through each adapter (libpqxx, SOCI,
# Connector/C++), for every leased kind on every target, PgBouncer included.
if(SQLLOCK_HAVE_PQXX AND SQLLOCK_HAVE_MYSQL AND SQLLOCK_HAVE_SOCI)
  sqllock_add_test(guard_test SOURCES guard_test.cpp
 SERVERS PROCESS LIBS PkgConfig::SQLLOCK_PQXX sqllock_dep_mysqlcppconn sqllock_dep_soci)
  # As row_lock_adapter_test: SOCI's inline operators need typeinfo its libraries do not export.
  if(SQLLOCK_SANITIZE)
    set_source_files_properties(guard_test.cpp PROPERTIES COMPILE_OPTIONS -fno-sanitize=vptr)
  endif()
endif()

# The SQL guard of migration 6 (<table>_guard(name, fence) on PostgreSQL and MySQL/MariaDB, the
# one-statement UPDATE … RETURNING on SQLite), called with bound parameters through each target's
# client library, for every leased kind on every target, PgBouncer included. Label `server_side`:
# what it checks runs in the database server, and the sqllock code it calls (the lock kinds) runs
# in guard_test and the kind suites, so the sanitizer suite leaves it out.
if(SQLLOCK_HAVE_PQXX AND SQLLOCK_HAVE_MYSQL AND SQLLOCK_HAVE_SOCI)
  sqllock_add_test(guard_sql_test SOURCES guard_sql_test.cpp
 SERVERS LIBS PkgConfig::SQLLOCK_PQXX sqllock_dep_mysqlcppconn sqllock_dep_soci LABELS server_side)
  if(SQLLOCK_SANITIZE)
    set_source_files_properties(guard_sql_test.cpp PROPERTIES COMPILE_OPTIONS -fno-sanitize=vptr)
  endif()
endif()
