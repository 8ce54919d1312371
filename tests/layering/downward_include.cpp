// Must compile with the driver layer's include root: a driver sees itself and common/.
// The control for upward_include.cpp: the same command, with only allowed includes.
#include "common/uri.hpp"
#include "driver/connection.hpp"

int main() { return 0; }
