// SPDX-License-Identifier: Apache-2.0
// Five runner PROCESSES share one runner.db and drain 5,000 tasks:
// claim → log (task, runner, lease expiry) → complete. Two of them use the
// minimum lease (10 s) and now and then "crash" on a task (never complete
// it), so another runner must reclaim it after the lease expires; one claims
// in batches. The fifth, the victim, claims batches of 4 under the minimum
// lease and holds each task a few ms before completing it. It starts first;
// the other four (the survivors) join once it has claimed 200 tasks, and as
// soon as they are claiming too the parent kills the victim with SIGKILL
// while it holds live leases: the survivors must reclaim them once they
// expire.
// The truth about the claims is the store's event log (lease:granted /
// lease:reclaimed, each naming the runner and the lease expiry), since the
// victim may die between a store call and its log line. Afterwards:
//  - every task is COMPLETED; the completion the runners logged (at most
//    one) came from the task's last claimant, and so did the store's
//    task:completed; only a task whose last claimant is the victim may have
//    no logged completion (it died before writing the line);
//  - for every task, the first claim is granted, the others reclaimed, their
//    number is the task's claims, and each claim happened at or after the
//    expiry of the lease before it: never two live leases on one task;
//  - every claim a runner logged is in the event log, and the survivors
//    logged all of theirs;
//  - every crash (or fenced complete) of a survivor was followed by exactly
//    one reclaim, and at least one lease the victim held when it was killed
//    was reclaimed by another runner;
//  - the survivors exit 0; the victim is killed by SIGKILL (if it runs out
//    of work first, the test fails).
// The claim time is exact: the store sets expiry = now + clamped seconds.
// In its PostgreSQL pass (store-race-pg) the five processes share a schema of
// the test server instead: "several hosts" on one database, whose clock
// gives every lease time.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
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
namespace proto = nps::proto;

constexpr int kTasks = 5000;
constexpr int kRunners = 5;
constexpr int kVictim = 4;  // the runner the parent kills with SIGKILL
// The victim claims this many tasks alone before the others start (see main).
constexpr int kSurvivorsJoinAfterClaims = 200;
constexpr const char* kInbox = "urn:nps:agent:race:inbox";

struct RunnerConfig {
    std::uint32_t lease_seconds;
    int crash_every;  // 0: never crash; else skip completing the 10th claim and every n-th after it
    std::uint32_t batch;
    int hold_ms;      // how long each claimed task is held before it is completed
};

constexpr RunnerConfig kConfigs[kRunners] = {
    {10, 400, 1, 0},  // short lease, crashes now and then
    {10, 600, 1, 0},
    {120, 0, 1, 0},
    {120, 0, 8, 0},   // batch claims
    {10, 0, 4, 5},    // the victim: almost always holds live leases
};

std::string runner_nid(int i)
{
    return "urn:nps:node:race:runner-" + std::to_string(i);
}

std::int64_t lease_ms(int runner)
{
    return static_cast<std::int64_t>(clamp_lease_seconds(kConfigs[runner].lease_seconds)) * 1000;
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

// One runner process. It logs every claim of a batch, then works through
// the batch. Log lines:
//   C <task_id> <expiry_ms> <outcome> <claims>
//   X <task_id>                     (crash: never completed)
//   D <task_id> ok|conflict
// The victim flushes every line, so that the parent can follow it and its
// log is as far as it got when it is killed.
void run_runner(int index, const std::string& db_path, const std::string& log_path)
{
    const RunnerConfig cfg = kConfigs[index];
    const bool flush_every_line = index == kVictim;
    const std::string me = runner_nid(index);
    auto opened = Store::open(options(db_path), nps::SystemClock::instance());
    if (!opened)
        die(opened.error().describe());
    auto& store = *opened.value();
    std::ofstream log(log_path);
    const auto end_line = [&] {
        log << '\n';
        if (flush_every_line)
            log.flush();
    };
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
            log << "C " << lease.task_id << ' ' << lease.lease_expiry_ms << ' ' << to_string(lease.outcome) << ' '
                << lease.claims;
            end_line();
        }
        for (const auto& lease : leases) {
            ++claimed;
            // The first crash comes early (claim 10), so even a runner that
            // the others starve crashes at least once.
            if (cfg.crash_every && claimed >= 10 && (claimed - 10) % cfg.crash_every == 0) {
                log << "X " << lease.task_id;
                end_line();
                continue;
            }
            if (cfg.hold_ms)
                std::this_thread::sleep_for(std::chrono::milliseconds(cfg.hold_ms));
            auto done = store.complete(lease.task_id, me, {.state = nps::proto::TaskState::completed});
            if (!done && done.error().code != "NOP-CLAIM-CONFLICT")
                die(done.error().describe());
            log << "D " << lease.task_id << ' ' << (done ? "ok" : "conflict");
            end_line();
        }
    }
    log.flush();
    if (!log)
        die("cannot write " + log_path);
}

