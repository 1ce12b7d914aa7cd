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
    std::string text = capture([] {
        nps::log::info("task t-1: COMPLETED", {.task_id = "t-1"});
        nps::log::warning("disk nearly full");
    });
    CHECK(text == "nps-runner: info: task t-1: COMPLETED\nnps-runner: warning: disk nearly full\n");

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
    CHECK_FALSE(second.contains("task_id"));  // no context: no fields
}

TEST_CASE("JSON log lines carry the context's fields that apply")
{
    nps::log::set_format(nps::log::Format::json);
    std::string json = capture([] {
        nps::log::info("worker started", {.task_id = "t-\"1", .node_id = "fetch", .worker = "w-9-2",
                                          .agent = "urn:nps:agent:example.com:fetch"});
        nps::log::info("task only", {.task_id = "t-2"});
    });
    nps::log::set_format(nps::log::Format::text);
    const auto newline = json.find('\n');
    REQUIRE(newline != std::string::npos);
    const auto full = nlohmann::json::parse(json.substr(0, newline));
    CHECK(full["task_id"] == "t-\"1");
    CHECK(full["node_id"] == "fetch");
    CHECK(full["worker"] == "w-9-2");
    CHECK(full["agent"] == "urn:nps:agent:example.com:fetch");
    const auto partial = nlohmann::json::parse(json.substr(newline + 1));
    CHECK(partial["task_id"] == "t-2");
    CHECK_FALSE(partial.contains("node_id"));
    CHECK_FALSE(partial.contains("worker"));
}
