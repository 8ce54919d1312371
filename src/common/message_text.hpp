// Showing caller-supplied text (a table name, a URI) inside an exception message.
#pragma once

#include <string>
#include <string_view>

namespace sqllock::detail {

// `s` safe to quote in a one-line message: valid UTF-8 and printable ASCII kept, a backslash
// doubled, and control characters (newlines, escape sequences, NUL, C1 controls) and bytes that
// are not valid UTF-8 written as \xNN. Messages end up in logs and on terminals; a name or URI
// must not be able to break a log line or move the cursor.
std::string message_text(std::string_view s);

}  // namespace sqllock::detail
