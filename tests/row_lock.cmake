# RowLock: with_row_lock on every driver × dialect pair, with threads and with real processes, and
# the adapters that join an application's own transaction (pqxx, SOCI, Connector/C++).
sqllock_add_test(row_lock_test SOURCES row_lock_test.cpp SERVERS)
sqllock_add_test(row_lock_process_test SOURCES row_lock_process_test.cpp
 SERVERS PROCESS)
# The adapters' test links the client libraries itself, as an application does.
if(SQLLOCK_HAVE_PQXX AND SQLLOCK_HAVE_MYSQL AND SQLLOCK_HAVE_SOCI)
  sqllock_add_test(row_lock_adapter_test SOURCES row_lock_adapter_test.cpp
 SERVERS PROCESS LIBS PkgConfig::SQLLOCK_PQXX sqllock_dep_mysqlcppconn sqllock_dep_soci)
  # SOCI's libraries do not export the typeinfo UBSan's vptr check needs for the statement classes
  # its inline operators (session << "…") use; the driver avoids them, an application may not.
  # (A source property: it comes after the target's -fsanitize flags on the command line.)
  if(SQLLOCK_SANITIZE)
    set_source_files_properties(row_lock_adapter_test.cpp PROPERTIES COMPILE_OPTIONS -fno-sanitize=vptr)
  endif()
endif()
