// Includes MySQL Connector/C++ 1.1 (legacy API) for the driver's .cpp files only.
//
// Its headers pull in Boost and predate C++20; they are found through SYSTEM include dirs, and
// the pragmas below keep any warning that still slips through from failing a -Werror build.
#pragma once

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#include <cppconn/connection.h>
#include <cppconn/exception.h>
#include <cppconn/prepared_statement.h>
#include <cppconn/resultset.h>
#include <cppconn/resultset_metadata.h>
#include <cppconn/statement.h>
#include <mysql_driver.h>
#pragma GCC diagnostic pop
