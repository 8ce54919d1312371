#include "support/time_scale.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "support/test_env.hpp"

namespace sqllock::test {

double time_scale() {
  static const double scale = [] {
    if (const auto s = test_setting("SQLLOCK_TEST_TIME_SCALE")) {
      std::size_t used = 0;
      double v = 0;
      try {
        v = std::stod(*s, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != s->size() || !(v >= 1.0) || v > 100.0) {
        std::fprintf(stderr, "SQLLOCK_TEST_TIME_SCALE=%s: expected a number from 1 to 100\n", s->c_str());
        std::exit(2);
      }
      return v;
    }
#ifdef SQLLOCK_TEST_SANITIZED
    return 3.0;
#else
    return 1.0;
#endif
  }();
  return scale;
}

}  // namespace sqllock::test
