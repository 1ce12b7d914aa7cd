// SPDX-License-Identifier: Apache-2.0
// trusted_request: any method with a body to an operator-configured service
// (plain http on loopback here), any status an answer, no redirects, and
// cancellation of a transfer in progress.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "net_test_support.hpp"
#include "nps/net/guarded_fetch.hpp"

using namespace nps::net;
using namespace nps::net::test;

TEST_CASE("trusted_request sends the method, headers and body; any status is an answer")
{
    auto server = start_tcp(echo);
    auto response = trusted_request({.method = "PATCH",
                                     .url = tcp_url(*server, "/v1/tasks/t/nodes/n?status=409"),
                                     .headers = {{"Content-Type", "application/json"}, {"Idempotency-Key", "k:n:S"}},
                                     .body = std::string(R"({"state":"COMPLETED"})")});
    REQUIRE_MESSAGE(response, (response ? std::string() : response.error().describe()));
    CHECK(response->status == 409);
    CHECK(response->headers["x-reply"] == "yes");
    const auto echoed = nlohmann::json::parse(response->body);
    CHECK(echoed["method"] == "PATCH");
    CHECK(echoed["path"] == "/v1/tasks/t/nodes/n");
    CHECK(echoed["body"] == R"({"state":"COMPLETED"})");
    CHECK(echoed["headers"]["idempotency-key"] == "k:n:S");
    CHECK(echoed["headers"]["content-type"] == "application/json");
    CHECK_FALSE(echoed["headers"].contains("expect"));

    auto post = trusted_request({.method = "POST", .url = tcp_url(*server, "/cb"), .body = std::string("{}")});
    REQUIRE(post);
    CHECK(nlohmann::json::parse(post->body)["method"] == "POST");
    auto get = trusted_get({.url = tcp_url(*server, "/x")});
    REQUIRE(get);
    CHECK(nlohmann::json::parse(get->body)["headers"]["accept"] == "application/json");
}

TEST_CASE("trusted_request does not follow redirects")
{
    auto server = start_tcp([](const HttpRequest&) {
        HttpResponse response;
        response.status = 307;
        response.headers.emplace_back("Location", "http://127.0.0.1:9/elsewhere");
        return response;
    });
    auto response = trusted_request({.method = "PATCH", .url = tcp_url(*server, "/a"), .body = std::string("{}")});
    REQUIRE(response);
    CHECK(response->status == 307);
}

TEST_CASE("trusted_request is cut short by its cancel flag, and names the URL")
{
    std::atomic<bool> release{false};
    auto server = start_tcp([&release](const HttpRequest&) {
        for (int i = 0; i < 1000 && !release.load(); ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        return HttpResponse{};
    });
    std::atomic<bool> cancel{false};
    std::thread canceller([&cancel] {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        cancel.store(true);
    });
    const std::string url = tcp_url(*server, "/slow");
    auto response = trusted_request(
        {.method = "PATCH", .url = url, .timeout_ms = 60'000, .body = std::string("{}"), .cancel = &cancel});
    canceller.join();
    release.store(true);
    REQUIRE_FALSE(response);
    CHECK(response.error().describe().find("cancelled") != std::string::npos);
    CHECK(response.error().describe().find(url) != std::string::npos);

    // Already cancelled: nothing is sent.
    auto never = trusted_request({.url = url, .cancel = &cancel});
    REQUIRE_FALSE(never);
    CHECK(never.error().describe().find("cancelled") != std::string::npos);
}
