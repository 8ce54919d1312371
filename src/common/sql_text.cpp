#include "common/sql_text.hpp"

#include "common/message_text.hpp"
#include "sqllock/error.hpp"

namespace sqllock::detail {
namespace {

bool is_word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

}  // namespace

void validate_table_name(std::string_view name) {
  auto fail = [&](std::string_view why) {
    throw invalid_argument("invalid lock table name '" + message_text(name) + "': " + std::string(why) +
                           "; use 1-48 letters, digits or '_', not starting with a digit");
  };
  if (name.empty()) fail("it is empty");
  if (name.size() > kMaxTableName) fail("it is longer than 48 characters");
  if (name.front() >= '0' && name.front() <= '9') fail("it starts with a digit");
  for (char c : name)
    if (!is_word_char(c)) fail("it contains a character other than a letter, digit or '_'");
}

std::string quote_identifier(dialect_kind dialect, std::string_view name) {
  const char q = dialect == dialect_kind::mysql ? '`' : '"';
  std::string out;
  out.reserve(name.size() + 2);
  out += q;
  out += name;
  out += q;
  return out;
}

std::string expand_table_template(std::string_view text, dialect_kind dialect, std::string_view table) {
  std::string out;
  out.reserve(text.size() + 64);
  std::size_t pos = 0;
  while (true) {
    const auto open = text.find("{{", pos);
    if (open == std::string_view::npos) break;
    const auto close = text.find("}}", open);
    if (close == std::string_view::npos) throw invalid_argument("unclosed '{{' in SQL template");
    out.append(text.substr(pos, open - pos));
    const auto key = text.substr(open + 2, close - open - 2);
    if (key == "table") {
      out += quote_identifier(dialect, table);
    } else if (key.substr(0, 6) == "table_" && key.size() > 6) {
      const auto suffix = key.substr(6);
      for (char c : suffix)
        if (!is_word_char(c)) throw invalid_argument("bad template name {{" + std::string(key) + "}}");
      out += quote_identifier(dialect, std::string(table) + "_" + std::string(suffix));
    } else {
      throw invalid_argument("unknown template name {{" + std::string(key) + "}} in SQL");
    }
    pos = close + 2;
  }
  out.append(text.substr(pos));
  return out;
}

std::vector<std::string> split_sql_script(std::string_view script) {
  std::vector<std::string> statements;
  std::string delimiter = ";";
  std::string current;
  auto flush = [&] {
    const auto body = trim(current);
    if (!body.empty()) statements.emplace_back(body);
    current.clear();
  };
  while (!script.empty()) {
    const auto nl = script.find('\n');
    auto line = script.substr(0, nl);
    script = nl == std::string_view::npos ? std::string_view{} : script.substr(nl + 1);
    const auto t = trim(line);
    if (t.empty() || t.substr(0, 2) == "--") continue;
    if (t.substr(0, 10) == "DELIMITER " || t.substr(0, 10) == "delimiter ") {
      flush();
      delimiter = std::string(trim(t.substr(10)));
      continue;
    }
    if (t.size() >= delimiter.size() && t.substr(t.size() - delimiter.size()) == delimiter) {
      current.append(line.substr(0, line.rfind(delimiter)));
      flush();
    } else {
      current.append(line);
      current += '\n';
    }
  }
  flush();
  return statements;
}

}  // namespace sqllock::detail
