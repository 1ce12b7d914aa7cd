// SPDX-License-Identifier: Apache-2.0
// bench-claim: throughput of the store's inbox and claim path on a real file
// (DESIGN §5: claim+complete k=1 ≥ 8k/s, batched ≥ 60k/s, ≥ 0.8× a raw
// SQLite loop of the same statements in the same run).
//
// For synchronous=FULL and NORMAL it measures
//   - enqueue: Store::deposit, one task per transaction;
//   - k=1: Store::claim + Store::complete, one transaction each;
//   - batched: Store::claim_batch(64) + Store::complete_batch;
// and, in the same run, a raw sqlite3 C-API loop on its own file with the
// same schema executing the very same claim UPDATE … RETURNING and complete
// UPDATE texts (taken from the store), in the same transaction shapes but
// without the task mirror, payload read, events or any C++ layer. Store and
// raw run interleaved in chunks so disk-speed drift hits both alike.
//
// usage: bench-claim [--tasks N] [--full-k1-tasks M] [--dir DIR] [--sync full|normal|both]
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "../../src/store/sqlite_store.hpp"
#include "nps/base/clock.hpp"
#include "nps/base/digest.hpp"
#include "nps/store/store.hpp"

namespace {

using namespace nps::store;
using Seconds = std::chrono::duration<double>;

constexpr const char* kInbox = "urn:nps:agent:bench:inbox";
constexpr const char* kRunner = "urn:nps:node:bench:runner";
constexpr std::uint32_t kBatch = 64;
constexpr std::uint32_t kLeaseSeconds = 60;

[[noreturn]] void die(const std::string& what)
{
    std::cerr << "bench-claim: " << what << "\n";
    std::exit(1);
}

double now_s()
{
    return std::chrono::duration_cast<Seconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// CPU time (user + system) of this process: less sensitive than wall time to
// other load on the machine, and it shows what the store itself costs.
double cpu_s()
{
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    const auto s = [](timeval tv) { return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6; };
    return s(ru.ru_utime) + s(ru.ru_stime);
}

DepositRequest make_deposit(const std::string& task_id)
{
    DepositRequest d;
    d.nid = kInbox;
    d.task_id = task_id;
    d.payload = R"({"frame":"0x40","task_id":")" + task_id +
                R"(","dag":{"nodes":[{"id":"n1","action":"nwp://agents.example/summarise","agent":)"
                R"("urn:nps:agent:example.com:summariser"}],"edges":[]},"timeout_ms":30000})";
    d.content_type = "application/json";
    d.frame_hash = nps::sha256_hex(d.payload);
    d.dag_hash = nps::sha256_hex(R"({"nodes":[{"id":"n1"}]})");
    d.dedup_key = nps::sha256_hex(task_id + '\0' + d.dag_hash);
    d.ttl_seconds = 3600;
    return d;
}

std::unique_ptr<Store> open_store(const std::string& path, Synchronous sync)
{
    auto s = Store::open({.path = path, .synchronous = sync}, nps::SystemClock::instance());
    if (!s)
        die(s.error().describe());
    return std::move(s).value();
}

// A file holding `count` queued tasks (deposited with NORMAL: setup is not measured).
void prepare(const std::string& path, int count, const std::string& prefix)
{
    std::filesystem::remove(path);
    auto store = open_store(path, Synchronous::normal);
    for (int i = 0; i < count; ++i)
        if (auto r = store->deposit(make_deposit(prefix + std::to_string(i))); !r)
            die(r.error().describe());
}

// --- the store side ------------------------------------------------------------

class StoreLoop {
public:
    StoreLoop(const std::string& path, Synchronous sync) : store_(open_store(path, sync)) {}

    // Claims and completes up to n tasks, k=1; returns how many.
    int run_k1(int n)
    {
        int done = 0;
        for (; done < n; ++done) {
            auto lease = store_->claim({.nid = kInbox, .runner_nid = kRunner, .lease_seconds = kLeaseSeconds});
            if (!lease)
                die(lease.error().describe());
            if (!lease->has_value())
                break;
            if (auto r = store_->complete((*lease)->task_id, kRunner, outcome_); !r)
                die(r.error().describe());
        }
        return done;
    }

    int run_batched(int n)
    {
        int done = 0;
        std::vector<std::string> ids;
        while (done < n) {
            auto leases = store_->claim_batch(kInbox, kRunner, kLeaseSeconds, kBatch);
            if (!leases)
                die(leases.error().describe());
            if (leases->empty())
                break;
            ids.clear();
            for (const auto& l : *leases)
                ids.push_back(l.task_id);
            if (auto r = store_->complete_batch(ids, kRunner, outcome_); !r)
                die(r.error().describe());
            done += static_cast<int>(ids.size());
        }
        return done;
    }

private:
    std::unique_ptr<Store> store_;
    TaskOutcome outcome_{.state = kTaskCompleted};
};

// --- the raw side: sqlite3 C API, same statement texts ----------------------------

class RawLoop {
public:
    RawLoop(const std::string& path, Synchronous sync)
    {
        if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK)
            die("raw open failed");
        sqlite3_busy_timeout(db_, 5000);
        exec("PRAGMA journal_mode=WAL");
        exec(sync == Synchronous::full ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL");
        exec("PRAGMA foreign_keys=ON");
        begin_ = prepare("BEGIN IMMEDIATE");
        commit_ = prepare("COMMIT");
        claim_one_ = prepare(detail::claim_head_sql());
        claim_batch_ = prepare(detail::claim_batch_sql());
        complete_ = prepare(detail::complete_message_sql());
    }
    RawLoop(const RawLoop&) = delete;
    RawLoop& operator=(const RawLoop&) = delete;
    ~RawLoop()
    {
        for (sqlite3_stmt* s : {begin_, commit_, claim_one_, claim_batch_, complete_})
            sqlite3_finalize(s);
        sqlite3_close(db_);
    }

    int run_k1(int n)
    {
        int done = 0;
        for (; done < n; ++done) {
            step_done(begin_);
            const auto ids = claim(claim_one_, 1);
            step_done(commit_);
            if (ids.empty())
                break;
            step_done(begin_);
            complete(ids.front());
            step_done(commit_);
        }
        return done;
    }

    int run_batched(int n)
    {
        int done = 0;
        while (done < n) {
            step_done(begin_);
            const auto ids = claim(claim_batch_, kBatch);
            step_done(commit_);
            if (ids.empty())
                break;
            step_done(begin_);
            for (const auto& id : ids)
                complete(id);
            step_done(commit_);
            done += static_cast<int>(ids.size());
        }
        return done;
    }

private:
    void exec(const char* sql)
    {
        if (sqlite3_exec(db_, sql, nullptr, nullptr, nullptr) != SQLITE_OK)
            die(std::string("raw: ") + sqlite3_errmsg(db_));
    }
    sqlite3_stmt* prepare(const char* sql)
    {
        sqlite3_stmt* st = nullptr;
        if (sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, nullptr) != SQLITE_OK)
            die(std::string("raw prepare: ") + sqlite3_errmsg(db_));
        return st;
    }
    void step_done(sqlite3_stmt* st)
    {
        int rc;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        }
        if (rc != SQLITE_DONE)
            die(std::string("raw step: ") + sqlite3_errmsg(db_));
        sqlite3_reset(st);
    }
    std::vector<std::string> claim(sqlite3_stmt* st, std::uint32_t max)
    {
        const std::int64_t now = nps::SystemClock::instance().now_ms();
        sqlite3_bind_text(st, 1, kInbox, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, kRunner, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, now + kLeaseSeconds * 1000);
        sqlite3_bind_int64(st, 4, now);
        if (max > 1)
            sqlite3_bind_int(st, 5, static_cast<int>(max));
        std::vector<std::string> ids;
        int rc;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW)
            ids.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(st, 2)));
        if (rc != SQLITE_DONE)
            die(std::string("raw claim: ") + sqlite3_errmsg(db_));
        sqlite3_reset(st);
        return ids;
    }
    void complete(const std::string& task_id)
    {
        sqlite3_bind_text(complete_, 1, task_id.c_str(), static_cast<int>(task_id.size()), SQLITE_STATIC);
        sqlite3_bind_text(complete_, 2, kRunner, -1, SQLITE_STATIC);
        sqlite3_bind_int64(complete_, 3, nps::SystemClock::instance().now_ms());
        if (sqlite3_step(complete_) != SQLITE_ROW)
            die("raw complete was not fenced through");
        step_done(complete_);
    }

    sqlite3* db_ = nullptr;
    sqlite3_stmt *begin_ = nullptr, *commit_ = nullptr, *claim_one_ = nullptr, *claim_batch_ = nullptr,
                 *complete_ = nullptr;
};

