// SPDX-License-Identifier: Apache-2.0
// Real HTTP over loopback TCP and a unix socket, through our own client.
#include <doctest/doctest.h>

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "net_test_support.hpp"
#include "nps/base/unique_fd.hpp"

using namespace nps::net;
using namespace nps::net::test;

namespace {

ClientRequest unix_get(const std::string& socket, const std::string& target)
{
    ClientRequest request;
    request.url = "http://localhost" + target;
    request.unix_socket = socket;
    return request;
}

// Leaves a socket file at `path` with nobody listening (a crashed daemon's leftover).
void make_stale_socket(const std::string& path)
{
    nps::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM, 0));
    REQUIRE(fd);
    sockaddr_un sun{};
    sun.sun_family = AF_UNIX;
    REQUIRE(path.size() < sizeof sun.sun_path);
    std::memcpy(sun.sun_path, path.c_str(), path.size());
    REQUIRE(::bind(fd.get(), reinterpret_cast<const sockaddr*>(&sun), sizeof sun) == 0);
}

bool is_socket(const std::string& path)
{
    struct stat st{};
    return ::lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

bool exists(const std::string& path)
{
    struct stat st{};
    return ::lstat(path.c_str(), &st) == 0;
}

// A gate a handler can block on until the test opens it (bounded, so a
// failing test cannot hang forever).
class Gate {
public:
    void open()
    {
        std::lock_guard lock(mutex_);
        open_ = true;
        cv_.notify_all();
    }
    bool wait(std::chrono::milliseconds limit)
    {
        std::unique_lock lock(mutex_);
        return cv_.wait_for(lock, limit, [&] { return open_; });
    }

private:
    std::mutex mutex_;
    std::condition_variable cv_;
    bool open_ = false;
};

}  // namespace

TEST_CASE("TCP: path, query, headers and flags reach the handler")
{
    auto server = start_tcp(echo);
    REQUIRE(server->tcp_port() != 0);

    ClientRequest request = get(tcp_url(*server, "/a%20b/c%3Ad?x=1&y=hello%20world&y=2&flag&plus=a+b&enc=%2F%26%3D"));
    request.headers.emplace_back("X-Custom-Thing", "Value 1");
    request.headers.emplace_back("X-Repeated", "one");
    request.headers.emplace_back("X-Repeated", "two");
    request.headers.emplace_back("Authorization", "Bearer t0ken");
    auto response = must(http_request(request));
    CHECK(response.status == 200);
    CHECK(response.headers["content-type"] == "application/json");
    CHECK(response.headers["x-reply"] == "yes");

    auto j = body_json(response);
    CHECK(j["method"] == "GET");
    CHECK(j["path"] == "/a b/c:d");
    CHECK(j["query"]["x"] == "1");
    CHECK(j["query"]["y"] == "2");  // last one wins
    CHECK(j["query"]["flag"] == "");
    CHECK(j["query"]["plus"] == "a b");
    CHECK(j["query"]["enc"] == "/&=");
    CHECK(j["headers"]["x-custom-thing"] == "Value 1");
    CHECK(j["headers"]["x-repeated"] == "one, two");
    CHECK(j["headers"]["authorization"] == "Bearer t0ken");
    CHECK(j["headers"].contains("host"));
    CHECK(j["from_loopback"] == true);
    CHECK(j["from_unix_socket"] == false);
    CHECK(j["body_too_large"] == false);
}

