// SPDX-License-Identifier: Apache-2.0
// LoopHttpServer on a real event::EventLoop (through net::LoopServer),
// the loop running on one test thread: real HTTP over loopback TCP and a unix
// socket, answers given at once or later through a Responder.
#include <doctest/doctest.h>

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <deque>
#include <filesystem>
#include <future>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "net_test_support.hpp"
#include "nps/net/loop_server.hpp"
#include "nps/base/unique_fd.hpp"
#include "nps/event/event_loop.hpp"
#include "raw_http_client.hpp"

using namespace nps::net;
using namespace nps::net::test;
using nps::test::body_of;
using nps::test::RawClient;
using nps::test::status_of;

namespace {

// An EventLoop on its own thread serving one LoopHttpServer. on_loop() runs
// a function on the loop's thread and waits for it.
class LoopThread {
public:
    LoopThread(HttpServerOptions options, AsyncHttpHandler handler)
    {
        auto loop = nps::event::EventLoop::create();
        REQUIRE(loop);
        loop_ = std::move(*loop);
        wake_ = nps::UniqueFd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
        REQUIRE(wake_);
        REQUIRE(loop_->add_fd(wake_.get(), EPOLLIN, [this](std::uint32_t) { run_posted(); }));
        auto server = LoopHttpServer::start(options, std::move(handler));
        if (!server)
            throw std::runtime_error(server.error().describe());
        port_ = (*server)->tcp_port();
        auto bound = nps::net::LoopServer::attach(*loop_, std::move(*server));
        REQUIRE(bound);
        bound_ = std::move(*bound);
        thread_ = std::thread([this] { (void)loop_->run(); });
    }

    ~LoopThread()
    {
        stop();
        loop_->remove_fd(wake_.get());
    }

    // Destroys the server (on the loop) and ends the loop thread.
    void stop()
    {
        if (!thread_.joinable())
            return;
        on_loop([this] {
            bound_.reset();
            loop_->stop();
        });
        thread_.join();
    }

    template <class F>
    auto on_loop(F f) -> decltype(f())
    {
        std::packaged_task<decltype(f())()> task(std::move(f));
        auto result = task.get_future();
        {
            std::lock_guard lock(mutex_);
            posted_.emplace_back([&task] { task(); });
        }
        std::uint64_t one = 1;
        REQUIRE(::write(wake_.get(), &one, sizeof one) == sizeof one);
        return result.get();
    }

    std::uint16_t port() const { return port_; }
    std::string url(const std::string& target) const { return "http://127.0.0.1:" + std::to_string(port_) + target; }
    std::size_t pending() { return on_loop([this] { return bound_->server().pending_requests(); }); }
    std::size_t connections() { return on_loop([this] { return bound_->server().open_connections(); }); }

    // Waits (at most 30 s) until `count` requests are held.
    bool wait_pending(std::size_t count)
    {
        for (int i = 0; i < 3000; ++i) {
            if (pending() == count)
                return true;
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        return false;
    }

private:
    void run_posted()
    {
        std::uint64_t count = 0;
        (void)::read(wake_.get(), &count, sizeof count);
        std::deque<std::function<void()>> posted;
        {
            std::lock_guard lock(mutex_);
            posted.swap(posted_);
        }
        for (auto& f : posted)
            f();
    }

    std::unique_ptr<nps::event::EventLoop> loop_;
    std::unique_ptr<nps::net::LoopServer> bound_;
    nps::UniqueFd wake_;
    std::mutex mutex_;
    std::deque<std::function<void()>> posted_;
    std::uint16_t port_ = 0;
    std::thread thread_;
};

HttpServerOptions tcp_options()
{
    HttpServerOptions options;
    options.tcp_listen = "127.0.0.1:0";
    return options;
}

// The synchronous echo handler, answering at once.
void echo_now(const HttpRequest& request, Responder responder)
{
    responder(echo(request));
}

}  // namespace

TEST_CASE("loop mode: TCP and unix socket requests are answered on the loop")
{
    TempDir dir;
    HttpServerOptions options = tcp_options();
    options.unix_socket = dir.path() + "/run/api.sock";
    std::thread::id handler_thread;
    LoopThread loop(options, [&](const HttpRequest& request, Responder responder) {
        handler_thread = std::this_thread::get_id();
        echo_now(request, std::move(responder));
    });

    ClientRequest request = get(loop.url("/a/b?x=1"));
    request.method = "PUT";
    request.body = "hello";
    auto response = must(http_request(request));
    CHECK(response.status == 200);
    CHECK(response.headers["x-reply"] == "yes");
    auto j = body_json(response);
    CHECK(j["method"] == "PUT");
    CHECK(j["path"] == "/a/b");
    CHECK(j["query"]["x"] == "1");
    CHECK(j["body"] == "hello");
    CHECK(j["from_loopback"] == true);
    CHECK(j["from_unix_socket"] == false);

    ClientRequest over_unix = get("http://localhost/u?status=409");
    over_unix.unix_socket = *options.unix_socket;
    auto unix_response = must(http_request(over_unix));
    CHECK(unix_response.status == 409);
    CHECK(body_json(unix_response)["from_unix_socket"] == true);

    CHECK(handler_thread == loop.on_loop([] { return std::this_thread::get_id(); }));
    loop.stop();
    CHECK_FALSE(std::filesystem::exists(*options.unix_socket));
}

TEST_CASE("loop mode: body size cap")
{
    HttpServerOptions options = tcp_options();
    options.max_body_bytes = 1000;
    LoopThread loop(options, echo_now);
    ClientRequest request = get(loop.url("/b"));
    request.method = "POST";

    SUBCASE("exactly the cap is accepted")
    {
        request.body = std::string(1000, 'a');
        CHECK(body_json(must(http_request(request)))["body_size"] == 1000);
    }
    SUBCASE("a large upload is drained and answered 413")
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
        CHECK(must(http_request(request)).status == 413);
    }
    CHECK(must(http_request(get(loop.url("/after")))).status == 200);
}