// --- driver --------------------------------------------------------------------

struct Pair {
    double store_rate = 0, raw_rate = 0;        // tasks per wall-clock second
    double store_cpu_us = 0, raw_cpu_us = 0;    // CPU microseconds per task
};

// Runs store and raw alternately, `chunk` tasks at a time, until both drained.
Pair interleaved(int total, int chunk, const std::function<int(int)>& store_step,
                 const std::function<int(int)>& raw_step)
{
    double store_time = 0, raw_time = 0, store_cpu = 0, raw_cpu = 0;
    int store_done = 0, raw_done = 0;
    bool store_open = true, raw_open = true;
    while (store_open || raw_open) {
        if (store_open) {
            const double t0 = now_s(), c0 = cpu_s();
            const int n = store_step(chunk);
            store_time += now_s() - t0;
            store_cpu += cpu_s() - c0;
            store_done += n;
            store_open = n == chunk && store_done < total;
        }
        if (raw_open) {
            const double t0 = now_s(), c0 = cpu_s();
            const int n = raw_step(chunk);
            raw_time += now_s() - t0;
            raw_cpu += cpu_s() - c0;
            raw_done += n;
            raw_open = n == chunk && raw_done < total;
        }
    }
    if (store_done != total || raw_done != total)
        die("drained " + std::to_string(store_done) + " / " + std::to_string(raw_done) + " of " +
            std::to_string(total));
    return {store_done / store_time, raw_done / raw_time, store_cpu * 1e6 / store_done, raw_cpu * 1e6 / raw_done};
}

