// SPDX-License-Identifier: Apache-2.0
// The PostgreSQL store when its connection goes away (docs/scale-out.md,
// "Failure behaviour"): a connection the server closed while it sat idle is
// found closed before the next call and replaced; a call that finds the
// connection gone otherwise fails and marks the store degraded, the next
// call reconnects, and the first write that commits clears the mark. A failed reconnection makes the following
// calls fail at once, without a connection attempt, until a short delay has
// passed. Only meaningful on PostgreSQL (doctest suite "postgresql").
#include <unistd.h>

#include <chrono>
#include <thread>

#include "nps/lazy/pq.hpp"
#include "nps/store/write_health.hpp"
#include "store_fixture.hpp"

using namespace store_test;
using nps::store::Store;

namespace {

// A database of its own on the test server (so connections to it can be
// refused without disturbing anyone else), dropped at the end.
class ScratchDatabase {
public:
    explicit ScratchDatabase(const std::string& server_url)
        : server_url_(server_url), name_("nps_reconnect_" + std::to_string(::getpid()))
    {
        run("DROP DATABASE IF EXISTS " + name_);
        run("CREATE DATABASE " + name_);
    }
    ~ScratchDatabase()
    {
        try {
            run("DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
        } catch (...) {
        }
    }
    ScratchDatabase(const ScratchDatabase&) = delete;
    ScratchDatabase& operator=(const ScratchDatabase&) = delete;

    // The server URL naming this database (the test server's URLs name
    // "postgres": postgresql:///postgres?host=…).
    std::string url() const
    {
        std::string url = server_url_;
        const auto at = url.find("///postgres");
        if (at == std::string::npos)
            throw std::runtime_error("NPS_TEST_PG_URL does not name the database 'postgres': " + url);
        return url.replace(at, 11, "///" + name_);
    }
    void allow_connections(bool allow)
    {
        run("ALTER DATABASE " + name_ + " ALLOW_CONNECTIONS " + (allow ? "true" : "false"));
    }
    // Ends every server process connected to this database, and waits
    // until they are gone (their sockets closed).
    void terminate_connections()
    {
        run("SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity WHERE datname = '" + name_ + "'");
    }

private:
    void run(const std::string& sql) const
    {
        PGconn* conn = sym_PQconnectdb(server_url_.c_str());
        const bool connected = conn && sym_PQstatus(conn) == CONNECTION_OK;
        PGresult* r = connected ? sym_PQexec(conn, sql.c_str()) : nullptr;
        const bool ok = r && (sym_PQresultStatus(r) == PGRES_COMMAND_OK || sym_PQresultStatus(r) == PGRES_TUPLES_OK);
        const std::string why = ok ? "" : (conn ? sym_PQerrorMessage(conn) : "libpq unavailable");
        sym_PQclear(r);
        sym_PQfinish(conn);
        if (!ok)
            throw std::runtime_error("'" + sql + "' failed: " + why);
    }

    std::string server_url_;
    std::string name_;
};

}  // namespace

TEST_CASE("a lost connection is reconnected on the next call, with a delay after a failed attempt" *
          doctest::test_suite("postgresql"))
{
    StoreLocation location;
    REQUIRE_MESSAGE(location.on_postgres(), "this case runs on the PostgreSQL store only");
    ScratchDatabase database(nps::test::pg_test_url());
    nps::FakeClock clock;
    auto opened = Store::open({.url = database.url(), .clock_source = nps::store::ClockSource::caller}, clock);
    REQUIRE_MESSAGE(opened, (opened ? std::string() : opened.error().describe()));
    auto& store = *opened.value();
    REQUIRE(store.deposit(deposit_request("before")));
    REQUIRE_FALSE(nps::store::write_health().degraded);

    SUBCASE("the server ends an idle connection: the next call reconnects first, and succeeds")
    {
        // As after a database restart: the connection sat idle through it.
        database.terminate_connections();
        auto after = store.deposit(deposit_request("after"));
        REQUIRE_MESSAGE(after, (after ? std::string() : after.error().describe()));
        CHECK_FALSE(nps::store::write_health().degraded);
        CHECK(store.task("before"));  // nothing committed was lost
        database.terminate_connections();
        auto read = store.task("after");
        REQUIRE_MESSAGE(read, (read ? std::string() : read.error().describe()));
    }

    SUBCASE("while the server refuses connections, calls fail at once until the retry delay has passed")
    {
        database.allow_connections(false);
        database.terminate_connections();
        auto refused = store.deposit(deposit_request("during"));  // finds the connection gone, tries: refused
        REQUIRE_FALSE(refused);
        CHECK(refused.error().describe().find("next connection attempt") == std::string::npos);
        auto waiting = store.depth(kNid);  // within the delay: no attempt, the last reason
        REQUIRE_FALSE(waiting);
        CHECK_MESSAGE(waiting.error().describe().find("next connection attempt in") != std::string::npos,
                      waiting.error().describe());
        CHECK(nps::store::write_health().degraded);

        database.allow_connections(true);
        bool back = false;
        for (int i = 0; i < 100 && !back; ++i) {  // the first delay is 0.25 s
            back = static_cast<bool>(store.deposit(deposit_request("after")));
            if (!back)
                std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        CHECK(back);
        CHECK_FALSE(nps::store::write_health().degraded);
        auto depth = store.depth(kNid);
        REQUIRE(depth);
        CHECK(*depth == 2);  // "before" and "after"; "during" was never acknowledged
    }
}