TEST_CASE("loop mode: a throwing handler or a dropped Responder yields 500")
{
    LoopThread loop(tcp_options(), [](const HttpRequest& request, Responder responder) {
        if (request.path == "/throw")
            throw std::runtime_error("boom");
        if (request.path == "/throw-after-keeping") {
            static std::vector<Responder> kept;  // loop thread only
            kept.push_back(responder);
            throw 42;
        }
        if (request.path == "/drop")
            return;  // every Responder gone unanswered
        responder(echo(request));
    });
    for (const char* path : {"/throw", "/throw-after-keeping", "/drop"}) {
        CAPTURE(path);
        auto response = must(http_request(get(loop.url(path))));
        CHECK(response.status == 500);
        CHECK(response.body ==
              R"({"status":"NPS-SERVER-INTERNAL","error":"NPS-SERVER-INTERNAL","message":"internal error"})");
    }
    CHECK(must(http_request(get(loop.url("/fine")))).status == 200);
    CHECK(loop.pending() == 0);
}

TEST_CASE("loop mode: 200 held requests do not delay others and are answered later")
{
    std::vector<Responder> held;  // loop thread only
    LoopThread loop(tcp_options(), [&](const HttpRequest& request, Responder responder) {
        if (request.path == "/hold")
            held.push_back(std::move(responder));
        else
            responder(echo(request));
    });
    constexpr int kHeld = 200;
    std::vector<std::unique_ptr<RawClient>> clients;
    for (int i = 0; i < kHeld; ++i) {
        clients.push_back(std::make_unique<RawClient>(loop.port()));
        clients.back()->send_get("/hold");
    }
    REQUIRE(loop.wait_pending(kHeld));
    for (int i = 0; i < 20; ++i)
        CHECK(must(http_request(get(loop.url("/other")))).status == 200);
    for (auto& client : clients)
        CHECK_FALSE(client->readable(0));

    // Answered from outside any dispatch (as a timer or a deposit would).
    loop.on_loop([&] {
        int n = 0;
        for (auto& responder : held) {
            HttpResponse response;
            response.status = 200;
            response.body = R"({"n":)" + std::to_string(n++) + "}";
            CHECK(responder.pending());
            CHECK(responder.respond(response));
            CHECK_FALSE(responder.respond(response));  // only the first answer counts
            CHECK_FALSE(responder.pending());
        }
    });
    std::vector<bool> seen(kHeld, false);
    for (auto& client : clients) {
        const std::string response = client->read_all();
        REQUIRE_MESSAGE(status_of(response) == 200, response);
        const int n = body_of(response)["n"];
        REQUIRE(n >= 0);
        REQUIRE(n < kHeld);
        seen[static_cast<std::size_t>(n)] = true;
    }
    CHECK(std::find(seen.begin(), seen.end(), false) == seen.end());
    CHECK(loop.pending() == 0);
    loop.on_loop([&] { held.clear(); });
}

