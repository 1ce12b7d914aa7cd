// SPDX-License-Identifier: Apache-2.0
// The API's HTTP server against hostile clients (issue 14, docs/api.md
// "Limits and timeouts", docs/security.md rows http-slow and http-parse):
// half-open and slow-drip connections are closed at the head deadline and do
// not lock a well-behaved client out; parked long-polls whose clients left are
// released at once; request targets with control bytes or invalid UTF-8 after
// percent-decoding, and ambiguous body framing, get 400 and a closed
// connection without reaching a route.
//
// The daemon runs with a bearer token, sent with every request, so these
// tests hold whether TCP requests need a token by default or not.
#include <doctest/doctest.h>

#include <dirent.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_set>
#include <vector>

#include "raw_http_client.hpp"
#include "runner_process.hpp"

using nps::test::body_of;
using nps::test::http;
using nps::test::RawClient;
using nps::test::status_of;
using nps::test::task_frame;
using Json = nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

namespace {

const std::string kToken = "h-http-robustness-token-0123456789";
const std::string kAuth = "Authorization: Bearer " + kToken + "\r\n";
const std::string kPipe = "/v1/inbox/urn%3Anps%3Aagent%3Aexample.test%3Apipe";

struct Daemon : nps::test::StartedRunner {
    Daemon() : StartedRunner("[api]\ntoken = \"" + kToken + "\"\n") {}

    std::uint16_t port() const
    {
        const std::string url = runner.url();
        return static_cast<std::uint16_t>(std::stoi(url.substr(url.rfind(':') + 1)));
    }

    nps::test::Reply get(const std::string& path) const
    {
        return http("GET", runner.url() + path, std::nullopt, {{"Authorization", "Bearer " + kToken}});
    }
};

// The TCP connections the daemon holds on its API port (any state but
// LISTEN): what 300 parked clients add and must give back. Counted from the
// daemon's own socket inodes matched against /proc/<pid>/net/tcp, so the
// other sockets it opens and closes meanwhile (its spawn pool's socketpairs,
// refilled when the loop is idle) do not count.
long connection_count(pid_t pid, std::uint16_t port)
{
    std::unordered_set<std::string> inodes;
    const std::string fd_dir = "/proc/" + std::to_string(pid) + "/fd";
    DIR* dir = ::opendir(fd_dir.c_str());
    if (dir == nullptr)
        return -1;
    while (const dirent* entry = ::readdir(dir)) {
        char target[64] = {};
        const std::string link = fd_dir + "/" + entry->d_name;
        const std::string_view text(target, std::max<ssize_t>(0, ::readlink(link.c_str(), target, sizeof target - 1)));
        if (text.starts_with("socket:[") && text.ends_with("]"))
            inodes.emplace(text.substr(8, text.size() - 9));
    }
    ::closedir(dir);
    std::ifstream table("/proc/" + std::to_string(pid) + "/net/tcp");
    std::string line;
    std::getline(table, line);  // the header
    long count = 0;
    while (std::getline(table, line)) {
        // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
        std::istringstream fields(line);
        std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
        fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >> timeout >> inode;
        const auto colon = local.rfind(':');
        if (colon == std::string::npos || state == "0A" || !inodes.contains(inode))
            continue;
        if (std::stoul(local.substr(colon + 1), nullptr, 16) == port)
            ++count;
    }
    return count;
}

// GET /healthz, timed; the time goes to the test log.
double healthz_seconds(const Daemon& d, const std::string& while_what)
{
    const auto start = SteadyClock::now();
    const auto reply = d.get("/healthz");
    const double seconds = std::chrono::duration<double>(SteadyClock::now() - start).count();
    MESSAGE("/healthz answered " << reply.status << " in " << seconds << " s while " << while_what);
    CHECK(reply.status == 200);
    return seconds;
}

// True once the server has closed `fd` (EOF or reset), within `seconds`.
bool closed_by_server(int fd, int seconds)
{
    const auto give_up = SteadyClock::now() + std::chrono::seconds(seconds);
    char buffer[4096];
    while (SteadyClock::now() < give_up) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 200) <= 0)
            continue;
        const ssize_t n = ::recv(fd, buffer, sizeof buffer, MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
            return true;
    }
    return false;
}

// A raw request on a fresh connection, kept alive unless the server closes:
// the whole answer, and whether the server closed the connection after it.
struct RawAnswer {
    int status = 0;
    Json body;
    std::string text;
    bool closed = false;
};

RawAnswer raw_request(const Daemon& d, const std::string& text)
{
    RawClient client(d.port());
    client.send_text(text);
    RawAnswer answer;
    const auto give_up = SteadyClock::now() + std::chrono::seconds(30);
    char buffer[4096];
    while (SteadyClock::now() < give_up) {
        pollfd p{client.fd(), POLLIN, 0};
        if (::poll(&p, 1, 200) <= 0) {
            // Answered and kept open: stop waiting once the answer is whole.
            if (answer.text.find("\r\n\r\n") != std::string::npos && !body_of(answer.text).is_discarded())
                break;
            continue;
        }
        const ssize_t n = ::recv(client.fd(), buffer, sizeof buffer, 0);
        if (n <= 0) {
            answer.closed = true;
            break;
        }
        answer.text.append(buffer, static_cast<std::size_t>(n));
    }
    answer.status = status_of(answer.text);
    answer.body = body_of(answer.text);
    return answer;
}

