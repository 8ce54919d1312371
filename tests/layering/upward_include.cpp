// Must NOT compile with the driver layer's include root: a driver may not see the core.
// tests/layering.cmake compiles this file and expects the compiler to fail.
#include "core/lease/table_store.hpp"

int main() { return 0; }
