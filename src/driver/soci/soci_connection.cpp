#include "driver/soci/soci_connection.hpp"

#include <new>
#include <utility>

#include "driver/abandon.hpp"
#include "driver/server_error.hpp"
#include "driver/statement_kind.hpp"
#include "sqllock/error.hpp"

namespace sqllock::detail {
namespace {

// The slot type a parameter needs: 'i' (integer) or 's' (text). NULL binds to either, so it keeps
// `current` ('s' when there is none yet).
char slot_kind(const value& v, char current) noexcept {
  if (std::holds_alternative<std::int64_t>(v)) return 'i';
  if (std::holds_alternative<std::string>(v)) return 's';
  return current == 'i' ? 'i' : 's';
}

// The signature `params` need, keeping `current`'s choice wherever a parameter is NULL.
std::string signature_for(std::span<const value> params, const std::string& current) {
  std::string out(params.size(), 's');
  for (std::size_t i = 0; i < params.size(); ++i) {
    out[i] = slot_kind(params[i], i < current.size() ? current[i] : 's');
  }
  return out;
}

// `sql` with every comment replaced by a blank. SOCI's postgresql and mysql backends look for
// ':name' parameters in the whole text, comments included ("-- note: …" would become a parameter),
// so comments never reach SOCI. Quoted runs ('…', "…", `…`) are copied as they are, the same runs
// rewrite_placeholders() skips.
std::string without_comments(std::string_view sql) {
  std::string out;
  out.reserve(sql.size());
  std::size_t i = 0;
  while (i < sql.size()) {
    const char c = sql[i];
    if (c == '\'' || c == '"' || c == '`') {
      // A doubled quote ends this run and starts the next one: the copy is the same.
      const std::size_t close = sql.find(c, i + 1);
      const std::size_t end = close == std::string_view::npos ? sql.size() : close + 1;
      out.append(sql.substr(i, end - i));
      i = end;
    } else if (sql.substr(i, 2) == "--" || sql.substr(i, 2) == "/*") {
      const bool line = c == '-';
      const std::size_t close = sql.find(line ? "\n" : "*/", i + 2);
      i = close == std::string_view::npos ? sql.size() : close + (line ? 1 : 2);
      out += line ? '\n' : ' ';
    } else {
      out += c;
      ++i;
    }
  }
  return out;
}

// SOCI 4.0 frees the buffers it formats parameters into only after a successful execution.
// After a failure they linger: the next call leaks them, and the postgresql backend even sends
// the stale value for a parameter that is NULL next time. Cleaning the bound elements frees
// them; the bindings themselves stay, so the statement can run again.
void release_call_buffers(soci::statement& st) noexcept {
  try {
    st.undefine_and_bind();
  } catch (...) {
    // Only frees memory; nothing useful to report.
  }
}

}  // namespace

soci_connection::soci_connection(std::unique_ptr<soci_backend> backend, std::string display)
    : backend_(std::move(backend)), statements_(placeholder_style::colon), display_(std::move(display)) {}

soci_connection::~soci_connection() = default;

soci_connection::handle soci_connection::prepare(const native_statement& native, std::string_view sql,
                                                 std::string signature) {
  auto st = std::make_unique<soci_statement>(backend_->session());
  const std::size_t slots = native.order.size();
  st->signature = std::move(signature);
  st->integers.resize(slots);
  st->texts.resize(slots);
  st->indicators.resize(slots, soci::i_ok);
  st->query = is_query_statement(sql);
  for (std::size_t i = 0; i < slots; ++i) {
    std::string name = "p";  // not "p" + to_string(): a false -Wrestrict from g++ 12 at -O3
    name += std::to_string(i + 1);
    if (st->signature[native.order[i]] == 'i') {
      st->statement.exchange(soci::use(st->integers[i], st->indicators[i], name));
    } else {
      st->statement.exchange(soci::use(st->texts[i], st->indicators[i], name));
    }
  }
  const std::string text = without_comments(native.sql);
  st->statement.alloc();
  st->statement.prepare(text, soci::details::st_repeatable_query);
  backend_->define_columns(*st, text);
  st->statement.define_and_bind();
  return st;
}

result soci_connection::exec(std::string_view sql, std::span<const value> params) {
  return guarded([&] {
    if (backend_->runs_natively()) return backend_->run_native(sql, params);
    auto& entry = statements_.get(
        sql, params.size(),
        [&](const native_statement& native) { return prepare(native, sql, signature_for(params, {})); },
        [](handle& h) { h.reset(); });
    const std::string wanted = signature_for(params, entry.handle->signature);
    if (wanted != entry.handle->signature) {
      // An integer where text was bound, or the reverse: SOCI binds by C++ type, so rebind.
      // Prepare first, so that a failure leaves the old statement in place.
      handle fresh = prepare(entry.native, sql, wanted);
      entry.handle = std::move(fresh);
    }
    soci_statement& st = *entry.handle;
    const auto& order = entry.native.order;
    for (std::size_t i = 0; i < order.size(); ++i) {
      const value& v = params[order[i]];
      st.indicators[i] = soci::i_ok;
      if (const auto* number = std::get_if<std::int64_t>(&v)) {
        st.integers[i] = *number;
      } else if (const auto* text = std::get_if<std::string>(&v)) {
        if (!backend_->text_may_contain_nul() && text->find('\0') != std::string::npos) {
          // libpq would silently cut the value short at the NUL.
          throw invalid_argument("PostgreSQL text cannot contain NUL bytes");
        }
        st.texts[i] = *text;
      } else {
        st.indicators[i] = soci::i_null;
      }
    }
    try {
      return backend_->run(st);
    } catch (...) {
      release_call_buffers(st.statement);
      throw;
    }
  });
}

void soci_connection::prepare(std::string_view sql, std::size_t param_count) {
  // SOCI's own statements (SQLite, MySQL) are prepared by the client library, at no round trip.
  if (!backend_->runs_natively()) return;
  guarded([&] {
    backend_->prepare_native(sql, param_count);
    return result{};
  });
}

result soci_connection::exec_direct(std::string_view sql) {
  return guarded([&] { return backend_->run_direct(sql); });
}

void soci_connection::listen(const std::string& channel) {
  guarded([&] {
    backend_->listen(channel);
    return result{};
  });
}

std::vector<std::string> soci_connection::await(std::chrono::milliseconds timeout) {
  std::vector<std::string> payloads;
  guarded([&] {
    payloads = backend_->await_notifications(timeout);
    return result{};
  });
  return payloads;
}

void soci_connection::abandon() noexcept {
  broken_ = true;
  // Destroying a statement may talk to the server (PostgreSQL: DEALLOCATE) and destroying the
  // session closes it (Terminate, COM_QUIT): in a forked child both would act on the parent's
  // session. Leak them; the child's memory and descriptors go back when it exits. The
  // descriptors are not closed early: for SQLite, closing any descriptor of the file would drop
  // this process's POSIX locks on it.
  statements_.clear([](handle& h) { leak_on_purpose(h); });
  if (backend_) backend_->leak();
}

void soci_connection::report(const soci_failure& f) {
  if (f.connection_lost) {
    broken_ = true;
    throw connection_error("connection to " + display_ + " lost: " + f.message +
                           " (the pool opens a new connection; retry the operation)");
  }
  if (f.discard) broken_ = true;
  throw_server_error(f.message, f.sqlstate, f.vendor_code, f.permission_denied);
}

template <class F>
result soci_connection::guarded(F&& run) {
  if (broken_) {
    throw connection_error("connection to " + display_ + " is broken or was abandoned; use a new one");
  }
  try {
    return run();
  } catch (const error&) {
    throw;  // already sqllock's (e.g. invalid_argument for a miscounted call)
  } catch (const soci::soci_error& e) {
    report(backend_->classify(e));
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const std::exception& e) {
    // SOCI lets a few standard exceptions through (e.g. std::bad_cast from type conversions).
    throw backend_error(std::string("SOCI: ") + e.what(), "", 0);
  }
}

}  // namespace sqllock::detail
