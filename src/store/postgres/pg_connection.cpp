// SPDX-License-Identifier: Apache-2.0
#include "pg_connection.hpp"

#include <poll.h>

#include <charconv>
#include <cstdlib>

#include "nps/lazy/pq.hpp"
#include "nps/store/store.hpp"

namespace nps::store::pg {

namespace {

// libpq's message on one line: its line breaks and indents become spaces.
std::string trimmed(const char* message)
{
    std::string s;
    for (const char* p = message ? message : ""; *p; ++p) {
        const bool space = *p == '\n' || *p == '\t' || *p == ' ';
        if (!space)
            s.push_back(*p);
        else if (!s.empty() && s.back() != ' ')
            s.push_back(' ');
    }
    while (!s.empty() && s.back() == ' ')
        s.pop_back();
    return s;
}

// A text[] element, double-quoted with backslash escapes (array literal syntax).
void append_array_element(std::string& out, std::string_view value)
{
    out.push_back('"');
    for (char c : value) {
        if (c == '"' || c == '\\')
            out.push_back('\\');
        out.push_back(c);
    }
    out.push_back('"');
}

// Length of the valid UTF-8 sequence at s[i], or 0 when it is not one
// (overlong forms, surrogates and code points above U+10FFFF are not).
std::size_t utf8_sequence(std::string_view s, std::size_t i)
{
    const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
    const unsigned char c = byte(i);
    if (c >= 0x01 && c < 0x80)
        return 1;  // NUL is not allowed in PostgreSQL text
    std::size_t n = 0;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF)
        n = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        lo = c == 0xE0 ? 0xA0 : 0x80;
        hi = c == 0xED ? 0x9F : 0xBF;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        lo = c == 0xF0 ? 0x90 : 0x80;
        hi = c == 0xF4 ? 0x8F : 0xBF;
    } else
        return 0;
    if (i + n > s.size() || byte(i + 1) < lo || byte(i + 1) > hi)
        return 0;
    for (std::size_t k = 2; k < n; ++k)
        if (byte(i + k) < 0x80 || byte(i + k) > 0xBF)
            return 0;
    return n;
}

// PostgreSQL text holds neither NUL nor invalid UTF-8 (a text parameter
// would be cut at a NUL or refused), while SQLite stores any bytes: such
// bytes become U+FFFD, as the store's JSON text does (json_text.hpp). A
// runner NID with a stray byte is then stored and later compared in the same
// replaced form, so its fences still hold.
std::string valid_text(std::string_view value)
{
    std::string out;
    out.reserve(value.size());
    for (std::size_t i = 0; i < value.size();) {
        if (const std::size_t n = utf8_sequence(value, i); n > 0) {
            out.append(value.substr(i, n));
            i += n;
        } else {
            out += "\xEF\xBF\xBD";  // U+FFFD
            ++i;
        }
    }
    return out;
}

}  // namespace

// --- Params -------------------------------------------------------------------

void Params::push(std::optional<std::string> value, int format)
{
    values_.push_back(std::move(value));
    formats_.push_back(format);
    // values_ may have moved: rebuild the pointer views.
    pointers_.clear();
    lengths_.clear();
    for (const auto& v : values_) {
        pointers_.push_back(v ? v->data() : nullptr);
        lengths_.push_back(v ? static_cast<int>(v->size()) : 0);
    }
}

Params& Params::text(std::string_view value)
{
    push(valid_text(value), 0);
    return *this;
}

Params& Params::integer(std::int64_t value)
{
    push(std::to_string(value), 0);
    return *this;
}

Params& Params::optional_text(const std::optional<std::string>& value)
{
    push(value ? std::optional<std::string>(valid_text(*value)) : std::nullopt, 0);
    return *this;
}

Params& Params::optional_integer(const std::optional<std::int64_t>& value)
{
    push(value ? std::optional<std::string>(std::to_string(*value)) : std::nullopt, 0);
    return *this;
}

Params& Params::null()
{
    push(std::nullopt, 0);
    return *this;
}

Params& Params::bytes(std::string_view value)
{
    push(std::string(value), 1);
    return *this;
}

