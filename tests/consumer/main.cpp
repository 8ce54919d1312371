// Opens an SQLite lock database through the installed sqllock and prints what it selected.
// Usage: consumer DIR   (DIR: an absolute directory in which to create consumer.db)
#include <exception>
#include <iostream>
#include <string>

#include <sqllock/sqllock.hpp>

int main(int argc, char** argv) {
  if (argc != 2 || argv[1][0] != '/') {
    std::cerr << "usage: consumer ABSOLUTE_DIR\n";
    return 2;
  }
  try {
    sqllock::database db("sqlite://" + std::string(argv[1]) + "/consumer.db");
    std::cout << "dialect: " << sqllock::to_string(db.dialect()) << ", driver: " << db.driver_name()
              << ", table: " << db.table() << "\n";
    return db.dialect() == sqllock::dialect_kind::sqlite ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "consumer: " << e.what() << "\n";
    return 1;
  }
}
