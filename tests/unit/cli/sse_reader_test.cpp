// SPDX-License-Identifier: Apache-2.0
#include "nps/cli/sse_reader.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using nps::cli::SseEvent;
using nps::cli::SseReader;

namespace {

std::vector<SseEvent> read_all(const std::vector<std::string>& pieces)
{
    std::vector<SseEvent> events;
    SseReader reader([&](const SseEvent& e) {
        events.push_back(e);
        return true;
    });
    for (const auto& piece : pieces)
        REQUIRE(reader.feed(piece));
    return events;
}

}  // namespace

TEST_CASE("events are dispatched at their blank line, whatever the pieces they arrive in")
{
    const std::string stream = "retry: 2000\n\nid: 1\ndata: {\"a\":1}\n\n: keepalive\n\nid: 2\ndata: x\n\n";
    for (std::size_t cut = 0; cut <= stream.size(); ++cut) {
        CAPTURE(cut);
        const auto events = read_all({stream.substr(0, cut), stream.substr(cut)});
        REQUIRE(events.size() == 2);
        CHECK(events[0].id == "1");
        CHECK(events[0].type == "message");
        CHECK(events[0].data == "{\"a\":1}");
        CHECK(events[1].id == "2");
        CHECK(events[1].data == "x");
    }
}

TEST_CASE("CRLF and CR line ends, several data lines, a named event, the id carrying over")
{
    const auto events = read_all({"id: 7\r\ndata: one\r\ndata: two\r\n\r\nevent: end\rdata:{}\r\r"});
    REQUIRE(events.size() == 2);
    CHECK(events[0].data == "one\ntwo");
    CHECK(events[0].id == "7");
    CHECK(events[1].type == "end");
    CHECK(events[1].data == "{}");
    CHECK(events[1].id == "7");
}

TEST_CASE("an event without data, comments and unknown fields dispatch nothing")
{
    CHECK(read_all({"id: 3\n\n:comment\n\nfoo: bar\n\n"}).empty());
}

TEST_CASE("a handler returning false stops the reader")
{
    int seen = 0;
    SseReader reader([&](const SseEvent&) { return ++seen < 1; });
    CHECK_FALSE(reader.feed("data: a\n\ndata: b\n\n"));
    CHECK(seen == 1);
    CHECK_FALSE(reader.feed("data: c\n\n"));
    CHECK(seen == 1);
}
