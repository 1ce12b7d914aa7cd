// SPDX-License-Identifier: Apache-2.0
// bench-claim-backends: the two task stores side by side in one run
// (docs/scale-out.md, bench/RESULTS.md "Claim throughput: PostgreSQL beside
// SQLite"). For each store, each batch size k (1 and 64) and each number of
// concurrent clients (1, 4, 16; every client a thread with a Store of its
// own, as runners on several hosts have), it deposits N tasks, then lets the
// clients drain the inbox with claim_batch(k) + complete_batch, and prints
// tasks/s and the duplicates: claims of a task someone else had already
// claimed (must be 0: there are no crashes, so no lease ever expires).
//
// usage: bench-claim-backends --store postgresql://… [--tasks N] [--dir DIR] [--k K]
// (--k: that batch size only, both backends still side by side)
// The PostgreSQL store is a fresh schema of that server (dropped after);
// SQLite is <dir>/runner.db (FULL), a new file per cell.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "nps/base/clock.hpp"
#include "nps/base/digest.hpp"
#include "nps/lazy/pq.hpp"
#include "nps/store/store.hpp"

namespace {

using namespace nps::store;

constexpr const char* kInbox = "urn:nps:agent:bench.example:claims";

[[noreturn]] void die(const std::string& what)
{
    std::fprintf(stderr, "bench-claim-backends: %s\n", what.c_str());
    std::exit(1);
}

void psql(const std::string& server, const std::string& sql)
{
    PGconn* conn = sym_PQconnectdb(server.c_str());
    if (!conn || sym_PQstatus(conn) != CONNECTION_OK)
        die("cannot connect to " + server + ": " + (conn ? sym_PQerrorMessage(conn) : "no libpq"));
    sym_PQsetNoticeProcessor(conn, [](void*, const char*) {}, nullptr);
    PGresult* r = sym_PQexec(conn, sql.c_str());
    const bool ok = r && sym_PQresultStatus(r) == PGRES_COMMAND_OK;
    std::string why = ok ? "" : sym_PQerrorMessage(conn);
    sym_PQclear(r);
    sym_PQfinish(conn);
    if (!ok)
        die(sql + ": " + why);
}

DepositRequest make_deposit(const std::string& task_id)
{
    DepositRequest d;
    d.nid = kInbox;
    d.task_id = task_id;
    d.payload = R"({"task_id":")" + task_id + R"(","dag":{"nodes":[{"id":"n1","action":"nwp://a.example/x",)"
                R"("agent":"urn:nps:agent:a.example:x"}]}})";
    d.content_type = "application/json";
    d.frame_hash = nps::sha256_hex(d.payload);
    d.dag_hash = nps::sha256_hex(R"({"nodes":[{"id":"n1"}]})");
    d.dedup_key = nps::sha256_hex(task_id + '\0' + d.dag_hash);
    d.ttl_seconds = 3600;
    return d;
}

std::unique_ptr<Store> open_store(const OpenOptions& options)
{
    auto s = Store::open(options, nps::SystemClock::instance());
    if (!s)
        die(s.error().describe());
    return std::move(s).value();
}

struct Cell {
    double tasks_per_s = 0;
    long duplicates = 0;
    long done = 0;
};

Cell run_cell(const OpenOptions& options, int tasks, unsigned k, int clients)
{
    {
        auto setup = open_store(options);
        for (int i = 0; i < tasks; ++i)
            if (auto r = setup->deposit(make_deposit("t" + std::to_string(i))); !r)
                die(r.error().describe());
    }
    std::vector<std::unique_ptr<Store>> stores;
    for (int c = 0; c < clients; ++c)
        stores.push_back(open_store(options));
    std::mutex mutex;
    std::set<std::string> seen;
    std::atomic<long> duplicates{0}, done{0};
    const auto started = std::chrono::steady_clock::now();
    std::vector<std::thread> threads;
    for (int c = 0; c < clients; ++c)
        threads.emplace_back([&, c] {
            Store& store = *stores[static_cast<std::size_t>(c)];
            const std::string runner = "urn:nps:node:bench.example:runner-" + std::to_string(c);
            for (;;) {
                auto leases = store.claim_batch(kInbox, runner, 60, k);
                if (!leases)
                    die(leases.error().describe());
                if (leases->empty())
                    return;
                std::vector<std::string> ids;
                for (const auto& lease : *leases)
                    ids.push_back(lease.task_id);
                {
                    std::lock_guard lock(mutex);
                    for (const auto& id : ids)
                        if (!seen.insert(id).second)
                            ++duplicates;
                }
                if (auto r = store.complete_batch(ids, runner, {.state = nps::proto::TaskState::completed}); !r)
                    die(r.error().describe());
                done += static_cast<long>(ids.size());
            }
        });
    for (auto& t : threads)
        t.join();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return {.tasks_per_s = static_cast<double>(done.load()) / seconds, .duplicates = duplicates.load(),
            .done = done.load()};
}

}  // namespace

