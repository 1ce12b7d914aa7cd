// SPDX-License-Identifier: Apache-2.0
// A 201 from deposit means the task survives kill -9 of the daemon. The
// clients' deposits arrive together, so the daemon commits them in groups
// (store::DepositCommitter): the kill also lands inside a group's commit.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>

#include "runner_process.hpp"

using nps::test::http;
using nps::test::RunnerOptions;
using nps::test::RunnerProcess;
using nps::test::task_frame;
using nps::test::TempDir;

TEST_CASE("kill -9 during a deposit burst loses no acknowledged task")
{
    TempDir dir;
    const std::string inbox = "urn:nps:agent:example.test:burst";
    std::set<std::string> acknowledged;
    std::mutex mutex;
    std::atomic<int> attempts{0};
    {
        RunnerProcess runner(RunnerOptions{.state_dir = dir.path()});
        REQUIRE(runner.start());
        const std::string url = runner.url() + "/v1/inbox/" + nps::net::url_encode(inbox);
        std::atomic<bool> stop{false};
        std::vector<std::thread> clients;
        for (int c = 0; c < 12; ++c) {
            clients.emplace_back([&, c] {
                for (int i = 0; !stop; ++i) {
                    std::string id = "burst-" + std::to_string(c) + "-" + std::to_string(i);
                    nps::net::ClientRequest request{.method = "POST",
                                                    .url = url,
                                                    .headers = {{"Authorization", "Bearer " + runner.token()}},
                                                    .body = task_frame(id, 2)};
                    ++attempts;
                    auto response = nps::net::http_request(request);
                    if (!response)
                        return;  // the daemon is gone
                    if (response->status == 201) {
                        std::lock_guard lock(mutex);
                        acknowledged.insert(id);
                    }
                }
            });
        }
        // Let the burst run, then kill the daemon without warning.
        while (true) {
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
            std::lock_guard lock(mutex);
            if (acknowledged.size() >= 200)
                break;
        }
        runner.kill_hard();
        stop = true;
        for (auto& t : clients)
            t.join();
    }
    INFO("acknowledged " << acknowledged.size() << " of " << attempts.load() << " attempted deposits");
    REQUIRE(acknowledged.size() >= 200);

    RunnerProcess restarted(RunnerOptions{.state_dir = dir.path()});
    REQUIRE_MESSAGE(restarted.start(), restarted.log());
    std::size_t missing = 0;
    for (const auto& id : acknowledged) {
        auto task = http("GET", restarted.url() + "/v1/tasks/" + id);
        if (task.status != 200)
            ++missing;
    }
    CHECK(missing == 0);
    auto depth = http("GET", restarted.url() + "/v1/inbox/" + nps::net::url_encode(inbox) + "/depth");
    CHECK(depth.body["depth"].get<std::size_t>() >= acknowledged.size());
}