std::string get_request(const std::string& target)
{
    return "GET " + target + " HTTP/1.1\r\nHost: localhost\r\n" + kAuth + "\r\n";
}

long depth_of_pipe(const Daemon& d)
{
    const auto reply = d.get(kPipe + "/depth");
    REQUIRE(reply.status == 200);
    return reply.body["depth"].get<long>();
}

}  // namespace

TEST_CASE("300 half-open connections: /healthz is answered, and they are closed at the head deadline")
{
    Daemon d;
    std::vector<std::unique_ptr<RawClient>> half_open;
    for (int i = 0; i < 300; ++i) {
        half_open.push_back(std::make_unique<RawClient>(d.port()));
        if (i % 2 == 1)
            half_open.back()->send_text("GET /healthz HTTP/1.1\r\nHost: loc");  // half a head; even ones: nothing
    }
    CHECK(healthz_seconds(d, "300 half-open connections are open") < 5.0);
    // The head deadline is 5 s; allow the loaded machine plenty more.
    const auto start = SteadyClock::now();
    int closed = 0;
    for (auto& client : half_open)
        closed += closed_by_server(client->fd(), 60) ? 1 : 0;
    MESSAGE("the server closed " << closed << " of 300 half-open connections within "
                                 << std::chrono::duration<double>(SteadyClock::now() - start).count() << " s");
    CHECK(closed == 300);
    CHECK(healthz_seconds(d, "after the half-open connections") < 5.0);
}

TEST_CASE("a client dripping its request head a byte a second is closed at the head deadline")
{
    Daemon d;
    RawClient drip(d.port());
    const std::string head = get_request("/healthz");
    const auto start = SteadyClock::now();
    bool closed = false;
    // An idle timeout never fires on it (a byte a second); the head deadline (5 s) must.
    for (std::size_t i = 0; i < head.size() - 2 && SteadyClock::now() - start < std::chrono::seconds(40); ++i) {
        if (::send(drip.fd(), head.data() + i, 1, MSG_NOSIGNAL) != 1 || closed_by_server(drip.fd(), 1)) {
            closed = true;
            break;
        }
    }
    const double seconds = std::chrono::duration<double>(SteadyClock::now() - start).count();
    MESSAGE("the dripping client was closed after " << seconds << " s (" << head.size() << "-byte head)");
    CHECK(closed);
    CHECK(seconds < 30.0);
}

