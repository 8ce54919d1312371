// sqllock latch: create, count down, wait for and show a count-down latch (sqllock/latch.hpp).
#include <charconv>
#include <iostream>
#include <sstream>

#include "cli.hpp"
#include "duration.hpp"
#include "format.hpp"
#include "sqllock/database.hpp"
#include "sqllock/error.hpp"
#include "sqllock/latch.hpp"

namespace sqllock::cli {

namespace {

constexpr std::string_view kUsage =
    "usage: sqllock latch create NAME COUNT [--ttl D] [--db URI] [--table NAME]\n"
    "       sqllock latch count-down NAME [--participant ID] [--db URI] [--table NAME]\n"
    "       sqllock latch wait NAME [--timeout D] [--db URI] [--table NAME]\n"
    "       sqllock latch status NAME [--json] [--db URI] [--table NAME]\n"
    "\n"
    "A count-down latch shared through the database: `create` arms latch NAME with COUNT\n"
    "count-downs to go (1-1000000), or arms an open latch again as its next generation;\n"
    "`count-down` lowers it by one, and at 0 it opens; `wait` blocks until it is open;\n"
    "`status` shows its count, generation and the participants counted so far. A latch that does\n"
    "not exist is absent, never open: `wait` and `count-down` say so and exit 7.\n"
    "\n"
    "  --ttl D           create: if the latch has not opened D after it was armed, it counts as\n"
    "                    absent (its waiters exit 7) and the reaper deletes it (default: no limit)\n"
    "  --participant ID  count-down: count once per participant ID and generation, so a retry\n"
    "                    after an unknown outcome cannot count twice (exit 0, \"already counted\")\n"
    "  --timeout D       wait: give up after D (default: wait as long as it takes)\n"
    "  --json            status: one JSON object for scripts\n"
    "  --db URI          database URI (default: $SQLLOCK_DB)\n"
    "  --table NAME      lock table name (default: distributed_lock)\n"
    "\n"
    "Exit status: 0 armed / counted (or already counted) / open / shown; 1 create found the latch\n"
    "armed (not re-armed), count-down found it already open (nothing counted), or wait timed out;\n"
    "7 the latch is absent; 2 usage error; 3, 4, 6 database errors as for every command.\n";

// Built by append: `"…" + std::string&&` trips GCC 12's false -Wrestrict at -O3 (see cli.cpp).
std::string quoted(std::string_view before, std::string_view text, std::string_view after) {
  std::string out(before);
  out.append(printable(text)).append(after);
  return out;
}

std::string latch_label(const latch& l) { return quoted("latch '", l.name(), "'"); }

std::int64_t parse_count(const std::string& text) {
  std::int64_t n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size())
    throw usage_error{quoted("invalid COUNT '", text, "': use a whole number from 1 to ") +
                      std::to_string(max_latch_count)};
  return n;
}

int create(latch& l, const std::string& count_text, const std::optional<std::string>& ttl) {
  latch_options o;
  if (ttl) o.ttl = parse_duration(*ttl, "--ttl");
  const std::int64_t count = parse_count(count_text);
  if (const auto generation = l.try_create(count, o)) {
    std::cout << "armed " << latch_label(l) << " with count " << count << " (generation " << *generation << ")\n";
    return exit_ok;
  }
  std::cerr << "sqllock: " << latch_label(l)
            << " is armed and not open yet; it was not re-armed (an open latch can be)\n";
  return exit_not_obtained;
}

int count_down(latch& l, const std::optional<std::string>& participant) {
  try {
    const auto r = participant ? l.count_down(*participant) : l.count_down();
    if (!r.counted)
      std::cout << "participant '" << printable(*participant) << "' was already counted; ";
    else
      std::cout << "counted down " << latch_label(l) << ": ";
    if (r.open())
      std::cout << "open\n";
    else
      std::cout << r.remaining << " to go\n";
    return exit_ok;
  } catch (const latch_not_armed& e) {
    std::cerr << "sqllock: " << printable(e.what()) << "\n";
    return e.absent() ? exit_absent : exit_not_obtained;
  }
}

int wait(latch& l, const std::optional<std::string>& timeout) {
  latch_wait_result r;
  if (timeout)
    r = l.wait_for(parse_duration(*timeout, "--timeout"));
  else
    r = l.wait();
  switch (r) {
    case latch_wait_result::open: std::cout << latch_label(l) << " is open\n"; return exit_ok;
    case latch_wait_result::timed_out:
      std::cerr << "sqllock: timed out waiting for " << latch_label(l) << "\n";
      return exit_not_obtained;
    case latch_wait_result::absent: break;
  }
  std::cerr << "sqllock: " << latch_label(l)
            << " is absent (never created, misspelled, deleted by the reaper, or past its ttl)\n";
  return exit_absent;
}

int status(latch& l, bool json) {
  const auto s = l.state();
  if (json) {
    std::ostringstream o;
    o << "{\"latch\":" << json_quote(l.name());
    if (!s) {
      o << ",\"state\":\"absent\"}";
    } else {
      o << ",\"state\":\"" << (s->open ? "open" : "armed") << "\",\"count\":" << s->count
        << ",\"initial\":" << s->initial << ",\"generation\":" << s->generation
        << ",\"armed_at\":" << json_quote(s->armed_at)
        << ",\"opened_at\":" << (s->open ? json_quote(s->opened_at) : "null") << ",\"expires_in_ms\":";
      if (s->expires_in)
        o << s->expires_in->count();
      else
        o << "null";
      o << ",\"arrived\":[";
      for (std::size_t i = 0; i < s->arrived.size(); ++i) o << (i ? "," : "") << json_quote(s->arrived[i]);
      o << "]}";
    }
    std::cout << o.str() << "\n";
    return s ? exit_ok : exit_absent;
  }
  if (!s) {
    std::cerr << "sqllock: " << latch_label(l) << " is absent\n";
    return exit_absent;
  }
  std::cout << latch_label(l) << ", generation " << s->generation << ": ";
  if (s->open)
    std::cout << "open since " << printable(s->opened_at) << " (count " << s->initial << ")\n";
  else
    std::cout << "armed, " << s->count << " of " << s->initial << " to go\n";
  std::cout << "armed at " << printable(s->armed_at);
  if (s->expires_in) std::cout << "; ttl runs out in " << seconds_text(s->expires_in->count()) << " s";
  std::cout << "\n";
  std::cout << "participants counted: " << s->arrived.size();
  for (std::size_t i = 0; i < s->arrived.size(); ++i) std::cout << (i ? ", " : ": ") << printable(s->arrived[i]);
  std::cout << "\n";
  return exit_ok;
}

}  // namespace

