#include "reap_args.hpp"

#include <charconv>
#include <string>

#include "duration.hpp"

namespace sqllock::cli {

reap_options take_reap_options(args& a) {
  reap_options o;
  if (auto v = a.take("batch")) {
    std::size_t n = 0;
    const auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
    if (ec != std::errc() || end != v->data() + v->size() || n < 1 || n > max_reap_batch)
      throw usage_error{"invalid --batch '" + *v + "': use a whole number from 1 to " + std::to_string(max_reap_batch)};
    o.batch_size = n;
  }
  if (auto v = a.take("grace")) {
    o.grace = parse_duration(*v, "--grace");
    if (o.grace > std::chrono::hours(24 * 365)) throw usage_error{"--grace must be at most 365 days"};
  }
  return o;
}

}  // namespace sqllock::cli
