// A small, strict JSON reader for tests that check the JSON a program prints: it rejects what
// RFC 8259 rejects (raw control characters in strings, bad escapes, trailing commas, trailing
// text), decodes \u escapes (with surrogate pairs) to UTF-8, and keeps numbers' text.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace sqllock::test {

struct json {
  enum class kind { null, boolean, number, string, array, object };
  kind type = kind::null;
  bool boolean = false;
  std::string text;  // a string's decoded value, or a number's literal text
  std::vector<json> items;
  std::map<std::string, json> members;

  // Member access; throws std::out_of_range when missing or not an object.
  const json& operator[](const std::string& key) const;
  const json& operator[](std::size_t i) const;
  bool has(const std::string& key) const { return type == kind::object && members.count(key) > 0; }
  std::int64_t as_int() const;           // throws unless an integer number
  double as_double() const;              // throws unless a number
  const std::string& as_string() const;  // throws unless a string
  bool as_bool() const;                  // throws unless true/false
};

// Parses one JSON text (surrounding whitespace allowed). Throws std::runtime_error with the
// offset of the first error.
json parse_json(std::string_view text);

}  // namespace sqllock::test
