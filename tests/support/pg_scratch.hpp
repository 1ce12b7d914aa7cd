// SPDX-License-Identifier: Apache-2.0
// Test support: a fresh schema on the throw-away PostgreSQL server that
// scripts/test starts (scripts/pg-scratch), named by NPS_TEST_PG_URL, for
// the PostgreSQL passes of the suites (tests/support/on_postgres.sh). Each
// PgScratchSchema is an empty schema of its own, dropped with everything in
// it at the end; url() is the server's URL with that schema as search_path,
// so a store opened with it sees only its own tables.
#pragma once

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "nps/lazy/pq.hpp"

namespace nps::test {

// The server's URL when this is a PostgreSQL pass of a suite
// (tests/support/on_postgres.sh sets NPS_TEST_STORE_BACKEND), else "".
inline std::string pg_test_url()
{
    const char* backend = std::getenv("NPS_TEST_STORE_BACKEND");
    const char* url = std::getenv("NPS_TEST_PG_URL");
    if (!backend || std::string(backend) != "postgresql" || !url)
        return "";
    return url;
}

class PgScratchSchema {
public:
    explicit PgScratchSchema(const std::string& server_url)
        : server_url_(server_url), name_(next_name())
    {
        exec("CREATE SCHEMA " + name_);
        url_ = server_url_ + (server_url_.find('?') == std::string::npos ? "?" : "&") +
               "options=-csearch_path%3D" + name_;
    }
    ~PgScratchSchema()
    {
        try {
            exec("DROP SCHEMA " + name_ + " CASCADE");
        } catch (...) {  // the server may be gone at the end of a failed run
        }
    }
    PgScratchSchema(const PgScratchSchema&) = delete;
    PgScratchSchema& operator=(const PgScratchSchema&) = delete;

    const std::string& url() const { return url_; }
    const std::string& name() const { return name_; }

    // Runs SQL (no parameters) on the server, in this schema; throws on failure.
    void exec(const std::string& sql) const
    {
        PGconn* conn = sym_PQconnectdb(server_url_.c_str());
        if (!conn || sym_PQstatus(conn) != CONNECTION_OK) {
            std::string why = conn ? sym_PQerrorMessage(conn) : "libpq unavailable";
            sym_PQfinish(conn);
            throw std::runtime_error("cannot connect to " + server_url_ + ": " + why);
        }
        PGresult* r = sym_PQexec(conn, ("SET search_path = " + name_ + "; " + sql).c_str());
        const bool ok = r && (sym_PQresultStatus(r) == PGRES_COMMAND_OK || sym_PQresultStatus(r) == PGRES_TUPLES_OK);
        std::string why = ok ? "" : sym_PQerrorMessage(conn);
        sym_PQclear(r);
        sym_PQfinish(conn);
        if (!ok)
            throw std::runtime_error("'" + sql + "' failed: " + why);
    }

private:
    static std::string next_name()
    {
        static std::atomic<int> counter{0};
        return "nps_test_" + std::to_string(::getpid()) + "_" + std::to_string(++counter);
    }

    std::string server_url_;
    std::string name_;
    std::string url_;
};

}  // namespace nps::test
