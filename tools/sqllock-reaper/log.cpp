#include "log.hpp"

#include <cstdio>
#include <ctime>
#include <iostream>
#include <mutex>

namespace sqllock::reaper {
namespace {

std::mutex log_mutex;

// logfmt quoting: bare when the value is plain, else in quotes with \", \\ and control
// characters escaped, so that one event is always one line.
std::string logfmt_value(std::string_view v) {
  bool plain = !v.empty();
  for (char c : v) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= ' ' || c == '"' || c == '=' || c == '\\' || u == 0x7f) plain = false;
  }
  if (plain) return std::string(v);
  std::string out = "\"";
  for (char c : v) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string utc_now() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t secs = std::chrono::system_clock::to_time_t(now);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[96];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  return buf;
}

}  // namespace

void log_event(level lvl, std::string_view event, const std::vector<log_field>& fields) noexcept {
  try {
    std::string line = "time=" + utc_now() + (lvl == level::error ? " level=error" : " level=info") +
                       " event=" + logfmt_value(event);
    for (const auto& [key, value] : fields) {
      line += ' ';
      line += key;
      line += '=';
      line += logfmt_value(value);
    }
    line += '\n';
    std::lock_guard lock(log_mutex);
    std::FILE* out = lvl == level::error ? stderr : stdout;
    std::fwrite(line.data(), 1, line.size(), out);
    std::fflush(out);
  } catch (...) {  // logging must not take the reaper down
  }
}

std::string millis_text(std::chrono::nanoseconds d) {
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(d).count();
  char buf[40];
  std::snprintf(buf, sizeof buf, "%lld.%03lld", static_cast<long long>(us / 1000), static_cast<long long>(us % 1000));
  return buf;
}

}  // namespace sqllock::reaper
