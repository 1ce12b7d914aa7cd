// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <random>

#include "nps/supervisor/worker_protocol.hpp"

using nps::supervisor::LineFramer;

namespace {

// Records what the framer emits, with a transcript that must rebuild the input.
struct Recorder : LineFramer::Sink {
    std::string logged;
    std::vector<std::string> lines;
    int oversized_count = 0;
    std::string rebuilt;
    bool finishing = false;

    void log(std::string_view bytes) override
    {
        CHECK_FALSE(bytes.empty());
        logged += bytes;
        rebuilt += bytes;
    }
    void candidate(std::string_view line) override
    {
        lines.emplace_back(line);
        rebuilt += line;
        if (!finishing)
            rebuilt += '\n';
    }
    void oversized() override { ++oversized_count; }
};

Recorder frame_all(const std::string& input, std::size_t chunk, std::size_t max_line = 64)
{
    LineFramer framer(max_line);
    Recorder r;
    for (std::size_t i = 0; i < input.size(); i += chunk)
        framer.feed(std::string_view(input).substr(i, chunk), r);
    r.finishing = true;
    framer.finish(r);
    return r;
}

}  // namespace

TEST_CASE("LineFramer: frames are lines starting with '{', the rest is log")
{
    const std::string input = "hello\n{\"seq\":0}\n  \t{\"x\":1}\r\n[1,2]\n\n   \nworld {not first}\n";
    for (std::size_t chunk : {std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{7}, input.size()}) {
        CAPTURE(chunk);
        Recorder r = frame_all(input, chunk);
        CHECK(r.lines == std::vector<std::string>{"{\"seq\":0}", "  \t{\"x\":1}\r"});
        CHECK(r.logged == "hello\n[1,2]\n\n   \nworld {not first}\n");
        CHECK(r.rebuilt == input);
        CHECK(r.oversized_count == 0);
    }
}

TEST_CASE("LineFramer: a last line without newline is delivered at finish")
{
    Recorder r = frame_all("log\n{\"seq\":0,\"is_final\":true}", 5);
    CHECK(r.lines == std::vector<std::string>{"{\"seq\":0,\"is_final\":true}"});
    CHECK(r.logged == "log\n");
    Recorder blanks = frame_all("x\n   ", 2);
    CHECK(blanks.logged == "x\n   ");
    CHECK(blanks.lines.empty());
}

TEST_CASE("LineFramer: an oversized candidate is reported once and passed on as log")
{
    const std::string big = "{" + std::string(100, 'a') + "}";
    const std::string input = "a\n" + big + "\n{\"ok\":1}\n";
    for (std::size_t chunk : {std::size_t{1}, std::size_t{10}, input.size()}) {
        CAPTURE(chunk);
        Recorder r = frame_all(input, chunk, 64);
        CHECK(r.oversized_count == 1);
        CHECK(r.lines == std::vector<std::string>{"{\"ok\":1}"});
        CHECK(r.logged == "a\n" + big + "\n");
        CHECK(r.rebuilt == input);
    }
    // Exactly the limit is fine.
    const std::string exact = "{" + std::string(62, 'b') + "}";
    Recorder r = frame_all(exact + "\n", 3, 64);
    CHECK(r.oversized_count == 0);
    CHECK(r.lines == std::vector<std::string>{exact});
}

TEST_CASE("LineFramer: log bytes are never held back")
{
    LineFramer framer(64);
    Recorder r;
    framer.feed("no newline yet, and a long log line that goes on", r);
    CHECK(r.logged == "no newline yet, and a long log line that goes on");
    CHECK(framer.buffered() == 0);
    framer.feed(" and on", r);
    CHECK(framer.buffered() == 0);
    framer.feed("\n{\"partial", r);
    CHECK(framer.buffered() == 9);
}

TEST_CASE("LineFramer: random input and chunking keep every byte exactly once")
{
    std::mt19937 rng(42);
    const char alphabet[] = "{} \t\r\nab\"";
    for (int round = 0; round < 300; ++round) {
        std::string input;
        const std::size_t length = rng() % 400;
        for (std::size_t i = 0; i < length; ++i)
            input.push_back(alphabet[rng() % (sizeof alphabet - 1)]);
        LineFramer framer(16);
        Recorder r;
        for (std::size_t i = 0; i < input.size();) {
            std::size_t n = 1 + rng() % 40;
            framer.feed(std::string_view(input).substr(i, n), r);
            i += n;
        }
        r.finishing = true;
        framer.finish(r);
        REQUIRE(r.rebuilt == input);
        for (const auto& line : r.lines) {
            CHECK(line.size() <= 16);
            CHECK(line.find('\n') == std::string::npos);
        }
    }
}
