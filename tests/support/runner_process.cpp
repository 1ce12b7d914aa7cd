// SPDX-License-Identifier: Apache-2.0
#include "runner_process.hpp"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>

#include "pg_scratch.hpp"

namespace nps::test {

void write_file(const std::string& path, const std::string& text)
{
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    REQUIRE(out.good());
    out << text;
}

std::string read_file(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

std::string runner_binary()
{
    const char* bin = std::getenv("NPS_RUNNER_BIN");
    REQUIRE_MESSAGE(bin != nullptr, "NPS_RUNNER_BIN is not set (run through meson test)");
    return bin;
}

namespace {

// Base URL of each running daemon → its generated token, for http().
std::mutex tokens_mutex;
std::map<std::string, std::string> tokens_by_url;

void register_token(const std::string& url, const std::string& token)
{
    std::lock_guard lock(tokens_mutex);
    if (token.empty())
        tokens_by_url.erase(url);
    else
        tokens_by_url[url] = token;
}

std::string token_for(const std::string& url)
{
    std::lock_guard lock(tokens_mutex);
    for (const auto& [base, token] : tokens_by_url)
        if (url.compare(0, base.size(), base) == 0 && (url.size() == base.size() || url[base.size()] == '/' ||
                                                       url[base.size()] == '?'))
            return token;
    return {};
}

bool names_authorization(const std::vector<std::pair<std::string, std::string>>& headers)
{
    return std::any_of(headers.begin(), headers.end(), [](const auto& header) {
        std::string name = header.first;
        std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
        return name == "authorization";
    });
}

Reply raw_http(const std::string& method, const std::string& url, const std::optional<std::string>& body,
               std::vector<std::pair<std::string, std::string>> headers, const std::optional<std::string>& unix_socket);

}  // namespace

std::string generated_token(const std::string& state_dir)
{
    std::string text = read_file(state_dir + "/api.token");
    return text.substr(0, text.find('\n'));
}

RunnerProcess::RunnerProcess(RunnerOptions options) : options_(std::move(options)) {}

RunnerProcess::~RunnerProcess()
{
    kill_hard();
}

std::string RunnerProcess::log() const
{
    return read_file(log_path_);
}

bool RunnerProcess::start()
{
    const std::string& dir = options_.state_dir;
    const std::string config = dir + "/" + options_.config_name;
    write_file(config, options_.config_text);
    log_path_ = dir + "/serve-" + std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()) + ".log";
    socket_ = options_.unix_socket ? dir + "/api.sock" : "";
    std::vector<std::string> args = {runner_binary(), "serve", "--config", config, "--state-dir", dir,
                                     "--listen", options_.listen, "--socket", options_.unix_socket ? socket_ : "none"};
    args.insert(args.end(), options_.extra_args.begin(), options_.extra_args.end());
    // A PostgreSQL pass (pg_scratch.hpp): each state directory's store is a
    // fresh schema of the test server, kept across restarts.
    if (!nps::test::pg_test_url().empty() &&
        std::find(options_.extra_args.begin(), options_.extra_args.end(), "--store") == options_.extra_args.end()) {
        static std::map<std::string, std::unique_ptr<nps::test::PgScratchSchema>> schemas;
        auto& schema = schemas[dir];
        if (!schema)
            schema = std::make_unique<nps::test::PgScratchSchema>(nps::test::pg_test_url());
        args.push_back("--store");
        args.push_back(schema->url());
    }

    pid_ = ::fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
        int fd = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        ::dup2(fd, 1);
        ::dup2(fd, 2);
        std::vector<char*> argv;
        for (auto& a : args)
            argv.push_back(a.data());
        argv.push_back(nullptr);
        ::execv(argv[0], argv.data());
        ::_exit(127);
    }
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    while (std::chrono::steady_clock::now() < deadline) {
        int status = 0;
        if (::waitpid(pid_, &status, WNOHANG) == pid_) {
            pid_ = -1;
            return false;
        }
        std::string text = log();
        if (text.find("ready") != std::string::npos) {
            auto at = text.find("listening on http://");
            if (at != std::string::npos) {
                auto end = text.find('\n', at);
                url_ = text.substr(at + 13, end - at - 13);
            }
            token_ = generated_token(dir);
            if (!url_.empty())
                register_token(url_, token_);
            return true;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
}

int RunnerProcess::stop()
{
    if (pid_ <= 0)
        return -1;
    ::kill(pid_, SIGTERM);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    register_token(url_, "");
    return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
}

void RunnerProcess::kill_hard()
{
    if (pid_ <= 0)
        return;
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
    register_token(url_, "");
}

Reply http(const std::string& method, const std::string& url, const std::optional<std::string>& body,
           std::vector<std::pair<std::string, std::string>> headers, const std::optional<std::string>& unix_socket)
{
    if (!unix_socket && !names_authorization(headers))
        if (std::string token = token_for(url); !token.empty())
            headers.emplace_back("Authorization", "Bearer " + token);
    return raw_http(method, url, body, std::move(headers), unix_socket);
}

Reply http_without_token(const std::string& method, const std::string& url, const std::optional<std::string>& body,
                         std::vector<std::pair<std::string, std::string>> headers)
{
    return raw_http(method, url, body, std::move(headers), std::nullopt);
}

namespace {

Reply raw_http(const std::string& method, const std::string& url, const std::optional<std::string>& body,
               std::vector<std::pair<std::string, std::string>> headers, const std::optional<std::string>& unix_socket)
{
    net::ClientRequest request;
    request.method = method;
    request.url = url;
    request.body = body;
    request.unix_socket = unix_socket;
    request.headers = std::move(headers);
    request.timeout_ms = 60000;
    auto response = net::http_request(request);
    REQUIRE_MESSAGE(response.has_value(), (response ? "" : response.error().describe()));
    Reply reply;
    reply.status = response->status;
    reply.raw = response->body;
    reply.headers = response->headers;
    if (!reply.raw.empty()) {
        auto parsed = nlohmann::json::parse(reply.raw, nullptr, false);
        if (!parsed.is_discarded())
            reply.body = parsed;
    }
    return reply;
}

}  // namespace

void check_error(const Reply& reply, long status, const std::string& code)
{
    CHECK_MESSAGE(reply.status == status, reply.raw);
    REQUIRE_MESSAGE(reply.body.is_object(), reply.raw);
    CHECK(reply.body["error"] == code);
    CHECK(reply.body["status"].is_string());
    CHECK(reply.body["message"].is_string());
}

StartedRunner::StartedRunner(std::string config_text)
    : runner(RunnerOptions{.state_dir = dir.path(), .config_text = std::move(config_text)})
{
    REQUIRE_MESSAGE(runner.start(), runner.log());
}

std::string task_frame(const std::string& task_id, int nodes)
{
    nlohmann::json node_list = nlohmann::json::array();
    nlohmann::json edges = nlohmann::json::array();
    for (int i = 0; i < nodes; ++i) {
        nlohmann::json node = {{"id", "n" + std::to_string(i)},
                               {"action", "nwp://example.test/step/invoke"},
                               {"agent", "urn:nps:agent:example.test:worker"}};
        if (i > 0) {
            node["input_from"] = {"n" + std::to_string(i - 1)};
            edges.push_back({{"from", "n" + std::to_string(i - 1)}, {"to", "n" + std::to_string(i)}});
        }
        node_list.push_back(node);
    }
    nlohmann::json frame = {{"task_id", task_id}, {"dag", {{"nodes", node_list}, {"edges", edges}}}};
    return frame.dump();
}

CommandResult run_command(const std::vector<std::string>& args, const std::string& stdin_text)
{
    TempDir io;
    std::string in = io.file("in"), out = io.file("out"), err = io.file("err");
    write_file(in, stdin_text);
    // Everything that may fail a REQUIRE happens before fork: a child that
    // threw would go on running the test suite.
    std::vector<std::string> full = {runner_binary()};
    full.insert(full.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : full)
        argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        int i = ::open(in.c_str(), O_RDONLY);
        int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        ::dup2(i, 0);
        ::dup2(o, 1);
        ::dup2(e, 2);
        ::execv(argv[0], argv.data());
        ::_exit(127);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), read_file(out), read_file(err)};
}

}  // namespace nps::test