TEST_CASE("300 abandoned long-polls are released at once; /healthz is answered meanwhile")
{
    Daemon d;
    REQUIRE(d.get("/healthz").status == 200);
    const auto connections = [&d] { return connection_count(d.runner.pid(), d.port()); };
    // The kept-alive /healthz connection, unless the daemon already saw it go.
    const long before = connections();
    REQUIRE(before >= 0);
    REQUIRE(before <= 1);
    {
        std::vector<std::unique_ptr<RawClient>> polls;
        for (int i = 0; i < 300; ++i) {
            polls.push_back(std::make_unique<RawClient>(d.port()));
            polls.back()->send_text(get_request(kPipe + "?wait=60"));
        }
        // All parked (their connections suspended): the daemon holds the 300
        // (and maybe the /healthz one, until its 5 s head deadline).
        long during = 0;
        for (int i = 0; i < 600 && (during = connections()) < 300; ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        REQUIRE(during >= 300);
    }  // every client closes at once
    const auto start = SteadyClock::now();
    CHECK(healthz_seconds(d, "300 long-polls were just abandoned") < 5.0);
    long after = 0;
    while ((after = connections()) > 2 && SteadyClock::now() - start < std::chrono::seconds(30))
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const double seconds = std::chrono::duration<double>(SteadyClock::now() - start).count();
    MESSAGE("daemon connections: " << before << " before, " << after << " " << seconds
                               << " s after the 300 clients left (the long-polls wait 60 s)");
    CHECK(after <= 2);  // the /healthz connections, kept alive
    CHECK(seconds < 30.0);
}

TEST_CASE("a control byte or invalid UTF-8 in the decoded target is 400 and reaches no route")
{
    Daemon d;
    REQUIRE(http("POST", d.runner.url() + kPipe, task_frame("t-pipe"), {{"Authorization", "Bearer " + kToken}}).status ==
            201);
    REQUIRE(depth_of_pipe(d) == 1);
    const std::vector<std::string> targets = {
        kPipe + "%00zz/depth",            // %00 would truncate the route to a peek of pipe
        kPipe + "%00",                    // … or to pipe itself
        kPipe + "%01/depth",
        kPipe + "%7f/depth",
        kPipe + "%ff/depth",              // not UTF-8
        kPipe + "%C3%28/depth",           // a broken two-byte sequence
        kPipe + "%E0%80%AF/depth",        // overlong '/'
        kPipe + "/depth?x=%00",           // query values are checked too
        kPipe + "?wait=1%0a",
        kPipe + "\x01/depth",             // a raw control byte
    };
    for (const auto& target : targets) {
        CAPTURE(target);
        const RawAnswer answer = raw_request(d, get_request(target));
        INFO(answer.text);
        CHECK(answer.status == 400);
        CHECK(answer.body.is_object());
        if (answer.body.is_object())
            CHECK(answer.body["error"] == "NPS-CLIENT-BAD-FRAME");
        CHECK(answer.body.find("messages") == answer.body.end());
        CHECK(answer.body.find("depth") == answer.body.end());
        CHECK(answer.closed);
    }
    // A deposit or an ack on such a target changes nothing.
    const std::string frame = task_frame("t-nul");
    for (const std::string& target : {kPipe + "%00zz", kPipe + "%00/1/ack"}) {
        CAPTURE(target);
        const RawAnswer answer =
            raw_request(d, "POST " + target + " HTTP/1.1\r\nHost: localhost\r\n" + kAuth +
                               "Content-Type: application/json\r\nContent-Length: " + std::to_string(frame.size()) +
                               "\r\n\r\n" + frame);
        CHECK(answer.status == 400);
        CHECK(answer.closed);
    }
    CHECK(depth_of_pipe(d) == 1);
    // Well-formed UTF-8, escaped or not, still reaches its route.
    CHECK(d.get("/healthz?note=caf%C3%A9").status == 200);
    CHECK(d.get(kPipe + "/depth").status == 200);
}

TEST_CASE("ambiguous body framing is 400 and the connection closed; one length, or equal ones, are served")
{
    Daemon d;
    const std::string frame = task_frame("t-frame");
    const std::string head = "POST " + kPipe + " HTTP/1.1\r\nHost: localhost\r\n" + kAuth +
                             "Content-Type: application/json\r\n";
    const std::string length = std::to_string(frame.size());

    SUBCASE("two different Content-Length headers")
    {
        const RawAnswer answer = raw_request(
            d, head + "Content-Length: " + length + "\r\nContent-Length: 5\r\n\r\n" + frame);
        INFO(answer.text);
        CHECK(answer.status == 400);
        CHECK(answer.body["error"] == "NPS-CLIENT-BAD-FRAME");
        CHECK(answer.closed);
        CHECK(depth_of_pipe(d) == 0);
    }
    SUBCASE("a Content-Length list with different values")
    {
        const RawAnswer answer = raw_request(d, head + "Content-Length: " + length + ", 5\r\n\r\n" + frame);
        INFO(answer.text);
        CHECK(answer.status == 400);
        CHECK(answer.closed);
        CHECK(depth_of_pipe(d) == 0);
    }
    SUBCASE("Content-Length with Transfer-Encoding")
    {
        std::string chunked;
        char size[32];
        std::snprintf(size, sizeof size, "%zx\r\n", frame.size());
        chunked = size + frame + "\r\n0\r\n\r\n";
        const RawAnswer answer = raw_request(
            d, head + "Content-Length: " + length + "\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked);
        INFO(answer.text);
        CHECK(answer.status == 400);
        CHECK(answer.body["error"] == "NPS-CLIENT-BAD-FRAME");
        CHECK(answer.closed);
        CHECK(depth_of_pipe(d) == 0);
    }
    SUBCASE("two equal Content-Length headers count as one")
    {
        const RawAnswer answer = raw_request(
            d, head + "Content-Length: " + length + "\r\nContent-Length: " + length + "\r\n\r\n" + frame);
        INFO(answer.text);
        CHECK(answer.status == 201);
        CHECK(depth_of_pipe(d) == 1);
    }
    SUBCASE("a normal request, kept alive")
    {
        const RawAnswer answer = raw_request(d, head + "Content-Length: " + length + "\r\n\r\n" + frame);
        INFO(answer.text);
        CHECK(answer.status == 201);
        CHECK_FALSE(answer.closed);
        CHECK(depth_of_pipe(d) == 1);
    }
}

TEST_CASE("a request head larger than the connection's memory is refused cleanly")
{
    Daemon d;
    const RawAnswer answer =
        raw_request(d, "GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Big: " + std::string(64 * 1024, 'a') + "\r\n\r\n");
    INFO(answer.text.substr(0, 200));
    CHECK((answer.status == 431 || answer.status == 413 || (answer.status == 0 && answer.closed)));
    CHECK(answer.closed);
    const RawAnswer long_line = raw_request(d, get_request("/healthz?x=" + std::string(64 * 1024, 'b')));
    INFO(long_line.text.substr(0, 200));
    CHECK((long_line.status == 414 || long_line.status == 431 || (long_line.status == 0 && long_line.closed)));
    CHECK(healthz_seconds(d, "after oversized heads") < 5.0);
}