void report(const char* what, const Pair& p, double target)
{
    std::printf("  %-34s store %7.0f /s  raw %7.0f /s  store/raw %.2f   cpu/task store %6.1f us  raw %6.1f us"
                "   (target >= %.0f /s and >= 0.80x raw)\n",
                what, p.store_rate, p.raw_rate, p.store_rate / p.raw_rate, p.store_cpu_us, p.raw_cpu_us, target);
}

void run(Synchronous sync, const std::string& dir, int tasks, int k1_tasks)
{
    const char* name = sync == Synchronous::full ? "FULL" : "NORMAL";
    std::printf("synchronous=%s\n", name);

    // enqueue
    {
        const std::string path = dir + "/enqueue.db";
        std::filesystem::remove(path);
        auto store = open_store(path, sync);
        const double t0 = now_s();
        for (int i = 0; i < k1_tasks; ++i)
            if (auto r = store->deposit(make_deposit("e" + std::to_string(i))); !r)
                die(r.error().describe());
        const double dt = now_s() - t0;
        std::printf("  %-34s store %7.0f /s   (%d deposits, one transaction each)\n", "enqueue", k1_tasks / dt,
                    k1_tasks);
    }
    // k = 1
    {
        prepare(dir + "/store-k1.db", k1_tasks, "s");
        prepare(dir + "/raw-k1.db", k1_tasks, "r");
        StoreLoop store(dir + "/store-k1.db", sync);
        RawLoop raw(dir + "/raw-k1.db", sync);
        const Pair p = interleaved(
            k1_tasks, 500, [&](int n) { return store.run_k1(n); }, [&](int n) { return raw.run_k1(n); });
        report(("claim+complete k=1 (" + std::to_string(k1_tasks) + ")").c_str(), p, 8000);
    }
    // batched
    {
        prepare(dir + "/store-batch.db", tasks, "s");
        prepare(dir + "/raw-batch.db", tasks, "r");
        StoreLoop store(dir + "/store-batch.db", sync);
        RawLoop raw(dir + "/raw-batch.db", sync);
        const Pair p = interleaved(
            tasks, 64 * 16, [&](int n) { return store.run_batched(n); }, [&](int n) { return raw.run_batched(n); });
        report(("claim+complete batch 64 (" + std::to_string(tasks) + ")").c_str(), p, 60000);
    }
}

}  // namespace

int main(int argc, char** argv)
{
    int tasks = 20000;
    int full_k1_tasks = 20000;
    std::string dir;
    std::string sync = "both";
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const auto next = [&]() -> std::string {
            if (i + 1 >= argc)
                die(a + " needs a value");
            return argv[++i];
        };
        if (a == "--tasks")
            tasks = std::stoi(next());
        else if (a == "--full-k1-tasks")
            full_k1_tasks = std::stoi(next());
        else if (a == "--dir")
            dir = next();
        else if (a == "--sync")
            sync = next();
        else {
            std::cout << "usage: bench-claim [--tasks N] [--full-k1-tasks M] [--dir DIR] [--sync full|normal|both]\n";
            return a == "--help" ? 0 : 2;
        }
    }
    bool own_dir = false;
    if (dir.empty()) {
        std::string tmpl = (std::getenv("TMPDIR") ? std::string(std::getenv("TMPDIR")) : std::string("/tmp")) +
                           "/bench-claim-XXXXXX";
        if (mkdtemp(tmpl.data()) == nullptr)
            die("mkdtemp failed");
        dir = tmpl;
        own_dir = true;
    }
    std::printf("bench-claim: files in %s, SQLite %s, batch %u, lease %u s\n", dir.c_str(), sqlite3_libversion(),
                kBatch, kLeaseSeconds);
    if (sync == "full" || sync == "both")
        run(Synchronous::full, dir, tasks, full_k1_tasks);
    if (sync == "normal" || sync == "both")
        run(Synchronous::normal, dir, tasks, tasks);
    if (own_dir)
        std::filesystem::remove_all(dir);
    return 0;
}
