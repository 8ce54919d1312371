#include "support/json.hpp"

#include <charconv>

namespace sqllock::test {
namespace {

class parser {
 public:
  explicit parser(std::string_view s) : s_(s) {}

  json document() {
    json v = value();
    skip_ws();
    if (i_ != s_.size()) fail("trailing text");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw std::runtime_error("invalid JSON at offset " + std::to_string(i_) + ": " + why);
  }
  void skip_ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  bool eat(char c) {
    skip_ws();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!eat(c)) fail(std::string("expected '") + c + "'");
  }
  bool literal(std::string_view word) {
    if (s_.substr(i_, word.size()) != word) return false;
    i_ += word.size();
    return true;
  }

  json value() {
    skip_ws();
    if (i_ >= s_.size()) fail("unexpected end");
    json v;
    const char c = s_[i_];
    if (c == '{') {
      ++i_;
      v.type = json::kind::object;
      if (eat('}')) return v;
      do {
        skip_ws();
        if (i_ >= s_.size() || s_[i_] != '"') fail("expected a member name");
        std::string key = string();
        expect(':');
        if (!v.members.emplace(key, value()).second) fail("duplicate member '" + key + "'");
      } while (eat(','));
      expect('}');
    } else if (c == '[') {
      ++i_;
      v.type = json::kind::array;
      if (eat(']')) return v;
      do v.items.push_back(value());
      while (eat(','));
      expect(']');
    } else if (c == '"') {
      v.type = json::kind::string;
      v.text = string();
    } else if (literal("true")) {
      v.type = json::kind::boolean;
      v.boolean = true;
    } else if (literal("false")) {
      v.type = json::kind::boolean;
    } else if (literal("null")) {
    } else {
      v.type = json::kind::number;
      v.text = number();
    }
    return v;
  }

  std::string number() {
    const std::size_t start = i_;
    auto digits = [&] {
      const std::size_t d = i_;
      while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
      if (i_ == d) fail("expected a digit");
    };
    if (i_ < s_.size() && s_[i_] == '-') ++i_;
    if (i_ < s_.size() && s_[i_] == '0')
      ++i_;
    else
      digits();
    if (i_ < s_.size() && s_[i_] == '.') {
      ++i_;
      digits();
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      digits();
    }
    return std::string(s_.substr(start, i_ - start));
  }

  unsigned hex4() {
    if (i_ + 4 > s_.size()) fail("short \\u escape");
    unsigned v = 0;
    const auto r = std::from_chars(s_.data() + i_, s_.data() + i_ + 4, v, 16);
    if (r.ec != std::errc() || r.ptr != s_.data() + i_ + 4) fail("bad \\u escape");
    i_ += 4;
    return v;
  }

  static void append_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xc0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xe0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
      out += static_cast<char>(0xf0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    }
  }

  std::string string() {
    ++i_;  // opening quote
    std::string out;
    while (true) {
      if (i_ >= s_.size()) fail("unterminated string");
      const auto c = static_cast<unsigned char>(s_[i_++]);
      if (c == '"') return out;
      if (c < 0x20) fail("raw control character in a string");
      if (c != '\\') {
        out += static_cast<char>(c);
        continue;
      }
      if (i_ >= s_.size()) fail("unterminated escape");
      switch (s_[i_++]) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          unsigned cp = hex4();
          if (cp >= 0xd800 && cp <= 0xdbff) {
            if (!literal("\\u")) fail("lone high surrogate");
            const unsigned lo = hex4();
            if (lo < 0xdc00 || lo > 0xdfff) fail("bad low surrogate");
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
          } else if (cp >= 0xdc00 && cp <= 0xdfff) {
            fail("lone low surrogate");
          }
          append_utf8(out, cp);
          break;
        }
        default: fail("bad escape");
      }
    }
  }

  std::string_view s_;
  std::size_t i_ = 0;
};

}  // namespace

const json& json::operator[](const std::string& key) const {
  if (type != kind::object) throw std::out_of_range("not an object (looking for '" + key + "')");
  const auto it = members.find(key);
  if (it == members.end()) throw std::out_of_range("no member '" + key + "'");
  return it->second;
}

const json& json::operator[](std::size_t i) const {
  if (type != kind::array || i >= items.size()) throw std::out_of_range("no array item " + std::to_string(i));
  return items[i];
}

std::int64_t json::as_int() const {
  std::int64_t v = 0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (type != kind::number || r.ec != std::errc() || r.ptr != text.data() + text.size())
    throw std::runtime_error("not an integer: " + text);
  return v;
}

double json::as_double() const {
  if (type != kind::number) throw std::runtime_error("not a number");
  return std::stod(text);
}

const std::string& json::as_string() const {
  if (type != kind::string) throw std::runtime_error("not a string");
  return text;
}

bool json::as_bool() const {
  if (type != kind::boolean) throw std::runtime_error("not a boolean");
  return boolean;
}

json parse_json(std::string_view text) { return parser(text).document(); }

}  // namespace sqllock::test
