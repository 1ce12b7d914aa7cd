// SPDX-License-Identifier: Apache-2.0
// bench-claim: throughput of the store's inbox and claim path on a real file
// (DESIGN §5: claim+complete k=1 ≥ 8k/s, batched ≥ 60k/s, ≥ 0.8× a raw
// SQLite loop of the same statements in the same run).
//
// For synchronous=FULL and NORMAL it measures
//   - enqueue: Store::deposit, one task per transaction;
//   - k=1: Store::claim + Store::complete, one transaction each;
//   - batched: Store::claim_batch(64) + Store::complete_batch;
// and, in the same run, two raw sqlite3 C-API loops, each on its own copy of
// the same template file, with the store's pragmas:
//   raw  — the baseline of the target: the very same claim UPDATE … RETURNING
//          and complete UPDATE texts (taken from the store), in the same
//          transaction shapes, on the same schema — its triggers, which write
//          the event log, included — and nothing else. The store's hot path is
//          exactly these two statements, so store/raw is the cost of the
//          store's C++ layer.
//   bare — the same statements on a copy whose triggers were dropped (no event
//          log): not a target, shown for transparency; raw/bare is the cost
//          of the trigger-maintained event log.
// All three run interleaved in chunks so disk-speed drift hits them alike.
//
// usage: bench-claim [--tasks N] [--budget SECONDS] [--dir DIR] [--sync full|normal|both]
// Each measured phase stops after --budget seconds (default 8) if not drained.
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
namespace proto = nps::proto;
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

// A file holding `count` queued tasks, deposited through the store with NORMAL
// (setup is not measured). Every contender gets a copy of it.
void make_template(const std::string& path, int count)
{
    std::filesystem::remove(path);
    auto store = open_store(path, Synchronous::normal);
    for (int i = 0; i < count; ++i)
        if (auto r = store->deposit(make_deposit("t" + std::to_string(i))); !r)
            die(r.error().describe());
}  // closing the last connection checkpoints and removes the WAL: the file is complete

std::string copy_of(const std::string& template_path, const std::string& path)
{
    for (const char* suffix : {"", "-wal", "-shm"})
        std::filesystem::remove(path + suffix);
    std::filesystem::copy_file(template_path, path);
    return path;
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
    TaskOutcome outcome_{.state = nps::proto::TaskState::completed};
};

// --- the raw side: sqlite3 C API, same statement texts ----------------------------

class RawLoop {
public:
    // bare: drop the schema's triggers first (the file is this loop's own copy).
    RawLoop(const std::string& path, Synchronous sync, bool bare)
    {
        if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK)
            die("raw open failed");
        sqlite3_busy_timeout(db_, 5000);
        exec("PRAGMA journal_mode=WAL");
        exec(sync == Synchronous::full ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL");
        exec("PRAGMA foreign_keys=ON");
        exec("PRAGMA temp_store=MEMORY");  // the store's pragmas, so only the statements differ
        exec("PRAGMA journal_size_limit=67108864");
        if (bare)
            drop_triggers();
        begin_ = prepare("BEGIN IMMEDIATE");
        commit_ = prepare("COMMIT");
        claim_one_ = prepare(detail::claim_head_sql());
        claim_batch_ = prepare(detail::claim_batch_sql());
        complete_ = prepare(detail::complete_sql());
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
            complete(ids);
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
            complete(ids);
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
    void drop_triggers()
    {
        std::vector<std::string> names;
        sqlite3_stmt* st = prepare("SELECT name FROM sqlite_schema WHERE type = 'trigger'");
        while (sqlite3_step(st) == SQLITE_ROW)
            names.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)));
        sqlite3_finalize(st);
        if (names.empty())
            die("raw: the schema has no triggers to drop");
        for (const auto& name : names)
            exec(("DROP TRIGGER \"" + name + "\"").c_str());
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
    // What any consumer reads back from a claim: the task ids (the payload is
    // in the row too; the store copies it into the Lease).
    std::vector<std::string> claim(sqlite3_stmt* st, std::uint32_t max)
    {
        const std::int64_t now = nps::SystemClock::instance().now_ms();
        const std::int64_t expiry = now + kLeaseSeconds * 1000;
        sqlite3_bind_text(st, 1, kInbox, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, kRunner, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, expiry);
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
    // The store's complete statement takes a JSON array of task ids (the
    // bench's ids need no escaping).
    void complete(const std::vector<std::string>& task_ids)
    {
        std::string list = "[";
        for (const auto& id : task_ids)
            list += (list.size() > 1 ? ",\"" : "\"") + id + "\"";
        list += "]";
        sqlite3_bind_text(complete_, 1, list.c_str(), static_cast<int>(list.size()), SQLITE_STATIC);
        sqlite3_bind_text(complete_, 2, kRunner, -1, SQLITE_STATIC);
        sqlite3_bind_int64(complete_, 3, nps::SystemClock::instance().now_ms());
        sqlite3_bind_text(complete_, 4, proto::task_state_text::completed, -1, SQLITE_STATIC);
        for (int i = 5; i <= 7; ++i)
            sqlite3_bind_null(complete_, i);
        std::size_t fenced = 0;
        int rc;
        while ((rc = sqlite3_step(complete_)) == SQLITE_ROW)
            ++fenced;
        if (rc != SQLITE_DONE || fenced != task_ids.size())
            die("raw complete was not fenced through");
        sqlite3_reset(complete_);
    }

    sqlite3* db_ = nullptr;
    sqlite3_stmt *begin_ = nullptr, *commit_ = nullptr, *claim_one_ = nullptr, *claim_batch_ = nullptr,
                 *complete_ = nullptr;
};