Params& Params::text_array(const std::vector<std::string>& values)
{
    std::string literal = "{";
    for (std::size_t i = 0; i < values.size(); ++i) {
        if (i)
            literal.push_back(',');
        append_array_element(literal, valid_text(values[i]));
    }
    literal.push_back('}');
    push(std::move(literal), 0);
    return *this;
}

Params& Params::integer_array(const std::vector<std::int64_t>& values)
{
    std::string literal = "{";
    for (std::size_t i = 0; i < values.size(); ++i) {
        if (i)
            literal.push_back(',');
        literal += std::to_string(values[i]);
    }
    literal.push_back('}');
    push(std::move(literal), 0);
    return *this;
}

// --- Rows -----------------------------------------------------------------------

void Rows::Clear::operator()(pg_result* result) const noexcept
{
    sym_PQclear(result);
}

Rows::Rows(pg_result* result) noexcept : result_(result) {}

Rows::~Rows() = default;

int Rows::size() const noexcept
{
    return result_ ? sym_PQntuples(result_.get()) : 0;
}

bool Rows::is_null(int row, int column) const noexcept
{
    return !result_ || sym_PQgetisnull(result_.get(), row, column) != 0;
}

std::string Rows::text(int row, int column) const
{
    if (is_null(row, column))
        return {};
    return std::string(sym_PQgetvalue(result_.get(), row, column),
                       static_cast<std::size_t>(sym_PQgetlength(result_.get(), row, column)));
}

std::optional<std::string> Rows::optional_text(int row, int column) const
{
    if (is_null(row, column))
        return std::nullopt;
    return text(row, column);
}

std::int64_t Rows::integer(int row, int column) const
{
    if (is_null(row, column))
        return 0;
    const char* begin = sym_PQgetvalue(result_.get(), row, column);
    const char* end = begin + sym_PQgetlength(result_.get(), row, column);
    std::int64_t value = 0;
    const auto [ptr, ec] = std::from_chars(begin, end, value);
    if (ec != std::errc() || ptr != end)
        throw PgFailure("NPS01", "column " + std::to_string(column) + " is not an integer: '" +
                                     std::string(begin, end) + "'");
    return value;
}

std::optional<std::int64_t> Rows::optional_integer(int row, int column) const
{
    if (is_null(row, column))
        return std::nullopt;
    return integer(row, column);
}

bool Rows::boolean(int row, int column) const
{
    return !is_null(row, column) && sym_PQgetvalue(result_.get(), row, column)[0] == 't';
}

std::string Rows::bytes(int row, int column) const
{
    if (is_null(row, column))
        return {};
    std::size_t length = 0;
    unsigned char* raw =
        sym_PQunescapeBytea(reinterpret_cast<const unsigned char*>(sym_PQgetvalue(result_.get(), row, column)), &length);
    if (!raw)
        throw std::bad_alloc();
    std::string out(reinterpret_cast<const char*>(raw), length);
    sym_PQfreemem(raw);
    return out;
}

std::int64_t Rows::affected() const
{
    if (!result_)
        return 0;
    const char* count = sym_PQcmdTuples(result_.get());
    return (count && *count) ? std::strtoll(count, nullptr, 10) : 0;
}

// --- Connection -----------------------------------------------------------------

void Connection::Finish::operator()(pg_conn* conn) const noexcept
{
    sym_PQfinish(conn);
}

Connection::Connection(const std::string& conninfo, Statements statements)
    : conn_(sym_PQconnectdb(conninfo.c_str())), statements_(statements)
{
    if (!conn_)
        throw PgFailure(std::string(kConnectionLost), "cannot connect: libpq is not available (install libpq5)");
    if (sym_PQstatus(conn_.get()) != CONNECTION_OK) {
        // libpq quotes a URI it cannot parse whole, password and all.
        std::string why = trimmed(sym_PQerrorMessage(conn_.get()));
        const std::string shown = redact_store_url(conninfo);
        for (auto at = why.find(conninfo); !conninfo.empty() && at != std::string::npos;
             at = why.find(conninfo, at + shown.size()))
            why.replace(at, conninfo.size(), shown);
        throw PgFailure(std::string(kConnectionLost), "cannot connect: " + why);
    }
    // Our own messages name the operation; the server's notices (e.g. "relation
    // already exists, skipping") would only clutter stderr.
    sym_PQsetNoticeProcessor(conn_.get(), [](void*, const char*) {}, nullptr);
}

