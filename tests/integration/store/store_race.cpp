// SPDX-License-Identifier: Apache-2.0
// Four runner PROCESSES share one runner.db and drain 5,000 tasks:
// claim → log (task, runner, claim time, lease expiry) → complete. Two of
// them use the minimum lease (10 s) and now and then "crash" on a task (never
// complete it), so another runner must reclaim it after the lease expires;
// one claims in batches. Afterwards:
//  - every task is COMPLETED, exactly one complete() succeeded per task, and
//    it came from the task's last claimant;
//  - for every task, each claim happened at or after the expiry of the lease
//    before it: never two live leases on one task;
//  - every crash (or fenced complete) was followed by exactly one reclaim.
// The claim time is exact: the store sets expiry = now + clamped seconds.
// In its PostgreSQL pass (store-race-pg) the four processes share a schema of
// the test server instead: "several hosts" on one database, whose clock
// gives every lease time.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "nps/base/clock.hpp"
#include "nps/base/digest.hpp"
#include "nps/store/store.hpp"
#include "pg_scratch.hpp"
#include "temp_dir.hpp"

namespace {

using namespace nps::store;

constexpr int kTasks = 5000;
constexpr int kRunners = 4;
constexpr const char* kInbox = "urn:nps:agent:race:inbox";

struct RunnerConfig {
    std::uint32_t lease_seconds;
    int crash_every;  // 0: never crash; else skip completing the 10th claim and every n-th after it
    std::uint32_t batch;
};

constexpr RunnerConfig kConfigs[kRunners] = {
    {10, 400, 1},  // short lease, crashes now and then
    {10, 600, 1},
    {120, 0, 1},
    {120, 0, 8},   // batch claims
};

std::string runner_nid(int i)
{
    return "urn:nps:node:race:runner-" + std::to_string(i);
}

// The PostgreSQL pass's schema URL; empty: runner.db.
std::string g_store_url;

OpenOptions options(const std::string& path)
{
    if (!g_store_url.empty())
        return {.url = g_store_url};
    // NORMAL keeps the test fast on slow disks; locking and the claim
    // protocol are the same as with FULL (durability is store-kill9's job).
    return {.path = path, .synchronous = Synchronous::normal, .busy_timeout_ms = 60'000};
}

[[noreturn]] void die(const std::string& what)
{
    std::cerr << "runner " << getpid() << ": " << what << "\n";
    _exit(2);
}

// One runner process. Log lines:
//   C <task_id> <expiry_ms> <lease_ms> <outcome> <claims>
//   X <task_id>                     (crash: never completed)
//   D <task_id> ok|conflict
void run_runner(int index, const std::string& db_path, const std::string& log_path)
{
    const RunnerConfig cfg = kConfigs[index];
    const std::string me = runner_nid(index);
    auto opened = Store::open(options(db_path), nps::SystemClock::instance());
    if (!opened)
        die(opened.error().describe());
    auto& store = *opened.value();
    std::ofstream log(log_path);
    const std::int64_t lease_ms = static_cast<std::int64_t>(clamp_lease_seconds(cfg.lease_seconds)) * 1000;
    int claimed = 0;

    for (;;) {
        std::vector<Lease> leases;
        if (cfg.batch > 1) {
            auto r = store.claim_batch(kInbox, me, cfg.lease_seconds, cfg.batch);
            if (!r)
                die(r.error().describe());
            leases = std::move(r).value();
        } else {
            auto r = store.claim({.nid = kInbox, .runner_nid = me, .lease_seconds = cfg.lease_seconds});
            if (!r)
                die(r.error().describe());
            if (r->has_value())
                leases.push_back(std::move(**r));
        }
        if (leases.empty()) {
            auto depth = store.depth(kInbox);
            if (!depth)
                die(depth.error().describe());
            if (*depth == 0)
                break;  // everything done (queued-but-leased messages count in depth)
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
            continue;
        }
        for (const auto& lease : leases) {
            ++claimed;
            log << "C " << lease.task_id << ' ' << lease.lease_expiry_ms << ' ' << lease_ms << ' '
                << to_string(lease.outcome) << ' ' << lease.claims << '\n';
            // The first crash comes early (claim 10), so even a runner that
            // the others starve crashes at least once.
            if (cfg.crash_every && claimed >= 10 && (claimed - 10) % cfg.crash_every == 0) {
                log << "X " << lease.task_id << '\n';
                continue;
            }
            auto done = store.complete(lease.task_id, me, {.state = kTaskCompleted});
            if (!done && done.error().code != "NOP-CLAIM-CONFLICT")
                die(done.error().describe());
            log << "D " << lease.task_id << ' ' << (done ? "ok" : "conflict") << '\n';
        }
    }
    log.flush();
    if (!log)
        die("cannot write " + log_path);
}

struct Claim {
    int runner;
    std::int64_t at;
    std::int64_t expiry;
    std::string outcome;
    std::uint32_t claims;
};

int check(const std::string& db_path, const std::vector<std::string>& logs)
{
    std::map<std::string, std::vector<Claim>> claims;
    std::map<std::string, std::vector<int>> completions;
    int crashes = 0, reclaims = 0, conflicts = 0, lines = 0;
    for (int r = 0; r < kRunners; ++r) {
        std::ifstream in(logs[static_cast<std::size_t>(r)]);
        std::string line;
        while (std::getline(in, line)) {
            ++lines;
            std::istringstream is(line);
            std::string kind, task;
            is >> kind >> task;
            if (kind == "C") {
                Claim c{r, 0, 0, {}, 0};
                std::int64_t lease_ms = 0;
                is >> c.expiry >> lease_ms >> c.outcome >> c.claims;
                c.at = c.expiry - lease_ms;
                reclaims += c.outcome == "reclaimed";
                claims[task].push_back(c);
            } else if (kind == "X") {
                ++crashes;
            } else if (kind == "D") {
                std::string result;
                is >> result;
                if (result == "ok")
                    completions[task].push_back(r);
                else
                    ++conflicts;
            }
        }
    }

    int failures = 0;
    const auto fail = [&failures](const std::string& what) {
        if (++failures <= 20)
            std::cout << "FAIL: " << what << "\n";
    };

    auto opened = Store::open(options(db_path), nps::SystemClock::instance());
    if (!opened) {
        std::cout << "FAIL: reopen: " << opened.error().describe() << "\n";
        return 1;
    }
    auto& store = *opened.value();
    std::size_t total_claims = 0;
    for (int i = 0; i < kTasks; ++i) {
        const std::string id = "race-" + std::to_string(i);
        auto t = store.task(id);
        if (!t) {
            fail(id + ": " + t.error().describe());
            continue;
        }
        if (t->state != kTaskCompleted)
            fail(id + ": state " + t->state);
        auto& cs = claims[id];
        total_claims += cs.size();
        if (t->claims != cs.size())
            fail(id + ": store counts " + std::to_string(t->claims) + " claims, logs " + std::to_string(cs.size()));
        const auto& done = completions[id];
        if (done.size() != 1) {
            fail(id + ": completed " + std::to_string(done.size()) + " times");
            continue;
        }
        std::sort(cs.begin(), cs.end(), [](const Claim& a, const Claim& b) { return a.at < b.at; });
        for (std::size_t k = 0; k < cs.size(); ++k) {
            if (cs[k].claims != k + 1)
                fail(id + ": claim #" + std::to_string(k + 1) + " reported claims=" + std::to_string(cs[k].claims));
            const std::string expect = k == 0 ? "granted" : "reclaimed";
            if (cs[k].outcome != expect)
                fail(id + ": claim #" + std::to_string(k + 1) + " was " + cs[k].outcome);
            if (k > 0 && cs[k].at < cs[k - 1].expiry)
                fail(id + ": runner " + std::to_string(cs[k].runner) + " claimed at " + std::to_string(cs[k].at) +
                     " while runner " + std::to_string(cs[k - 1].runner) + "'s lease was live until " +
                     std::to_string(cs[k - 1].expiry));
        }
        if (!cs.empty() && cs.back().runner != done.front())
            fail(id + ": completed by runner " + std::to_string(done.front()) + ", not its last claimant");
    }
    if (claims.size() != static_cast<std::size_t>(kTasks))
        fail("logs mention " + std::to_string(claims.size()) + " tasks");
    if (crashes == 0)
        fail("no runner crashed: the reclaim path was not exercised");
    // Each crash, and each complete fenced out by an expired lease, leaves
    // the task to exactly one reclaim.
    if (reclaims != crashes + conflicts)
        fail(std::to_string(crashes) + " crashes and " + std::to_string(conflicts) + " fenced completes but " +
             std::to_string(reclaims) + " reclaims");
    auto depth = store.depth(kInbox);
    if (!depth || *depth != 0)
        fail("inbox not empty at the end");

    std::cout << "tasks " << kTasks << ", claims " << total_claims << ", crashes " << crashes << ", reclaims "
              << reclaims << ", fenced completes " << conflicts << ", log lines " << lines << "\n";
    if (failures)
        std::cout << failures << " failures\n";
    return failures == 0 ? 0 : 1;
}

}  // namespace

int main()
{
    nps::test::TempDir dir("nps-store-race");
    const std::string db_path = dir.file("runner.db");
    std::unique_ptr<nps::test::PgScratchSchema> pg_schema;
    if (const std::string url = nps::test::pg_test_url(); !url.empty()) {
        pg_schema = std::make_unique<nps::test::PgScratchSchema>(url);
        g_store_url = pg_schema->url();
    }
    const auto started = std::chrono::steady_clock::now();
    {
        auto opened = Store::open(options(db_path), nps::SystemClock::instance());
        if (!opened) {
            std::cout << "FAIL: open: " << opened.error().describe() << "\n";
            return 1;
        }
        auto& store = *opened.value();
        for (int i = 0; i < kTasks; ++i) {
            DepositRequest d;
            d.nid = kInbox;
            d.task_id = "race-" + std::to_string(i);
            d.payload = R"({"task_id":")" + d.task_id + R"("})";
            d.content_type = "application/json";
            d.frame_hash = nps::sha256_hex(d.payload);
            d.dag_hash = "dag";
            d.dedup_key = nps::sha256_hex(d.task_id);
            d.priority = i % 3;
            d.ttl_seconds = 3600;
            auto r = store.deposit(d);
            if (!r) {
                std::cout << "FAIL: deposit: " << r.error().describe() << "\n";
                return 1;
            }
        }
    }  // closed before fork: an SQLite connection must not cross fork()

    std::vector<std::string> logs;
    std::vector<pid_t> children;
    for (int i = 0; i < kRunners; ++i) {
        logs.push_back(dir.file("runner-" + std::to_string(i) + ".log"));
        const pid_t pid = fork();
        if (pid < 0) {
            std::perror("fork");
            return 1;
        }
        if (pid == 0) {
            run_runner(i, db_path, logs.back());
            _exit(0);
        }
        children.push_back(pid);
    }
    bool children_ok = true;
    for (pid_t pid : children) {
        int status = 0;
        waitpid(pid, &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            std::cout << "FAIL: runner process " << pid << " ended with status " << status << "\n";
            children_ok = false;
        }
    }
    const int rc = check(db_path, logs);
    const auto secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    std::cout << (rc == 0 && children_ok ? "PASS" : "FAIL") << " store-race in " << secs << " s\n";
    return rc == 0 && children_ok ? 0 : 1;
}
