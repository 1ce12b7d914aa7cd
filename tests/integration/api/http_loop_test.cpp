// SPDX-License-Identifier: Apache-2.0
// The daemon's HTTP server on its event loop (docs/api.md "Threading"):
// long-polls are parked, not threads; other requests are served meanwhile; a
// deposit answers them; shutdown answers them; the thread count does not grow
// with connections.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "nps/base/unique_fd.hpp"
#include "raw_http_client.hpp"
#include "runner_process.hpp"

using nps::test::body_of;
using nps::test::RawClient;
using nps::test::status_of;
using nps::test::http;
using nps::test::RunnerOptions;
using nps::test::RunnerProcess;
using nps::test::task_frame;
using nps::test::TempDir;
using Json = nlohmann::json;

namespace {

const std::string kInboxPath = "/v1/inbox/urn%3Anps%3Aagent%3Aexample.test%3Aloop";

// The raw requests below test the loop, not access: TCP without a token.
struct Daemon : nps::test::StartedRunner {
    explicit Daemon(const std::string& config_text = "")
        : StartedRunner("[api]\nrequire_token = false\n" + config_text) {}

    std::uint16_t port() const
    {
        const std::string url = runner.url();
        return static_cast<std::uint16_t>(std::stoi(url.substr(url.rfind(':') + 1)));
    }
};

// nps_api_long_polls_parked from GET /metrics.
long parked(const Daemon& d)
{
    auto reply = http("GET", d.runner.url() + "/metrics");
    const std::string key = "\nnps_api_long_polls_parked ";
    const auto at = reply.raw.find(key);
    if (at == std::string::npos)
        return -1;
    return std::stol(reply.raw.substr(at + key.size()));
}

// Waits (polling the metric, at most 30 s) until `count` long-polls are parked.
bool wait_parked(const Daemon& d, long count)
{
    for (int i = 0; i < 600; ++i) {
        if (parked(d) == count)
            return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
}

long threads_of(pid_t pid)
{
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(status, line))
        if (line.rfind("Threads:", 0) == 0)
            return std::stol(line.substr(8));
    return -1;
}

}  // namespace

TEST_CASE("200 parked long-polls do not delay other requests; one deposit answers them all")
{
    Daemon d;
    constexpr int kPolls = 200;
    std::vector<std::unique_ptr<RawClient>> polls;
    for (int i = 0; i < kPolls; ++i) {
        polls.push_back(std::make_unique<RawClient>(d.port()));
        polls.back()->send_get(kInboxPath + "?wait=60");
    }
    REQUIRE(wait_parked(d, kPolls));

    // Other requests are served while they wait, over TCP and the unix socket.
    for (int i = 0; i < 20; ++i) {
        CHECK(http("GET", d.runner.url() + "/healthz").status == 200);
        CHECK(http("GET", "http://localhost" + kInboxPath + "/depth", std::nullopt, {}, d.runner.socket_path())
                  .status == 200);
    }
    for (auto& poll : polls)
        CHECK_FALSE(poll->readable(0));

    REQUIRE(http("POST", d.runner.url() + kInboxPath, task_frame("t-loop")).status == 201);
    for (auto& poll : polls) {
        const std::string response = poll->read_all();
        REQUIRE_MESSAGE(status_of(response) == 200, response);
        const Json body = body_of(response);
        CHECK(body["count"] == 1);
        CHECK(body["messages"][0]["task_id"] == "t-loop");
    }
    CHECK(parked(d) == 0);
}

TEST_CASE("a parked long-poll answers empty at its deadline; a client that left harms nothing")
{
    Daemon d;
    RawClient stays(d.port());
    stays.send_get(kInboxPath + "?wait=1");
    {
        RawClient left(d.port());
        left.send_get(kInboxPath + "?wait=1");
        REQUIRE(wait_parked(d, 2));
    }  // closed while parked
    const std::string response = stays.read_all();
    REQUIRE_MESSAGE(status_of(response) == 200, response);
    CHECK(body_of(response)["count"] == 0);
    CHECK(wait_parked(d, 0));
    CHECK(http("GET", d.runner.url() + "/healthz").status == 200);
}

TEST_CASE("shutdown answers every parked long-poll")
{
    Daemon d;
    std::vector<std::unique_ptr<RawClient>> polls;
    for (int i = 0; i < 5; ++i) {
        polls.push_back(std::make_unique<RawClient>(d.port()));
        polls.back()->send_get(kInboxPath + "?wait=60");
    }
    REQUIRE(wait_parked(d, 5));
    REQUIRE(::kill(d.runner.pid(), SIGTERM) == 0);
    for (auto& poll : polls) {
        const std::string response = poll->read_all();
        REQUIRE_MESSAGE(status_of(response) == 200, response);
        CHECK(body_of(response)["count"] == 0);
    }
    CHECK(d.runner.stop() == 0);
}

TEST_CASE("the daemon's thread count does not grow with open connections")
{
    Daemon d;
    REQUIRE(http("GET", d.runner.url() + "/healthz").status == 200);
    const long before = threads_of(d.runner.pid());
    REQUIRE(before > 0);
    std::vector<std::unique_ptr<RawClient>> clients;
    for (int i = 0; i < 100; ++i) {
        clients.push_back(std::make_unique<RawClient>(d.port()));
        switch (i % 3) {
        case 0: clients.back()->send_get(kInboxPath + "?wait=60"); break;        // parked
        case 1: clients.back()->send_text("GET /healthz HTTP/1.1\r\nHo"); break;  // half a request
        default: break;                                                        // idle
        }
    }
    REQUIRE(wait_parked(d, 34));
    CHECK(http("GET", d.runner.url() + "/healthz").status == 200);
    const long during = threads_of(d.runner.pid());
    INFO("threads before: " << before << ", with 100 connections open: " << during);
    CHECK(during <= before);
}

TEST_CASE("a SpawnSpec resolution waiting on the network does not block the loop")
{
    // A "registry" that accepts connections (the kernel's backlog) and never answers.
    nps::UniqueFd registry(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    REQUIRE(registry);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(registry.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(registry.get(), 16) == 0);
    socklen_t len = sizeof addr;
    REQUIRE(::getsockname(registry.get(), reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    Daemon d("[spawn]\nregistry_url = \"http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) +
             "\"\nfetch_timeout_seconds = 60\n");

    RawClient resolving(d.port());
    const std::string body = R"({"agent":"urn:nps:agent:example.test:remote"})";
    resolving.send_text("POST /v1/spawnspecs/resolve HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
                        "Content-Type: application/json\r\nContent-Length: " +
                        std::to_string(body.size()) + "\r\n\r\n" + body);
    // Served while the resolution waits for the registry.
    for (int i = 0; i < 10; ++i) {
        CHECK(http("GET", d.runner.url() + "/healthz").status == 200);
        CHECK(http("GET", d.runner.url() + kInboxPath + "/depth").status == 200);
    }
    CHECK_FALSE(resolving.readable(0));
    registry.reset();  // the registry goes away: the fetch fails, the resolution answers
    const std::string response = resolving.read_all();
    REQUIRE_MESSAGE(status_of(response) == 400, response);
    CHECK(body_of(response)["error"] == "NOP-SPAWN-SPEC-INVALID");
}
