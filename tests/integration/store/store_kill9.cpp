// SPDX-License-Identifier: Apache-2.0
// kill -9 during a deposit burst loses nothing that was acknowledged.
//
// A child process deposits tasks as fast as it can (synchronous=FULL, the
// default) and, only AFTER deposit() returned success, writes the task_id to
// a pipe — the moment an HTTP 201 would go out. The parent SIGKILLs it
// mid-burst, drains the pipe, reopens runner.db and checks that every
// acknowledged task is there, intact and claimable, and that the file passes
// PRAGMA integrity_check. Three rounds on the same file, killed at different
// points. (Power loss cannot be simulated here; docs/durability.md explains
// why FULL covers it.)
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <set>
#include <string>
#include <thread>

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include "nps/base/clock.hpp"
#include "nps/base/digest.hpp"
#include "nps/store/store.hpp"
#include "temp_dir.hpp"

namespace {

using namespace nps::store;
namespace proto = nps::proto;

constexpr const char* kInbox = "urn:nps:agent:kill9:inbox";

std::string payload_for(const std::string& task_id)
{
    return R"({"frame":"0x40","task_id":")" + task_id + R"(","pad":")" + std::string(512, 'x') + R"("})";
}

[[noreturn]] void depositor(const std::string& db_path, int round, int fd)
{
    auto opened = Store::open({.path = db_path}, nps::SystemClock::instance());
    if (!opened) {
        std::cerr << "depositor: " << opened.error().describe() << "\n";
        _exit(2);
    }
    auto& store = *opened.value();
    for (int i = 0;; ++i) {
        DepositRequest d;
        d.nid = kInbox;
        d.task_id = "r" + std::to_string(round) + "-" + std::to_string(i);
        d.payload = payload_for(d.task_id);
        d.content_type = "application/json";
        d.frame_hash = nps::sha256_hex(d.payload);
        d.dag_hash = "dag";
        d.dedup_key = nps::sha256_hex(d.task_id);
        d.ttl_seconds = 3600;
        auto r = store.deposit(d);
        if (!r) {
            std::cerr << "depositor: " << r.error().describe() << "\n";
            _exit(2);
        }
        const std::string line = d.task_id + "\n";  // < PIPE_BUF: one atomic write
        if (write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size()))
            _exit(3);
    }
}

// Runs one burst; returns the acknowledged task ids, or an empty set on error.
std::set<std::string> burst(const std::string& db_path, int round, std::size_t kill_after)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        std::perror("pipe2");
        return {};
    }
    const pid_t pid = fork();
    if (pid < 0) {
        std::perror("fork");
        return {};
    }
    if (pid == 0) {
        close(fds[0]);
        depositor(db_path, round, fds[1]);
    }
    close(fds[1]);

    std::set<std::string> acked;
    std::string pending;
    bool killed = false;
    char buf[4096];
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    for (;;) {
        const ssize_t n = read(fds[0], buf, sizeof buf);
        if (n <= 0)
            break;  // EOF: the child is gone
        pending.append(buf, static_cast<std::size_t>(n));
        std::size_t pos;
        while ((pos = pending.find('\n')) != std::string::npos) {
            acked.insert(pending.substr(0, pos));
            pending.erase(0, pos + 1);
        }
        if (!killed && (acked.size() >= kill_after || std::chrono::steady_clock::now() > deadline)) {
            kill(pid, SIGKILL);  // mid-burst: the child is inside deposit() or about to be
            killed = true;
        }
    }
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL) {
        std::cout << "FAIL: round " << round << ": depositor ended with status " << status << " instead of SIGKILL\n";
        return {};
    }
    if (!pending.empty())
        std::cout << "note: round " << round << ": partial line '" << pending << "' ignored\n";
    return acked;
}

}  // namespace

int main()
{
    nps::test::TempDir dir("nps-store-kill9");
    const std::string db_path = dir.file("runner.db");
    int failures = 0;
    std::size_t total = 0;
    const std::size_t kill_points[] = {50, 400, 1500};

    for (int round = 0; round < 3; ++round) {
        const auto acked = burst(db_path, round, kill_points[round]);
        if (acked.empty()) {
            ++failures;
            continue;
        }
        total += acked.size();

        nps::FakeClock clock(nps::SystemClock::instance().now_ms());
        auto opened = Store::open({.path = db_path}, clock);
        if (!opened) {
            std::cout << "FAIL: round " << round << ": reopen: " << opened.error().describe() << "\n";
            return 1;
        }
        auto& store = *opened.value();
        int missing = 0;
        for (const auto& id : acked) {
            auto t = store.task(id);
            if (!t || t->state != proto::TaskState::pending || t->payload != payload_for(id)) {
                if (++missing <= 10)
                    std::cout << "FAIL: round " << round << ": acknowledged task " << id << " is "
                              << (t ? "damaged" : t.error().describe()) << "\n";
            }
        }
        failures += missing;
        // The acknowledged tasks are all queued, in order, for a claimer.
        auto depth = store.depth(kInbox);
        if (!depth || static_cast<std::size_t>(*depth) < total) {
            std::cout << "FAIL: round " << round << ": depth " << (depth ? *depth : -1) << " < " << total << "\n";
            ++failures;
        }
        std::cout << "round " << round << ": " << acked.size() << " acknowledged deposits, " << missing
                  << " missing after kill -9\n";
    }

    try {
        SQLite::Database raw(db_path, SQLite::OPEN_READONLY);
        SQLite::Statement check(raw, "PRAGMA integrity_check");
        check.executeStep();
        const std::string verdict = check.getColumn(0).getString();
        if (verdict != "ok") {
            std::cout << "FAIL: integrity_check: " << verdict << "\n";
            ++failures;
        }
    } catch (const std::exception& e) {
        std::cout << "FAIL: integrity_check: " << e.what() << "\n";
        ++failures;
    }
    std::cout << (failures ? "FAIL" : "PASS") << " store-kill9: " << total << " acknowledged deposits checked\n";
    return failures ? 1 : 0;
}
