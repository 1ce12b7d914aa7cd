// SPDX-License-Identifier: Apache-2.0
#include <fcntl.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <functional>
#include <string>

#include "nps/base/log.hpp"
#include "temp_dir.hpp"

namespace {

// What log::write puts on stderr, captured in a file.
std::string capture(const std::function<void()>& body)
{
    nps::test::TempDir dir;
    const std::string path = dir.file("stderr");
    int file = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    REQUIRE(file >= 0);
    int saved = ::dup(STDERR_FILENO);
    ::dup2(file, STDERR_FILENO);
    body();
    ::dup2(saved, STDERR_FILENO);
    ::close(saved);
    ::close(file);
    std::string text;
    char buffer[4096];
    int in = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    for (ssize_t n; (n = ::read(in, buffer, sizeof buffer)) > 0;)
        text.append(buffer, static_cast<std::size_t>(n));
    ::close(in);
    return text;
}

}  // namespace

TEST_CASE("log lines: text by default, one JSON object per line with log_format json")
{
    std::string text = capture([] { nps::log::info("task t-1: COMPLETED"); });
    CHECK(text == "nps-runner: task t-1: COMPLETED\n");

    nps::log::set_format(nps::log::Format::json);
    std::string json = capture([] {
        nps::log::warning("quote \" backslash \\ newline \n tab \t done");
        nps::log::error("second");
    });
    nps::log::set_format(nps::log::Format::text);
    auto newline = json.find('\n');
    REQUIRE(newline != std::string::npos);
    auto first = nlohmann::json::parse(json.substr(0, newline));
    CHECK(first["level"] == "warning");
    CHECK(first["message"] == "quote \" backslash \\ newline \n tab \t done");
    CHECK(first["time"].get<std::string>().size() == 24);  // 2026-11-29T15:06:27.081Z
    auto second = nlohmann::json::parse(json.substr(newline + 1));
    CHECK(second["level"] == "error");
    CHECK(second["message"] == "second");
}