// --- driver --------------------------------------------------------------------

struct Rate {
    double per_s = 0;   // tasks per wall-clock second
    double cpu_us = 0;  // CPU microseconds per task
    int tasks = 0;
};

// Runs the contenders in turn, `chunk` tasks at a time, until all are drained
// or `budget_s` has passed (a slow disk under FULL must not make the run
// endless); the rates count the work done.
std::vector<Rate> interleaved(int total, int chunk, double budget_s,
                              const std::vector<std::function<int(int)>>& steps)
{
    const double started = now_s();
    const std::size_t n = steps.size();
    std::vector<double> wall(n, 0), cpu(n, 0);
    std::vector<int> done(n, 0);
    std::vector<bool> open(n, true);
    for (bool any = true; any;) {
        any = false;
        for (std::size_t i = 0; i < n; ++i) {
            if (!open[i])
                continue;
            const double t0 = now_s(), c0 = cpu_s();
            const int got = steps[i](chunk);
            wall[i] += now_s() - t0;
            cpu[i] += cpu_s() - c0;
            done[i] += got;
            open[i] = got == chunk && done[i] < total;
            any = any || open[i];
        }
        if (now_s() - started > budget_s)
            break;  // every contender has had the same number of turns
    }
    std::vector<Rate> rates;
    for (std::size_t i = 0; i < n; ++i) {
        if (done[i] == 0)
            die("contender " + std::to_string(i) + " claimed nothing");
        rates.push_back({done[i] / wall[i], cpu[i] * 1e6 / done[i], done[i]});
    }
    return rates;
}

void report(const std::string& what, const std::vector<Rate>& r, double target)
{
    const Rate &store = r[0], &raw = r[1], &bare = r[2];
    std::printf("  %s, %d tasks each\n", what.c_str(), store.tasks);
    std::printf("    store  %7.0f /s  %6.1f us cpu/task   >= %.0f /s: %-6s  store/raw %.2f (>= 0.80: %s)\n",
                store.per_s, store.cpu_us, target, store.per_s >= target ? "met" : "MISSED",
                store.per_s / raw.per_s, store.per_s >= 0.8 * raw.per_s ? "met" : "MISSED");
    std::printf("    raw    %7.0f /s  %6.1f us cpu/task   (same statements, same schema and triggers)\n", raw.per_s,
                raw.cpu_us);
    std::printf("    bare   %7.0f /s  %6.1f us cpu/task   (same statements, triggers dropped)  store/bare %.2f   "
                "raw/bare %.2f\n",
                bare.per_s, bare.cpu_us, store.per_s / bare.per_s, raw.per_s / bare.per_s);
}