Connection::~Connection() = default;

bool Connection::ok() const noexcept
{
    return conn_ && sym_PQstatus(conn_.get()) == CONNECTION_OK;
}

bool Connection::alive() noexcept
{
    if (!ok())
        return false;
    if (!idle())
        return true;  // mid-transaction: the transaction's next statement tells
    // Whatever arrived while idle is read; EOF makes libpq mark the
    // connection bad. A few rounds: a notice and the EOF may come apart.
    for (int round = 0; round < 4; ++round) {
        pollfd watched{.fd = sym_PQsocket(conn_.get()), .events = POLLIN, .revents = 0};
        if (watched.fd < 0)
            return false;
        if (::poll(&watched, 1, 0) <= 0)
            return true;  // nothing to read (or poll failed: the statement will tell)
        if (sym_PQconsumeInput(conn_.get()) == 0 || !ok())
            return false;
    }
    return ok();
}

bool Connection::idle() const noexcept
{
    return conn_ && sym_PQtransactionStatus(conn_.get()) == PQTRANS_IDLE;
}

void Connection::fail(pg_result* result, const char* what)
{
    std::string sqlstate;
    std::string message;
    if (result) {
        const char* state = sym_PQresultErrorField(result, PG_DIAG_SQLSTATE);
        sqlstate = state ? state : "";
        message = trimmed(sym_PQresultErrorMessage(result));
        sym_PQclear(result);
    }
    if (message.empty())
        message = trimmed(sym_PQerrorMessage(conn_.get()));
    if (sqlstate.empty() || sym_PQstatus(conn_.get()) != CONNECTION_OK)
        sqlstate = std::string(kConnectionLost);
    throw PgFailure(std::move(sqlstate), std::string(what) + ": " + message);
}

Rows Connection::checked(pg_result* result, const char* what)
{
    const ExecStatusType status = result ? sym_PQresultStatus(result) : PGRES_FATAL_ERROR;
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK)
        fail(result, what);
    return Rows(result);
}

Rows Connection::exec(const char* sql)
{
    return checked(sym_PQexec(conn_.get(), sql), "statement failed");
}

Rows Connection::query(const char* sql, const Params& params)
{
    if (statements_ == Statements::unnamed)
        return checked(sym_PQexecParams(conn_.get(), sql, params.size(), nullptr, params.values(), params.lengths(),
                                        params.formats(), 0),
                       "query failed");
    auto it = prepared_.find(sql);
    if (it == prepared_.end()) {
        std::string name = "nps_" + std::to_string(prepared_.size() + 1);
        checked(sym_PQprepare(conn_.get(), name.c_str(), sql, 0, nullptr), "prepare failed");
        it = prepared_.emplace(sql, std::move(name)).first;
    }
    return checked(sym_PQexecPrepared(conn_.get(), it->second.c_str(), params.size(), params.values(), params.lengths(),
                                  params.formats(), 0),
                   "query failed");
}

// --- Transaction ----------------------------------------------------------------

Transaction::Transaction(Connection& conn, const char* begin_sql) : conn_(conn), begun_(conn.exec(begin_sql))
{
    active_ = true;
}

void Transaction::commit()
{
    conn_.exec("COMMIT");
    active_ = false;
}

Transaction::~Transaction()
{
    if (!active_ || !conn_.ok())
        return;
    try {
        conn_.exec("ROLLBACK");
    } catch (...) {  // the connection reports the failure on its next use
    }
}

// --- names ------------------------------------------------------------------------

std::string with_connect_timeout(std::string url)
{
    constexpr int kConnectTimeoutSeconds = 10;
    if (url.find("connect_timeout=") != std::string::npos)
        return url;
    url += url.find('?') == std::string::npos ? '?' : '&';
    return url + "connect_timeout=" + std::to_string(kConnectTimeoutSeconds);
}

}  // namespace nps::store::pg
