// SPDX-License-Identifier: Apache-2.0
// AsyncFetcher and CurlMulti on a real EventLoop, driven on the test's own
// thread: a trusted request over loopback, abort (no callback, nothing left
// in the multi), a Done never run inside the starting call, and guarded
// refusals identical (code and message) to the blocking client's — for an
// IP literal (checked on the loop) and a host name (resolved on a helper
// thread).
#include <doctest/doctest.h>

#include <chrono>
#include <optional>
#include <thread>

#include "net_test_support.hpp"
#include "nps/event/event_loop.hpp"
#include "nps/net/async_fetch.hpp"
#include "nps/net/guarded_fetch.hpp"
#include "nps/net/host_resolver.hpp"

using namespace nps::net;
using namespace nps::net::test;

namespace {

struct Loop {
    std::unique_ptr<nps::event::EventLoop> loop = std::move(nps::event::EventLoop::create()).value();
    std::unique_ptr<AsyncFetcher> fetcher = AsyncFetcher::create(*loop);

    // Runs the loop until `done` holds (or 20 s pass); returns done().
    template <class Pred>
    bool run_until(Pred done)
    {
        const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (!done() && std::chrono::steady_clock::now() < limit)
            REQUIRE(loop->run_once(std::chrono::milliseconds(100)));
        return done();
    }
    void run_for(std::chrono::milliseconds span)
    {
        const auto until = std::chrono::steady_clock::now() + span;
        while (std::chrono::steady_clock::now() < until)
            REQUIRE(loop->run_once(std::chrono::milliseconds(20)));
    }
};

}  // namespace

TEST_CASE("AsyncFetcher: a trusted PATCH on the loop; Done runs later, on the loop")
{
    auto server = start_tcp(echo);
    Loop loop;
    std::optional<nps::Result<FetchedResponse>> got;
    loop.fetcher->trusted({.method = "PATCH",
                           .url = tcp_url(*server, "/v1/tasks/t/nodes/n?status=202"),
                           .headers = {{"Idempotency-Key", "k"}},
                           .body = std::string(R"({"state":"COMPLETED"})")},
                          [&](nps::Result<FetchedResponse> r) { got.emplace(std::move(r)); });
    CHECK_FALSE(got.has_value());  // never inside the call
    REQUIRE(loop.run_until([&] { return got.has_value(); }));
    REQUIRE_MESSAGE(*got, (*got ? std::string() : got->error().describe()));
    CHECK((*got)->status == 202);
    const auto echoed = nlohmann::json::parse((*got)->body);
    CHECK(echoed["method"] == "PATCH");
    CHECK(echoed["body"] == R"({"state":"COMPLETED"})");
    CHECK(echoed["headers"]["idempotency-key"] == "k");
    CHECK(loop.fetcher->active() == 0);
}

TEST_CASE("AsyncFetcher: many trusted requests at once on one loop")
{
    auto server = start_tcp(echo);
    Loop loop;
    int answered = 0;
    for (int i = 0; i < 20; ++i)
        loop.fetcher->trusted({.url = tcp_url(*server, "/x?i=" + std::to_string(i))},
                              [&](nps::Result<FetchedResponse> r) {
                                  CHECK(r);
                                  ++answered;
                              });
    CHECK(loop.fetcher->active() == 20);
    REQUIRE(loop.run_until([&] { return answered == 20; }));
    CHECK(loop.fetcher->active() == 0);
}

TEST_CASE("AsyncFetcher: abort stops a hanging transfer; its Done never runs")
{
    std::atomic<bool> hold{true};
    std::atomic<int> arrived{0};
    auto server = start_tcp([&](const HttpRequest& request) {
        ++arrived;
        for (int i = 0; i < 2000 && hold.load(); ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        return echo(request);
    });
    Loop loop;
    bool called = false;
    const auto id = loop.fetcher->trusted({.url = tcp_url(*server, "/slow"), .timeout_ms = 60'000},
                                          [&](nps::Result<FetchedResponse>) { called = true; });
    REQUIRE(loop.run_until([&] { return arrived.load() == 1; }));
    loop.fetcher->abort(id);
    CHECK(loop.fetcher->active() == 0);
    hold.store(false);
    loop.run_for(std::chrono::milliseconds(300));  // nothing more may happen
    CHECK_FALSE(called);
}

TEST_CASE("AsyncFetcher: guarded refusals are the blocking client's, code and message")
{
    StaticResolver dns;
    dns.add("private.example.test", {"10.1.2.3"});
    const DestinationGuard guard({.error_code = "NOP-CALLBACK-INVALID"}, dns);
    Loop loop;
    for (const std::string url : {"https://10.1.2.3/hook", "https://private.example.test/hook",
                                  "https://unknown.example.test/hook", "http://public.example/hook"}) {
        CAPTURE(url);
        const GuardedRequest request{.method = "POST",
                                     .url = url,
                                     .what = "callback_url",
                                     .guard = &guard,
                                     .limits = {.timeout_ms = 5000},
                                     .body = std::string("{}")};
        const auto blocking = guarded_request(request);
        REQUIRE_FALSE(blocking);
        std::optional<nps::Result<FetchedResponse>> got;
        loop.fetcher->guarded(request, [&](nps::Result<FetchedResponse> r) { got.emplace(std::move(r)); });
        REQUIRE(loop.run_until([&] { return got.has_value(); }));
        REQUIRE_FALSE(*got);
        CHECK(got->error().code == "NOP-CALLBACK-INVALID");
        CHECK(got->error().code == blocking.error().code);
        CHECK(got->error().message == blocking.error().message);
    }
}
