sqllock_add_test(migrate_test SOURCES migrate_test.cpp SERVERS PROCESS)
target_compile_definitions(migrate_test PRIVATE SQLLOCK_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
sqllock_add_test(core_unit_test SOURCES core_unit_test.cpp)
