// parse_duration (tools/sqllock/duration.hpp): the forms `sqllock run` accepts for --ttl/--wait.
#include "duration.hpp"

#include <gtest/gtest.h>

#include "cli.hpp"

namespace sqllock::cli {
namespace {

using namespace std::chrono_literals;

std::chrono::milliseconds parse(std::string_view text) { return parse_duration(text, "--wait"); }

// The usage_error message for `text`, or "" when it parses.
std::string rejection(std::string_view text) {
  try {
    parse(text);
    return "";
  } catch (const usage_error& e) {
    return e.message;
  }
}

TEST(DurationTest, UnitsAndBareSeconds) {
  EXPECT_EQ(parse("500ms"), 500ms);
  EXPECT_EQ(parse("30s"), 30s);
  EXPECT_EQ(parse("5m"), 5min);
  EXPECT_EQ(parse("1h"), 1h);
  EXPECT_EQ(parse("10"), 10s);
  EXPECT_EQ(parse("0"), 0ms);
  EXPECT_EQ(parse("0s"), 0ms);
  EXPECT_EQ(parse("007"), 7s);
}

TEST(DurationTest, FractionsLikeFlocksWait) {
  EXPECT_EQ(parse("0.5"), 500ms);
  EXPECT_EQ(parse(".25"), 250ms);
  EXPECT_EQ(parse("1.5m"), 90s);
  EXPECT_EQ(parse("0.001"), 1ms);
  EXPECT_EQ(parse("2.5h"), 150min);
  EXPECT_EQ(parse("0.123456789"), 124ms) << "sub-millisecond parts round up";
  EXPECT_EQ(parse("0.0001"), 1ms) << "a non-zero duration never becomes zero";
  EXPECT_EQ(parse("1.5ms"), 2ms);
}

TEST(DurationTest, RejectsJunkWithTheAcceptedForms) {
  for (const char* bad :
       {"",    "-1",   "-0.5", "+1", " 1",   "1 ",   "1 s", "s",   "ms",           ".",   "1.", "1..2", "1.2.3",
        "1e3", "0x10", "1d",   "1S", "1sec", "10s5", "one", "1,5", "1.0000000001", "inf", "nan"}) {
    const std::string msg = rejection(bad);
    EXPECT_NE(msg, "") << "'" << bad << "' must be rejected";
    EXPECT_NE(msg.find("--wait"), std::string::npos) << msg;
    EXPECT_NE(msg.find("500ms, 30s, 5m, 1h"), std::string::npos) << "the message lists the accepted forms: " << msg;
  }
  EXPECT_NE(rejection("-1").find("negative"), std::string::npos);
  EXPECT_NE(rejection("5x").find("unknown unit 'x'"), std::string::npos);
}

TEST(DurationTest, RejectsOverflowInsteadOfWrapping) {
  EXPECT_EQ(parse("876000h"), 876000h);
  EXPECT_EQ(parse("878400h"), kMaxDuration) << "100 years (of 366 days) is the limit";
  EXPECT_NE(rejection("878401h"), "");
  EXPECT_NE(rejection("99999999999999999999"), "");
  EXPECT_NE(rejection("18446744073709551616ms"), "");  // 2^64
  EXPECT_NE(rejection("9223372036854775808"), "");     // 2^63 seconds
  EXPECT_NE(rejection("99999999999999999999999999999999.5h"), "");
  EXPECT_NE(rejection("1000000000000h").find("100 years"), std::string::npos);
}

}  // namespace
}  // namespace sqllock::cli