TEST_CASE("methods, statuses and bodies")
{
    auto server = start_tcp(echo);

    SUBCASE("POST with a body")
    {
        ClientRequest request = get(tcp_url(*server, "/v1/inbox/x?status=201"));
        request.method = "POST";
        request.body = R"({"hello":"world"})";
        auto response = must(http_request(request));
        CHECK(response.status == 201);
        auto j = body_json(response);
        CHECK(j["method"] == "POST");
        CHECK(j["body"] == R"({"hello":"world"})");
        CHECK(j["headers"]["content-type"] == "application/json");
        CHECK(j["headers"]["content-length"] == "17");
        CHECK_FALSE(j["headers"].contains("expect"));
    }
    SUBCASE("POST with an empty body")
    {
        ClientRequest request = get(tcp_url(*server, "/v1/tasks/t/cancel"));
        request.method = "POST";
        auto response = must(http_request(request));
        auto j = body_json(response);
        CHECK(j["method"] == "POST");
        CHECK(j["body"] == "");
        CHECK(j["headers"]["content-length"] == "0");

        request.body = "";
        j = body_json(must(http_request(request)));
        CHECK(j["headers"]["content-length"] == "0");
    }
    SUBCASE("PUT, PATCH, DELETE, custom")
    {
        for (const char* method : {"PUT", "PATCH", "DELETE", "OPTIONS"}) {
            CAPTURE(method);
            ClientRequest request = get(tcp_url(*server, "/m"));
            request.method = method;
            if (std::string(method) != "DELETE")
                request.body = std::string("body of ") + method;
            auto j = body_json(must(http_request(request)));
            CHECK(j["method"] == method);
            CHECK(j["body"] == (request.body ? *request.body : ""));
        }
    }
    SUBCASE("HEAD has headers and no body")
    {
        ClientRequest request = get(tcp_url(*server, "/h"));
        request.method = "HEAD";
        auto response = must(http_request(request));
        CHECK(response.status == 200);
        CHECK(response.body.empty());
        CHECK(response.headers["x-reply"] == "yes");
        CHECK(response.headers.count("content-length") == 1);
    }
    SUBCASE("204 and 409 pass through; a handler-chosen content type is kept")
    {
        CHECK(must(http_request(get(tcp_url(*server, "/x?status=204")))).status == 204);
        CHECK(must(http_request(get(tcp_url(*server, "/x?status=409")))).status == 409);
    }
    SUBCASE("binary body round trip")
    {
        std::string body;
        for (int i = 0; i < 300'000; ++i)
            body.push_back(static_cast<char>(i * 7 % 256));
        ClientRequest request = get(tcp_url(*server, "/raw"));
        request.method = "POST";
        request.body = body;
        request.headers.emplace_back("Content-Type", "application/octet-stream");
        auto response = must(http_request(request));
        CHECK(response.status == 200);
        CHECK(response.body == body);
    }
}

TEST_CASE("custom content type and an invalid status")
{
    auto server = start_tcp([](const HttpRequest& request) {
        HttpResponse response;
        if (request.path == "/text") {
            response.content_type = "text/plain; version=0.0.4";
            response.body = "metric 1\n";
        } else {
            response.status = 42;
        }
        return response;
    });
    auto text = must(http_request(get(tcp_url(*server, "/text"))));
    CHECK(text.headers["content-type"] == "text/plain; version=0.0.4");
    CHECK(text.body == "metric 1\n");
    CHECK(must(http_request(get(tcp_url(*server, "/bad")))).status == 500);
}

TEST_CASE("body size cap")
{
    HttpServerOptions options;
    options.max_body_bytes = 1000;
    auto server = start_tcp(echo, options);

    ClientRequest request = get(tcp_url(*server, "/b"));
    request.method = "POST";

    SUBCASE("exactly the cap is accepted")
    {
        request.body = std::string(1000, 'a');
        auto j = body_json(must(http_request(request)));
        CHECK(j["body_too_large"] == false);
        CHECK(j["body_size"] == 1000);
    }
    SUBCASE("one byte over is flagged, not buffered, and drained")
    {
        request.body = std::string(1001, 'a');
        auto response = must(http_request(request));
        CHECK(response.status == 413);
        auto j = body_json(response);
        CHECK(j["body_too_large"] == true);
        CHECK(j["body_size"] == 0);
    }
    SUBCASE("a large upload is drained and answered")
    {
        request.body = std::string(5 << 20, 'z');
        auto response = must(http_request(request));
        CHECK(response.status == 413);
        CHECK(body_json(response)["body_too_large"] == true);
    }
    SUBCASE("with Expect: 100-continue an oversize body is refused up front")
    {
        request.body = std::string(5 << 20, 'z');
        request.headers.emplace_back("Expect", "100-continue");
        auto response = must(http_request(request));
        CHECK(response.status == 413);
        CHECK(body_json(response)["body_too_large"] == true);
    }
    SUBCASE("with Expect: 100-continue a small body still arrives")
    {
        request.body = std::string(900, 'q');
        request.headers.emplace_back("Expect", "100-continue");
        auto j = body_json(must(http_request(request)));
        CHECK(j["body_too_large"] == false);
        CHECK(j["body_size"] == 900);
    }
    // The server keeps serving after any of these.
    CHECK(must(http_request(get(tcp_url(*server, "/after")))).status == 200);
}

TEST_CASE("unix socket: flags, mode, parent directory, removal")
{
    TempDir dir;
    const std::string socket = dir / "run/nps/api.sock";
    HttpServerOptions options;
    options.unix_socket = socket;
    options.unix_socket_mode = 0600;
    {
        auto server = HttpServer::start(options, echo);
        REQUIRE_MESSAGE(server, server.error().describe());
        CHECK((*server)->tcp_port() == 0);

        struct stat st{};
        REQUIRE(::lstat(socket.c_str(), &st) == 0);
        CHECK(S_ISSOCK(st.st_mode));
        CHECK((st.st_mode & 07777) == 0600);
        REQUIRE(::stat((dir / "run/nps").c_str(), &st) == 0);
        CHECK(S_ISDIR(st.st_mode));

        auto response = must(http_request(unix_get(socket, "/v1/tasks?limit=5")));
        CHECK(response.status == 200);
        auto j = body_json(response);
        CHECK(j["path"] == "/v1/tasks");
        CHECK(j["query"]["limit"] == "5");
        CHECK(j["from_unix_socket"] == true);
        CHECK(j["from_loopback"] == false);

        ClientRequest post = unix_get(socket, "/p");
        post.method = "POST";
        post.body = "over the socket";
        CHECK(body_json(must(http_request(post)))["body"] == "over the socket");
    }
    CHECK_FALSE(exists(socket));  // removed by the destructor
}

TEST_CASE("unix socket mode 0660 is applied regardless of umask")
{
    TempDir dir;
    HttpServerOptions options;
    options.unix_socket = dir / "api.sock";
    auto server = HttpServer::start(options, echo);
    REQUIRE(server);
    struct stat st{};
    REQUIRE(::lstat(options.unix_socket->c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0660);
}

TEST_CASE("a stale socket file is replaced")
{
    TempDir dir;
    const std::string socket = dir / "api.sock";
    make_stale_socket(socket);
    REQUIRE(is_socket(socket));

    HttpServerOptions options;
    options.unix_socket = socket;
    auto server = HttpServer::start(options, echo);
    REQUIRE_MESSAGE(server, server.error().describe());
    CHECK(must(http_request(unix_get(socket, "/ok"))).status == 200);
}

TEST_CASE("a live socket is not stolen")
{
    TempDir dir;
    const std::string socket = dir / "api.sock";
    HttpServerOptions options;
    options.unix_socket = socket;
    auto first = HttpServer::start(options, echo);
    REQUIRE(first);

    auto second = HttpServer::start(options, echo);
    REQUIRE_FALSE(second);
    const std::string text = second.error().describe();
    CHECK(text.find("'" + socket + "'") != std::string::npos);
    CHECK(text.find("Address already in use") != std::string::npos);
    // The first server still owns and serves its socket.
    CHECK(must(http_request(unix_get(socket, "/still"))).status == 200);
}

TEST_CASE("a non-socket file at the socket path is left alone")
{
    TempDir dir;
    const std::string path = dir / "api.sock";
    {
        std::ofstream out(path);
        out << "precious";
    }
    HttpServerOptions options;
    options.unix_socket = path;
    auto server = HttpServer::start(options, echo);
    REQUIRE_FALSE(server);
    CHECK(server.error().describe().find("'" + path + "'") != std::string::npos);
    std::ifstream in(path);
    std::stringstream content;
    content << in.rdbuf();
    CHECK(content.str() == "precious");
}

TEST_CASE("a socket path that is too long fails cleanly")
{
    HttpServerOptions options;
    options.unix_socket = "/tmp/" + std::string(200, 'x') + "/api.sock";
    auto server = HttpServer::start(options, echo);
    REQUIRE_FALSE(server);
    CHECK(server.error().describe().find("api.sock") != std::string::npos);
}

TEST_CASE("TCP bind in use names the address")
{
    auto first = start_tcp(echo);
    const std::string address = "127.0.0.1:" + std::to_string(first->tcp_port());
    HttpServerOptions options;
    options.tcp_listen = address;
    auto second = HttpServer::start(options, echo);
    REQUIRE_FALSE(second);
    CHECK(second.error().describe() == "Failed to bind '" + address + "': Address already in use");
}

TEST_CASE("start without any listener or with a bad address fails")
{
    auto none = HttpServer::start(HttpServerOptions{}, echo);
    CHECK_FALSE(none);

    HttpServerOptions options;
    options.tcp_listen = "127.0.0.1:99999";
    auto bad = HttpServer::start(options, echo);
    REQUIRE_FALSE(bad);
    CHECK(bad.error().describe().find("'127.0.0.1:99999'") != std::string::npos);
}

TEST_CASE("TCP and unix socket together share the handler")
{
    TempDir dir;
    HttpServerOptions options;
    options.tcp_listen = "127.0.0.1:0";
    options.unix_socket = dir / "api.sock";
    std::atomic<int> calls{0};
    auto server = HttpServer::start(options, [&](const HttpRequest& request) {
        ++calls;
        return echo(request);
    });
    REQUIRE(server);
    auto over_tcp = body_json(must(http_request(get(tcp_url(**server, "/t")))));
    auto over_unix = body_json(must(http_request(unix_get(*options.unix_socket, "/u"))));
    CHECK(over_tcp["from_unix_socket"] == false);
    CHECK(over_tcp["from_loopback"] == true);
    CHECK(over_unix["from_unix_socket"] == true);
    CHECK(over_unix["from_loopback"] == false);
    CHECK(calls == 2);
}

TEST_CASE("IPv6 loopback listener")
{
    HttpServerOptions options;
    options.tcp_listen = "[::1]:0";
    auto server = HttpServer::start(options, echo);
    if (!server) {
        MESSAGE("no IPv6 loopback here, skipped: " << server.error().describe());
        return;
    }
    auto j = body_json(must(http_request(get("http://[::1]:" + std::to_string((*server)->tcp_port()) + "/six"))));
    CHECK(j["path"] == "/six");
    CHECK(j["from_loopback"] == true);
}

TEST_CASE("a blocking (long-poll) handler does not delay other requests")
{
    Gate release;
    std::atomic<bool> slow_entered{false};
    std::atomic<bool> slow_done{false};
    auto server = start_tcp([&](const HttpRequest& request) {
        if (request.path == "/slow") {
            slow_entered = true;
            release.wait(std::chrono::seconds(10));
            HttpResponse response;
            response.body = "slow";
            return response;
        }
        return echo(request);
    });

    std::thread slow([&] {
        auto response = http_request(get(tcp_url(*server, "/slow")));
        CHECK(response);
        if (response)
            CHECK(response->body == "slow");
        slow_done = true;
    });
    for (int i = 0; i < 1000 && !slow_entered; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    REQUIRE(slow_entered);

    // Several requests complete while /slow is still parked in its handler.
    for (int i = 0; i < 5; ++i) {
        auto fast = http_request(get(tcp_url(*server, "/fast")));
        REQUIRE(fast);
        CHECK(fast->status == 200);
    }
    CHECK_FALSE(slow_done);

    release.open();
    slow.join();
    CHECK(slow_done);
}

TEST_CASE("a throwing handler yields 500 and the server keeps serving")
{
    auto server = start_tcp([](const HttpRequest& request) -> HttpResponse {
        if (request.path == "/throw")
            throw std::runtime_error("boom");
        if (request.path == "/throw-int")
            throw 42;
        return echo(request);
    });
    for (const char* path : {"/throw", "/throw-int"}) {
        CAPTURE(path);
        auto response = must(http_request(get(tcp_url(*server, path))));
        CHECK(response.status == 500);
        CHECK(response.headers["content-type"] == "application/json");
        CHECK(response.body ==
              R"({"status":"NPS-SERVER-INTERNAL","error":"NPS-SERVER-INTERNAL","message":"internal error"})");
    }
    CHECK(must(http_request(get(tcp_url(*server, "/fine")))).status == 200);
}

TEST_CASE("many concurrent clients")
{
    TempDir dir;
    HttpServerOptions options;
    options.tcp_listen = "127.0.0.1:0";
    options.unix_socket = dir / "api.sock";
    auto started = HttpServer::start(options, echo);
    REQUIRE(started);
    auto& server = *started;

    constexpr int kThreads = 32;
    constexpr int kRequests = 20;
    std::atomic<int> ok{0};
    std::vector<std::string> failures;
    std::mutex failures_mutex;
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < kRequests; ++i) {
                const std::string tag = std::to_string(t) + "-" + std::to_string(i);
                ClientRequest request = (t % 2 == 0) ? get(tcp_url(*server, "/c?tag=" + tag))
                                                     : unix_get(*options.unix_socket, "/c?tag=" + tag);
                request.method = "POST";
                request.body = "body-" + tag;
                auto response = http_request(request);
                std::string failure;
                if (!response) {
                    failure = response.error().describe();
                } else {
                    auto j = nlohmann::json::parse(response->body, nullptr, false);
                    if (response->status != 200 || j.is_discarded() || j["query"]["tag"] != tag ||
                        j["body"] != "body-" + tag)
                        failure = "bad response for " + tag + ": " + response->body;
                }
                if (failure.empty()) {
                    ++ok;
                } else {
                    std::lock_guard lock(failures_mutex);
                    failures.push_back(failure);
                }
            }
        });
    }
    for (auto& thread : threads)
        thread.join();
    for (const auto& failure : failures)
        MESSAGE(failure);
    CHECK(failures.empty());
    CHECK(ok == kThreads * kRequests);
}

