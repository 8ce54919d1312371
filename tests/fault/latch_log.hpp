// The server's log of the latch kind (--kind latch): triggers on sqllock's latch tables append
// one row per change to fault_latch_log, in the order the changes were made (an id from the
// database's own counter, taken while the change holds the latch's row lock — so a latch's rows
// are in the order its count-downs took effect, on every dialect):
//   R  a generation armed: the latch row inserted, or updated to a new generation (count = initial)
//   D  the count changed within a generation (old_count → new_count; opened when new_count is 0)
//   A  an arrival row inserted: (generation, participant) counted by count_down(participant)
// Rows of a rolled-back transaction vanish with it, so the log holds exactly what committed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sqllock/database.hpp"

namespace sqllock::fault {

struct latch_log_row {
  std::int64_t id = 0;
  char event = '?';  // R, D or A
  std::string resource;
  std::int64_t generation = 0;
  std::string participant;                                 // A rows
  std::int64_t old_count = 0, new_count = 0, initial = 0;  // R: new_count = initial; D: the change
  std::int64_t logged_us = 0;                              // database clock, µs since 1970, when the trigger ran
};

// Creates fault_latch_log and its triggers on the latch tables (after migrate()).
void create_latch_log(const database& db);

// Every row of the log, by resource and then in the order of the changes.
std::vector<latch_log_row> read_latch_log(const database& db);

}  // namespace sqllock::fault
