// Reading typed values out of the text fields drivers return (driver/connection.hpp).
#pragma once

#include <charconv>
#include <cstdint>
#include <string>

#include "driver/connection.hpp"
#include "sqllock/error.hpp"

namespace sqllock::detail {

// The field as a decimal int64. Throws backend_error naming `what` when it is NULL or not a
// number: the lock table holds something sqllock did not write.
inline std::int64_t field_int64(const field& f, const char* what) {
  std::int64_t v = 0;
  if (!f || std::from_chars(f->data(), f->data() + f->size(), v).ec != std::errc())
    throw backend_error(std::string("lock table returned a malformed ") + what + ": '" + f.value_or("NULL") + "'", "",
                        0);
  return v;
}

}  // namespace sqllock::detail