TEST_CASE("loop mode: a client leaving while held, and a server stopping with held requests")
{
    std::vector<Responder> held;  // loop thread only
    LoopThread loop(tcp_options(), [&](const HttpRequest& request, Responder responder) {
        if (request.path == "/hold")
            held.push_back(std::move(responder));
        else
            responder(echo(request));
    });
    {
        RawClient leaving(loop.port());
        leaving.send_get("/hold");
        REQUIRE(loop.wait_pending(1));
    }
    // Answering the departed client is harmless (MHD only notices on resume).
    loop.on_loop([&] {
        HttpResponse response;
        held.front().respond(response);
    });
    REQUIRE(loop.wait_pending(0));
    CHECK(must(http_request(get(loop.url("/fine")))).status == 200);

    RawClient waiting(loop.port());
    waiting.send_get("/hold");
    REQUIRE(loop.wait_pending(1));
    loop.stop();  // destroys the server with the request held
    CHECK(waiting.read_all().empty());  // closed without an answer
    CHECK_FALSE(held.back().pending());
    CHECK_FALSE(held.back().respond(HttpResponse{}));  // a no-op now
}

TEST_CASE("loop mode: an idle connection is closed after the connection timeout")
{
    HttpServerOptions options = tcp_options();
    options.connection_timeout_seconds = 1;
    LoopThread loop(options, echo_now);
    RawClient idle(loop.port());
    idle.send_text("GET /slow HTTP/1.1\r\nHo");  // never finished
    CHECK(idle.read_all().empty());  // closed by the server's timeout (nothing else closes it)
    CHECK(must(http_request(get(loop.url("/fine")))).status == 200);
}

TEST_CASE("loop mode: a slow client does not stall others")
{
    LoopThread loop(tcp_options(), echo_now);
    RawClient slow(loop.port());
    slow.send_text("POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\nConnection: close\r\n\r\nabc");
    for (int i = 0; i < 5; ++i)
        CHECK(must(http_request(get(loop.url("/fast")))).status == 200);
    slow.send_text("defghij");
    const std::string response = slow.read_all();
    REQUIRE_MESSAGE(status_of(response) == 200, response);
    CHECK(body_of(response)["body"] == "abcdefghij");
}

TEST_CASE("loop mode: held requests count towards max_connections")
{
    HttpServerOptions options = tcp_options();
    options.max_connections = 2;
    std::vector<Responder> held;  // loop thread only
    LoopThread loop(options, [&](const HttpRequest& request, Responder responder) {
        if (request.path == "/hold")
            held.push_back(std::move(responder));
        else
            responder(echo(request));
    });
    RawClient first(loop.port());
    RawClient second(loop.port());
    first.send_get("/hold");
    second.send_get("/hold");
    REQUIRE(loop.wait_pending(2));
    // At the cap with every connection inside a request (none to evict), a
    // new connection is refused: closed at once, unanswered.
    RawClient third(loop.port());
    CHECK(third.read_all().empty());
    loop.on_loop([&] {
        for (auto& responder : held)
            responder(HttpResponse{});
        held.clear();
    });
    CHECK(status_of(first.read_all()) == 200);
    CHECK(status_of(second.read_all()) == 200);
    RawClient fourth(loop.port());
    fourth.send_get("/third");
    const std::string response = fourth.read_all();
    REQUIRE_MESSAGE(status_of(response) == 200, response);
    CHECK(body_of(response)["path"] == "/third");
}

// --- streamed answers (ResponseStream) ---------------------------------------