// The victim's log as far as it has written it (it flushes every line).
class VictimLog {
public:
    explicit VictimLog(std::string path) : path_(std::move(path)) {}
    ~VictimLog()
    {
        if (fd_ >= 0)
            close(fd_);
    }
    VictimLog(const VictimLog&) = delete;
    VictimLog& operator=(const VictimLog&) = delete;

    // Reads the lines written since the last call.
    void follow()
    {
        if (fd_ < 0)
            fd_ = open(path_.c_str(), O_RDONLY | O_CLOEXEC);  // the victim may not have created it yet
        if (fd_ < 0)
            return;
        char buf[4096];
        ssize_t n = 0;
        while ((n = read(fd_, buf, sizeof buf)) > 0)
            pending_.append(buf, static_cast<std::size_t>(n));
        std::size_t eol = 0;
        while ((eol = pending_.find('\n')) != std::string::npos) {
            claims_ += pending_[0] == 'C';
            finished_ += pending_[0] == 'D';
            pending_.erase(0, eol + 1);
        }
    }
    int claims() const { return claims_; }
    // Claims logged and not yet finished. The victim logs a batch's claims
    // before it works on them (its lease outlives the batch by seconds) and
    // completes them one at a time, so all but one of these (whose complete
    // may have succeeded before its D line) are live leases it holds.
    int unfinished() const { return claims_ - finished_; }

private:
    std::string path_;
    int fd_ = -1;
    std::string pending_;
    int claims_ = 0, finished_ = 0;
};

// What the parent did to the victim.
struct VictimWatch {
    bool killed = false;         // ended by our SIGKILL
    int status = 0;              // its wait status
    int claims_logged = 0;       // C lines in its log when it was killed
    int unfinished_logged = 0;   // of which not finished: all but one are leases it held
    double killed_after_s = 0;   // since the start of the test
};

struct Claim {
    int runner;
    std::int64_t at;  // the store's clock when the lease was granted (from the events)
    std::int64_t expiry;
    std::string outcome;
    std::uint32_t claims;
};