int cmd_latch(args a) {
  if (a.flag("help", "h")) {
    std::cout << kUsage << "\nDurations: " << kDurationForms << ".\n";
    return exit_ok;
  }
  database_options options;
  if (auto t = a.take("table")) options.table = *t;
  const auto ttl = a.take("ttl");
  const auto participant = a.take("participant");
  const auto timeout = a.take("timeout");
  const bool json = a.flag("json");
  const std::string uri = database_uri(a);
  const auto words = a.positionals();
  if (words.empty()) throw usage_error{"latch needs a subcommand: create, count-down, wait or status"};
  const std::string& sub = words[0];
  const std::size_t want = sub == "create" ? 3 : 2;
  if (sub != "create" && sub != "count-down" && sub != "wait" && sub != "status")
    throw usage_error{quoted("unknown latch subcommand '", sub, "' (create, count-down, wait or status)")};
  if (words.size() < want) throw usage_error{"latch " + sub + (want == 3 ? " needs NAME and COUNT" : " needs NAME")};
  if (words.size() > want) throw usage_error{quoted("unexpected argument '", words[want], "'")};
  if (ttl && sub != "create") throw usage_error{"--ttl applies to `latch create` only"};
  if (participant && sub != "count-down") throw usage_error{"--participant applies to `latch count-down` only"};
  if (timeout && sub != "wait") throw usage_error{"--timeout applies to `latch wait` only"};
  if (json && sub != "status") throw usage_error{"--json applies to `latch status` only"};

  database db(uri, options);
  latch l(db, words[1]);
  if (sub == "create") return create(l, words[2], ttl);
  if (sub == "count-down") return count_down(l, participant);
  if (sub == "wait") return wait(l, timeout);
  return status(l, json);
}

}  // namespace sqllock::cli