namespace {

// Waits (at most 10 s) until `done()` holds, asked on the loop's thread.
template <class F>
bool eventually(LoopThread& loop, F done)
{
    for (int i = 0; i < 1000; ++i) {
        if (loop.on_loop(done))
            return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
}

// A handler that answers /stream with a new stream, kept in `streams`.
AsyncHttpHandler streaming_handler(std::vector<std::shared_ptr<ResponseStream>>& streams,
                                   std::size_t max_buffered = nps::limits::kMaxHttpStreamBufferBytes)
{
    return [&streams, max_buffered](const HttpRequest& request, Responder responder) {
        if (request.path != "/stream")
            return responder(echo(request));
        HttpResponse response;
        response.content_type = "text/plain";
        response.stream = std::make_shared<ResponseStream>(max_buffered);
        streams.push_back(response.stream);
        responder(std::move(response));
    };
}

}  // namespace

TEST_CASE("loop mode: a streamed answer goes out as it is written and ends with end()")
{
    std::vector<std::shared_ptr<ResponseStream>> streams;  // loop thread only
    LoopThread loop(tcp_options(), streaming_handler(streams));

    std::mutex mutex;
    std::string received;
    std::promise<ClientResponse> answer;
    std::thread client([&] {
        ClientRequest request = get(loop.url("/stream"));
        request.on_data = [&](std::string_view piece) {
            std::lock_guard lock(mutex);
            received.append(piece);
            return true;
        };
        answer.set_value(must(http_request(request)));
    });
    const auto received_now = [&] {
        std::lock_guard lock(mutex);
        return received;
    };
    REQUIRE(eventually(loop, [&] { return streams.size() == 1; }));
    loop.on_loop([&] { CHECK(streams[0]->write("first\n")); });
    // The first piece arrives while the answer is still open.
    for (int i = 0; i < 1000 && received_now() != "first\n"; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    CHECK(received_now() == "first\n");
    // Requests on other connections are answered meanwhile.
    CHECK(must(http_request(get(loop.url("/other")))).status == 200);
    loop.on_loop([&] {
        CHECK(streams[0]->write("second\n"));
        streams[0]->end();
        CHECK_FALSE(streams[0]->write("too late\n"));
    });
    const ClientResponse response = answer.get_future().get();
    client.join();
    CHECK(response.status == 200);
    CHECK(response.headers.at("transfer-encoding") == "chunked");
    CHECK(received_now() == "first\nsecond\n");
    CHECK(loop.on_loop([&] { return streams[0]->gone(); }) == false);  // it ended; nobody left
}

TEST_CASE("loop mode: a streamed answer's client leaving is noticed at once")
{
    std::vector<std::shared_ptr<ResponseStream>> streams;  // loop thread only
    bool told = false;                                     // loop thread only
    LoopThread loop(tcp_options(), streaming_handler(streams));
    {
        RawClient client(loop.port());
        client.send_get("/stream");
        REQUIRE(eventually(loop, [&] { return streams.size() == 1; }));
        loop.on_loop([&] {
            streams[0]->on_gone([&told] { told = true; });
            CHECK(streams[0]->write("hello\n"));
        });
        REQUIRE(client.readable(5000));
    }  // the client closes while the stream waits for data
    CHECK(eventually(loop, [&] { return told && streams[0]->gone(); }));
    CHECK_FALSE(loop.on_loop([&] { return streams[0]->write("anyone?\n"); }));
    for (int i = 0; i < 500 && loop.connections() != 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    CHECK(loop.connections() == 0);
}

TEST_CASE("loop mode: a reader that stops reading is dropped at the buffer cap, not buffered without end")
{
    std::vector<std::shared_ptr<ResponseStream>> streams;  // loop thread only
    LoopThread loop(tcp_options(), streaming_handler(streams, 64 * 1024));
    RawClient client(loop.port());  // never reads
    client.send_get("/stream");
    REQUIRE(eventually(loop, [&] { return streams.size() == 1; }));
    // The socket buffers take some; past them and the 64 KiB cap the writer is told.
    const std::string piece(16 * 1024, 'x');
    bool refused = false;
    for (int i = 0; i < 4096 && !refused; ++i) {
        refused = !loop.on_loop([&] { return streams[0]->write(piece); });
        if (i % 64 == 63)
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    CHECK(refused);
    CHECK(loop.on_loop([&] { return streams[0]->gone(); }));
    // The server closed the connection: the client reads what had been sent, then EOF.
    CHECK(status_of(client.read_all()) == 200);
}

TEST_CASE("loop mode: stopping the server ends open streams and tells their producers")
{
    std::vector<std::shared_ptr<ResponseStream>> streams;  // loop thread only
    bool told = false;
    LoopThread loop(tcp_options(), streaming_handler(streams));
    RawClient client(loop.port());
    client.send_get("/stream");
    REQUIRE(eventually(loop, [&] { return streams.size() == 1; }));
    loop.on_loop([&] { streams[0]->on_gone([&told] { told = true; }); });
    loop.stop();
    CHECK(told);
    CHECK(streams[0]->gone());
    (void)client.read_all();  // returns: the connection was closed (read_all fails after 60 s otherwise)
}