int main(int argc, char** argv)
{
    std::string server, dir = "/tmp";
    int tasks = 4000;
    std::vector<unsigned> batch_sizes = {1u, 64u};
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string flag = argv[i];
        if (flag == "--store")
            server = argv[i + 1];
        else if (flag == "--tasks")
            tasks = std::atoi(argv[i + 1]);
        else if (flag == "--dir")
            dir = argv[i + 1];
        else if (flag == "--k" && std::atoi(argv[i + 1]) > 0)
            batch_sizes = {static_cast<unsigned>(std::atoi(argv[i + 1]))};
        else
            die("unknown flag " + flag + " (usage: --store postgresql://… [--tasks N] [--dir DIR] [--k K])");
    }
    if (server.empty() || !is_postgres_url(server))
        die("give --store postgresql://… (a server on which a scratch schema may be created)");
    double load[3] = {0, 0, 0};
    if (getloadavg(load, 3) < 1)
        load[0] = -1;
    std::printf("bench-claim-backends: %d tasks per cell, claim_batch(k) + complete_batch, load %.2f\n", tasks,
                load[0]);
    std::printf("%-4s %-8s %12s %12s %8s %14s\n", "k", "clients", "sqlite/s", "postgres/s", "pg/sq", "duplicates");
    int cell = 0;
    bool failed = false;
    for (unsigned k : batch_sizes)
        for (int clients : {1, 4, 16}) {
            const std::string schema = "nps_bench_" + std::to_string(::getpid()) + "_" + std::to_string(++cell);
            psql(server, "CREATE SCHEMA " + schema);
            const std::string pg_url = server + (server.find('?') == std::string::npos ? "?" : "&") +
                                       "options=-csearch_path%3D" + schema;
            const std::string db = dir + "/bench-claim-backends-" + std::to_string(::getpid()) + ".db";
            for (const char* suffix : {"", "-wal", "-shm"})
                std::filesystem::remove(db + suffix);
            const Cell sq = run_cell({.path = db, .busy_timeout_ms = 60'000}, tasks, k, clients);
            const Cell pg = run_cell({.url = pg_url}, tasks, k, clients);
            psql(server, "DROP SCHEMA " + schema + " CASCADE");
            for (const char* suffix : {"", "-wal", "-shm"})
                std::filesystem::remove(db + suffix);
            std::printf("%-4u %-8d %12.0f %12.0f %8.2f %7ld / %-6ld\n", k, clients, sq.tasks_per_s, pg.tasks_per_s,
                        pg.tasks_per_s / sq.tasks_per_s, sq.duplicates, pg.duplicates);
            std::fflush(stdout);
            failed = failed || sq.duplicates || pg.duplicates || sq.done != tasks || pg.done != tasks;
        }
    if (failed)
        std::printf("FAIL: a task was claimed twice, or not every task was completed\n");
    return failed ? 1 : 0;
}
