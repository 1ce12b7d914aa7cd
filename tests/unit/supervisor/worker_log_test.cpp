// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "nps/supervisor/worker_log.hpp"
#include "temp_dir.hpp"

using namespace nps::supervisor;
using nps::test::TempDir;

namespace {

std::string slurp(const std::string& path)
{
    std::ifstream in(path);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
}

bool exists(const std::string& path)
{
    return ::access(path.c_str(), F_OK) == 0;
}

}  // namespace

TEST_CASE("nothing is created until the first write")
{
    TempDir dir("nps-log");
    RotatingLog log(dir / "w1/stdout.log", {.max_bytes = 100, .keep = 1});
    CHECK_FALSE(exists(dir / "w1"));
    log.write("");
    CHECK_FALSE(exists(dir / "w1"));
    log.write("hello\n");
    CHECK(slurp(dir / "w1/stdout.log") == "hello\n");
    CHECK(log.written() == 6);
}

TEST_CASE("rotation keeps (keep + 1) files of max_bytes, newest in the plain name")
{
    TempDir dir("nps-log");
    const std::string path = dir / "w/stderr.log";
    RotatingLog log(path, {.max_bytes = 10, .keep = 2});
    std::string all;
    for (int i = 0; i < 7; ++i) {
        std::string piece = std::string(1, static_cast<char>('a' + i)) + std::string(4, '.');  // 5 bytes
        all += piece;
        log.write(piece);
    }
    // 35 bytes written; at most 30 survive, so bytes 0-9 are gone.
    CHECK(slurp(path) == all.substr(30));
    CHECK(slurp(path + ".1") == all.substr(20, 10));
    CHECK(slurp(path + ".2") == all.substr(10, 10));
    CHECK_FALSE(exists(path + ".3"));
    CHECK(log.written() == 35);
    CHECK(log.dropped() == 0);

    auto tail = read_log_tail(path, 12);
    REQUIRE(tail);
    CHECK(*tail == all.substr(35 - 12));
    auto everything = read_log_tail(path, 1000);
    REQUIRE(everything);
    CHECK(*everything == all.substr(10));
}

TEST_CASE("one write larger than everything that can survive")
{
    TempDir dir("nps-log");
    const std::string path = dir / "w/stdout.log";
    RotatingLog log(path, {.max_bytes = 8, .keep = 1});
    std::string big;
    for (int i = 0; i < 100; ++i)
        big.push_back(static_cast<char>('0' + i % 10));
    log.write(big);
    CHECK(log.written() == 100);
    auto tail = read_log_tail(path, 100);
    REQUIRE(tail);
    CHECK(*tail == big.substr(100 - 16));
    CHECK(slurp(path).size() == 8);
}

TEST_CASE("keep = 0: the head is kept, then a marker, then output is dropped")
{
    TempDir dir("nps-log");
    const std::string path = dir / "w/stdout.log";
    RotatingLog log(path, {.max_bytes = 10, .keep = 0});
    log.write("0123456");
    log.write("789abc");
    log.write("more");
    const std::string text = slurp(path);
    CHECK(text.rfind("0123456789", 0) == 0);
    CHECK(text.find("limit of 10 bytes") != std::string::npos);
    CHECK(log.written() == 10);
    CHECK(log.dropped() == 3 + 4);
    CHECK_FALSE(exists(path + ".1"));
}

TEST_CASE("an I/O error is kept, output is dropped and counted")
{
    TempDir dir("nps-log");
    RotatingLog log(dir / "missing/parent/stdout.log", {.max_bytes = 10, .keep = 1});
    log.write("abc");
    REQUIRE(log.error());
    CHECK(log.error()->message.find("Failed to create log directory") != std::string::npos);
    log.write("de");
    CHECK(log.dropped() == 5);
}

TEST_CASE("read_log_tail of a log that does not exist is empty")
{
    TempDir dir("nps-log");
    auto tail = read_log_tail(dir / "none/stdout.log", 100);
    REQUIRE(tail);
    CHECK(tail->empty());
}