int check(const std::string& db_path, const std::vector<std::string>& logs)
{
    // What the runners logged: each line was written after the store call it
    // reports had succeeded (the victim's log may stop short of the truth).
    std::map<std::string, std::vector<Claim>> logged_claims;
    std::map<std::string, std::vector<int>> completions;
    std::set<std::string> victim_finished;  // tasks the victim logged a D line for
    int crashes = 0, conflicts = 0, victim_conflicts = 0, lines = 0, victim_claims_logged = 0;
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
                is >> c.expiry >> c.outcome >> c.claims;
                victim_claims_logged += r == kVictim;
                logged_claims[task].push_back(c);
            } else if (kind == "X") {
                ++crashes;
            } else if (kind == "D") {
                std::string result;
                is >> result;
                if (r == kVictim)
                    victim_finished.insert(task);
                if (result == "ok")
                    completions[task].push_back(r);
                else if (r == kVictim)
                    ++victim_conflicts;
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
    std::map<std::string, int> runner_of;
    for (int r = 0; r < kRunners; ++r)
        runner_of[runner_nid(r)] = r;
    const auto runner_index = [&runner_of](const std::string& nid) {
        const auto it = runner_of.find(nid);
        return it == runner_of.end() ? -1 : it->second;
    };

    auto opened = Store::open(options(db_path), nps::SystemClock::instance());
    if (!opened) {
        std::cout << "FAIL: reopen: " << opened.error().describe() << "\n";
        return 1;
    }
    auto& store = *opened.value();
    std::size_t total_claims = 0;
    // Reclaims of a lease held by a survivor; by the victim; of a lease the
    // victim still held when it died (no D line for it).
    int survivor_reclaims = 0, victim_reclaims = 0, victim_held_reclaimed = 0;
    int victim_claims = 0, unlogged_victim_completions = 0;
    for (int i = 0; i < kTasks; ++i) {
        const std::string id = "race-" + std::to_string(i);
        auto t = store.task(id);
        if (!t) {
            fail(id + ": " + t.error().describe());
            continue;
        }
        if (t->state != proto::TaskState::completed)
            fail(id + ": state " + std::string(proto::to_string(t->state)));
        auto events = store.events(id);
        if (!events) {
            fail(id + ": events: " + events.error().describe());
            continue;
        }

        // The claims, as the store logged them, in the order it made them.
        std::vector<Claim> cs;
        int completed_by = -1;
        bool events_ok = true;
        for (const TaskEvent& e : *events) {
            const bool is_claim = e.name == "lease:granted" || e.name == "lease:reclaimed";
            if (!is_claim && e.name != "task:completed")
                continue;
            const auto detail = nlohmann::json::parse(e.detail_json, nullptr, false);
            const bool names_runner =
                detail.is_object() && detail.contains("runner_nid") && detail["runner_nid"].is_string();
            const int runner = names_runner ? runner_index(detail["runner_nid"].get<std::string>()) : -1;
            const bool names_expiry = detail.is_object() && detail.contains("lease_expiry") &&
                                      detail["lease_expiry"].is_number_integer();
            if (runner < 0 || (is_claim && !names_expiry)) {
                fail(id + ": event " + e.name + " with detail " + e.detail_json);
                events_ok = false;
                break;
            }
            if (!is_claim) {
                completed_by = runner;
                continue;
            }
            Claim c{runner, 0, detail["lease_expiry"].get<std::int64_t>(), e.name.substr(6),
                    static_cast<std::uint32_t>(cs.size() + 1)};
            c.at = c.expiry - lease_ms(runner);
            cs.push_back(std::move(c));
        }
        if (!events_ok)
            continue;
        total_claims += cs.size();
        if (t->claims != cs.size())
            fail(id + ": store counts " + std::to_string(t->claims) + " claims, its events " +
                 std::to_string(cs.size()));
        if (cs.empty()) {
            fail(id + ": no claim in its events");
            continue;
        }
        for (std::size_t k = 0; k < cs.size(); ++k) {
            const std::string expect = k == 0 ? "granted" : "reclaimed";
            if (cs[k].outcome != expect)
                fail(id + ": claim #" + std::to_string(k + 1) + " was " + cs[k].outcome);
            if (k > 0 && cs[k].at < cs[k - 1].expiry)
                fail(id + ": runner " + std::to_string(cs[k].runner) + " claimed at " + std::to_string(cs[k].at) +
                     " while runner " + std::to_string(cs[k - 1].runner) + "'s lease was live until " +
                     std::to_string(cs[k - 1].expiry));
            victim_claims += cs[k].runner == kVictim;
            if (k == 0)
                continue;
            if (cs[k - 1].runner != kVictim) {
                ++survivor_reclaims;
            } else {
                ++victim_reclaims;
                if (cs[k].runner != kVictim && !victim_finished.contains(id))
                    ++victim_held_reclaimed;
            }
        }

        // Every logged claim happened as logged; the survivors logged all of theirs.
        std::size_t survivor_claims = 0, survivor_claims_logged = 0;
        for (const Claim& c : cs)
            survivor_claims += c.runner != kVictim;
        for (const Claim& c : logged_claims[id]) {
            survivor_claims_logged += c.runner != kVictim;
            const bool in_events = c.claims >= 1 && c.claims <= cs.size() && cs[c.claims - 1].runner == c.runner &&
                                   cs[c.claims - 1].expiry == c.expiry && cs[c.claims - 1].outcome == c.outcome;
            if (!in_events)
                fail(id + ": runner " + std::to_string(c.runner) + " logged claim #" + std::to_string(c.claims) +
                     " (" + c.outcome + ", expiry " + std::to_string(c.expiry) + ") that its events do not have");
        }
        if (survivor_claims_logged != survivor_claims)
            fail(id + ": the survivors logged " + std::to_string(survivor_claims_logged) + " claims, its events have " +
                 std::to_string(survivor_claims));

        const int last_claimant = cs.back().runner;
        if (completed_by != last_claimant)
            fail(id + ": task:completed names runner " + std::to_string(completed_by) + ", not its last claimant " +
                 std::to_string(last_claimant));
        const auto& done = completions[id];
        if (done.size() > 1) {
            fail(id + ": completed " + std::to_string(done.size()) + " times");
        } else if (done.size() == 1) {
            if (done.front() != last_claimant)
                fail(id + ": completed by runner " + std::to_string(done.front()) + ", not its last claimant " +
                     std::to_string(last_claimant));
        } else if (last_claimant == kVictim) {
            ++unlogged_victim_completions;  // it completed the task, then was killed before the D line
        } else {
            fail(id + ": no runner logged its completion (last claimant: runner " + std::to_string(last_claimant) +
                 ")");
        }
    }
    if (logged_claims.size() != static_cast<std::size_t>(kTasks))
        fail("logs mention " + std::to_string(logged_claims.size()) + " tasks");
    if (crashes == 0)
        fail("no runner crashed: the reclaim path was not exercised");
    // Each crash, and each complete fenced out by an expired lease, of a
    // survivor leaves the task to exactly one reclaim.
    if (survivor_reclaims != crashes + conflicts)
        fail(std::to_string(crashes) + " crashes and " + std::to_string(conflicts) + " fenced completes but " +
             std::to_string(survivor_reclaims) + " reclaims of survivors' leases");
    // The kill came while the victim held leases: others took them over.
    if (victim_held_reclaimed == 0)
        fail("no lease the victim held when it was killed was reclaimed (victim claims " +
             std::to_string(victim_claims) + ", reclaims of its leases " + std::to_string(victim_reclaims) + ")");
    auto depth = store.depth(kInbox);
    if (!depth || *depth != 0)
        fail("inbox not empty at the end");

    std::cout << "tasks " << kTasks << ", claims " << total_claims << ", crashes " << crashes << ", reclaims "
              << survivor_reclaims + victim_reclaims << ", fenced completes " << conflicts + victim_conflicts
              << ", log lines " << lines << "; victim: " << victim_claims << " claims before SIGKILL (logged "
              << victim_claims_logged << "), " << victim_held_reclaimed
              << " leases it held reclaimed after the kill, " << unlogged_victim_completions
              << " completions it did not live to log\n";
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
    for (int i = 0; i < kRunners; ++i)
        logs.push_back(dir.file("runner-" + std::to_string(i) + ".log"));
    std::vector<pid_t> children(kRunners, -1);
    const auto start_runner = [&](int i) {
        const pid_t pid = fork();
        if (pid < 0) {
            std::perror("fork");
            return false;
        }
        if (pid == 0) {
            run_runner(i, db_path, logs[static_cast<std::size_t>(i)]);
            _exit(0);
        }
        children[static_cast<std::size_t>(i)] = pid;
        return true;
    };
    const auto since_start = [&started] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    };

    // The victim starts alone: among processes that never pause, SQLite's
    // busy handler may starve one that sleeps for its whole run. The others
    // join once it has claimed kSurvivorsJoinAfterClaims tasks, and it is
    // killed as soon as they are claiming too (a survivor's log has grown:
    // theirs are buffered, so it has logged a few hundred lines) while it
    // surely holds a live lease.
    if (!start_runner(kVictim))
        return 1;
    const pid_t victim_pid = children[kVictim];
    VictimLog victim_log(logs[kVictim]);
    VictimWatch victim;
    bool victim_ended = false;
    const auto victim_running = [&] {
        if (!victim_ended && waitpid(victim_pid, &victim.status, WNOHANG) == victim_pid)
            victim_ended = true;  // it ran out of work before we killed it
        return !victim_ended;
    };
    while (victim_running() && (victim_log.follow(), victim_log.claims() < kSurvivorsJoinAfterClaims))
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    for (int i = 0; i < kRunners; ++i)
        if (i != kVictim && !start_runner(i))
            return 1;
    const auto survivors_claiming = [&logs] {
        for (int i = 0; i < kRunners; ++i) {
            std::error_code ec;
            if (i != kVictim && std::filesystem::file_size(logs[static_cast<std::size_t>(i)], ec) > 0 && !ec)
                return true;
        }
        return false;
    };
    while (victim_running()) {
        victim_log.follow();
        if (victim_log.unfinished() >= 2 && survivors_claiming()) {
            if (kill(victim_pid, SIGKILL) != 0)
                std::perror("kill");
            waitpid(victim_pid, &victim.status, 0);
            victim.killed = WIFSIGNALED(victim.status) && WTERMSIG(victim.status) == SIGKILL;
            victim.claims_logged = victim_log.claims();
            victim.unfinished_logged = victim_log.unfinished();
            victim.killed_after_s = since_start();
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }

    bool children_ok = true;
    if (!victim.killed) {
        std::cout << "FAIL: the victim was never killed mid-lease (it ended with status " << victim.status
                  << " after logging " << victim_log.claims() << " claims)\n";
        children_ok = false;
    } else {
        std::cout << "killed the victim (pid " << victim_pid << ") with SIGKILL " << victim.killed_after_s
                  << " s into the test, after it had logged " << victim.claims_logged << " claims, "
                  << victim.unfinished_logged << " of them not finished\n";
    }
    for (int i = 0; i < kRunners; ++i) {
        if (i == kVictim)
            continue;  // reaped above
        const pid_t pid = children[static_cast<std::size_t>(i)];
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