TEST_CASE("the destructor waits for an in-flight request")
{
    Gate release;
    std::atomic<bool> entered{false};
    std::atomic<bool> handler_finished{false};
    auto server = start_tcp([&](const HttpRequest&) {
        entered = true;
        release.wait(std::chrono::seconds(10));
        handler_finished = true;
        return HttpResponse{};
    });
    std::thread client([&] { (void)http_request(get(tcp_url(*server, "/wait"))); });
    for (int i = 0; i < 1000 && !entered; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    REQUIRE(entered);
    std::thread opener([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        release.open();
    });
    server.reset();
    CHECK(handler_finished);  // reset() returned only after the handler did
    opener.join();
    client.join();
}

TEST_CASE("no file descriptors leak across start/stop, failed starts included")
{
    TempDir dir;
    const auto count_fds = [] {
        return std::distance(std::filesystem::directory_iterator("/proc/self/fd"), std::filesystem::directory_iterator{});
    };
    {  // warm up libcurl's and MHD's one-time state
        auto server = start_tcp(echo);
        (void)http_request(get(tcp_url(*server, "/warm")));
    }
    const auto before = count_fds();
    {
        std::ofstream(dir / "file") << "not a socket";
    }
    for (int i = 0; i < 10; ++i) {
        HttpServerOptions options;
        options.tcp_listen = "127.0.0.1:0";
        options.unix_socket = dir / "api.sock";
        auto server = HttpServer::start(options, echo);
        REQUIRE(server);
        CHECK(must(http_request(get(tcp_url(**server, "/x")))).status == 200);
        CHECK(must(http_request(unix_get(*options.unix_socket, "/y"))).status == 200);

        options.unix_socket = dir / "file";  // TCP binds, then the unix socket fails
        CHECK_FALSE(HttpServer::start(options, echo));
    }
    CHECK(count_fds() == before);
}

TEST_CASE("dual stack [::] sees an IPv4 loopback client as loopback")
{
    HttpServerOptions options;
    options.tcp_listen = "[::]:0";
    auto server = HttpServer::start(options, echo);
    if (!server) {
        MESSAGE("no IPv6 here, skipped: " << server.error().describe());
        return;
    }
    auto j = body_json(must(http_request(get(tcp_url(**server, "/mapped")))));  // 127.0.0.1 → ::ffff:127.0.0.1
    CHECK(j["from_loopback"] == true);
}