struct Config {
    std::string dir;
    int tasks = 20000;
    double budget_s = 8;  // per measured phase
};

void run(Synchronous sync, const Config& cfg, const std::string& template_path)
{
    std::printf("synchronous=%s\n", sync == Synchronous::full ? "FULL" : "NORMAL");
    {
        const std::string path = cfg.dir + "/enqueue.db";
        for (const char* suffix : {"", "-wal", "-shm"})
            std::filesystem::remove(path + suffix);  // starts empty
        auto store = open_store(path, sync);
        const double t0 = now_s();
        int n = 0;
        for (; n < cfg.tasks && (n % 100 != 0 || now_s() - t0 < cfg.budget_s); ++n)
            if (auto r = store->deposit(make_deposit("e" + std::to_string(n))); !r)
                die(r.error().describe());
        const double dt = now_s() - t0;
        std::printf("  enqueue: store %7.0f /s  (%d deposits, one transaction each)\n", n / dt, n);
    }
    {
        StoreLoop store(copy_of(template_path, cfg.dir + "/store-k1.db"), sync);
        RawLoop raw(copy_of(template_path, cfg.dir + "/raw-k1.db"), sync, false);
        RawLoop bare(copy_of(template_path, cfg.dir + "/bare-k1.db"), sync, true);
        const auto r = interleaved(cfg.tasks, 100, cfg.budget_s,
                                   {[&](int n) { return store.run_k1(n); }, [&](int n) { return raw.run_k1(n); },
                                    [&](int n) { return bare.run_k1(n); }});
        report("claim+complete k=1", r, 8000);
    }
    {
        StoreLoop store(copy_of(template_path, cfg.dir + "/store-batch.db"), sync);
        RawLoop raw(copy_of(template_path, cfg.dir + "/raw-batch.db"), sync, false);
        RawLoop bare(copy_of(template_path, cfg.dir + "/bare-batch.db"), sync, true);
        const auto r = interleaved(cfg.tasks, 64 * 8, cfg.budget_s,
                                   {[&](int n) { return store.run_batched(n); },
                                    [&](int n) { return raw.run_batched(n); },
                                    [&](int n) { return bare.run_batched(n); }});
        report("claim_batch(64)+complete_batch", r, 60000);
    }
}

}  // namespace

int main(int argc, char** argv)
{
    Config cfg;
    std::string sync = "both";
    const char* usage = "usage: bench-claim [--tasks N] [--budget SECONDS] [--dir DIR] [--sync full|normal|both]\n";
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const auto next = [&]() -> std::string {
            if (i + 1 >= argc)
                die(a + " needs a value");
            return argv[++i];
        };
        if (a == "--tasks")
            cfg.tasks = std::stoi(next());
        else if (a == "--budget")
            cfg.budget_s = std::stod(next());
        else if (a == "--dir")
            cfg.dir = next();
        else if (a == "--sync")
            sync = next();
        else {
            std::cout << usage;
            return a == "--help" ? 0 : 2;
        }
    }
    bool own_dir = false;
    if (cfg.dir.empty()) {
        const char* tmp = std::getenv("TMPDIR");
        std::string tmpl = std::string(tmp ? tmp : "/tmp") + "/bench-claim-XXXXXX";
        if (mkdtemp(tmpl.data()) == nullptr)
            die("mkdtemp failed");
        cfg.dir = tmpl;
        own_dir = true;
    }
    std::printf("bench-claim: files in %s, SQLite %s, %d tasks, batch %u, lease %u s, budget %.0f s per phase\n",
                cfg.dir.c_str(), sqlite3_libversion(), cfg.tasks, kBatch, kLeaseSeconds, cfg.budget_s);
    const std::string template_path = cfg.dir + "/template.db";
    make_template(template_path, cfg.tasks);
    if (sync == "full" || sync == "both")
        run(Synchronous::full, cfg, template_path);
    if (sync == "normal" || sync == "both")
        run(Synchronous::normal, cfg, template_path);
    if (own_dir)
        std::filesystem::remove_all(cfg.dir);
    return 0;
}
