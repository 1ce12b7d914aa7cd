// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "net_test_support.hpp"
#include "nps/base/unique_fd.hpp"

using namespace nps::net;
using namespace nps::net::test;

TEST_CASE("connection refused names the URL")
{
    // A bound socket that does not listen: connects to it are refused.
    nps::UniqueFd fd(::socket(AF_INET, SOCK_STREAM, 0));
    REQUIRE(fd);
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd.get(), reinterpret_cast<const sockaddr*>(&sin), sizeof sin) == 0);
    socklen_t length = sizeof sin;
    REQUIRE(::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&sin), &length) == 0);
    const std::string url = "http://127.0.0.1:" + std::to_string(ntohs(sin.sin_port)) + "/v1/tasks";

    auto response = http_request(get(url));
    REQUIRE_FALSE(response);
    CHECK(response.error().describe().find("'" + url + "'") != std::string::npos);
}

TEST_CASE("a missing unix socket names the socket")
{
    TempDir dir;
    ClientRequest request = get("http://localhost/healthz");
    request.unix_socket = dir / "nope.sock";
    auto response = http_request(request);
    REQUIRE_FALSE(response);
    const std::string text = response.error().describe();
    CHECK(text.find("'http://localhost/healthz'") != std::string::npos);
    CHECK(text.find("nope.sock") != std::string::npos);
}

TEST_CASE("response size cap")
{
    auto server = start_tcp([](const HttpRequest&) {
        HttpResponse response;
        response.body = std::string(100'000, 'r');
        return response;
    });
    const std::string url = tcp_url(*server, "/big");

    ClientRequest request = get(url);
    request.max_response_bytes = 100'000;
    auto exact = http_request(request);
    REQUIRE(exact);
    CHECK(exact->body.size() == 100'000);

    request.max_response_bytes = 99'999;
    auto over = http_request(request);
    REQUIRE_FALSE(over);
    CHECK(over.error().describe().find("'" + url + "'") != std::string::npos);
    CHECK(over.error().describe().find("exceeds 99999 bytes") != std::string::npos);
}

TEST_CASE("timeout names the URL")
{
    std::mutex mutex;
    std::condition_variable cv;
    bool release = false;
    auto server = start_tcp([&](const HttpRequest&) {
        std::unique_lock lock(mutex);
        cv.wait_for(lock, std::chrono::seconds(10), [&] { return release; });
        return HttpResponse{};
    });
    const std::string url = tcp_url(*server, "/hang");
    ClientRequest request = get(url);
    request.timeout_ms = 200;
    auto response = http_request(request);
    {
        std::lock_guard lock(mutex);
        release = true;
        cv.notify_all();
    }
    REQUIRE_FALSE(response);
    CHECK(response.error().describe().find("'" + url + "'") != std::string::npos);
}

TEST_CASE("only http and https")
{
    auto response = http_request(get("file:///etc/passwd"));
    REQUIRE_FALSE(response);
    CHECK(response.error().describe().find("file:///etc/passwd") != std::string::npos);
}

TEST_CASE("response headers are lower-cased; any HTTP status is a response")
{
    auto server = start_tcp([](const HttpRequest&) {
        HttpResponse response;
        response.status = 404;
        response.body = R"({"status":"NPS-CLIENT-NOT-FOUND"})";
        response.headers.emplace_back("X-Mixed-Case", "Value");
        response.headers.emplace_back("Retry-After", "3");
        return response;
    });
    auto response = http_request(get(tcp_url(*server, "/missing")));
    REQUIRE(response);
    CHECK(response->status == 404);
    CHECK(response->headers["x-mixed-case"] == "Value");
    CHECK(response->headers["retry-after"] == "3");
    CHECK(response->body == R"({"status":"NPS-CLIENT-NOT-FOUND"})");
}

TEST_CASE("caller headers: content type override and empty values")
{
    auto server = start_tcp(echo);
    ClientRequest request = get(tcp_url(*server, "/h"));
    request.method = "PUT";
    request.body = "plain";
    request.headers.emplace_back("Content-Type", "text/plain");
    request.headers.emplace_back("X-Empty", "");
    auto j = body_json(must(http_request(request)));
    CHECK(j["headers"]["content-type"] == "text/plain");
    CHECK(j["headers"].contains("x-empty"));
    CHECK(j["headers"]["x-empty"] == "");
}

TEST_CASE("url_encode round-trips through the server's decoding")
{
    auto server = start_tcp(echo);
    const std::string nid = "urn:nps:agent:example.com/a b&c=d?e#f%g+h";
    auto j = body_json(must(http_request(
        get(tcp_url(*server, "/v1/ndp/resolve/" + url_encode(nid) + "?nid=" + url_encode(nid))))));
    CHECK(j["path"] == "/v1/ndp/resolve/" + nid);
    CHECK(j["query"]["nid"] == nid);
}
