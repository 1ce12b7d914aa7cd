// SPDX-License-Identifier: Apache-2.0
// Test support: temporary directories, the real nps-runner binary started as
// a daemon, and small HTTP helpers around net::http_request.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nps/net/http_client.hpp"
#include "temp_dir.hpp"

namespace nps::test {

void write_file(const std::string& path, const std::string& text);
std::string read_file(const std::string& path);

// The binary under test (NPS_RUNNER_BIN, set by meson).
std::string runner_binary();

struct RunnerOptions {
    std::string state_dir;                 // required
    std::string config_text;               // written to state_dir/<config_name>
    std::string config_name = "config.toml";  // two daemons sharing a state directory use two
    std::string listen = "127.0.0.1:0";    // "none" disables TCP
    bool unix_socket = true;               // state_dir/api.sock
    std::vector<std::string> extra_args;
};

// `nps-runner serve` as a child process; killed (SIGKILL) and reaped on destruction.
class RunnerProcess {
public:
    explicit RunnerProcess(RunnerOptions options);
    ~RunnerProcess();
    RunnerProcess(const RunnerProcess&) = delete;
    RunnerProcess& operator=(const RunnerProcess&) = delete;

    // Starts and waits (≤ 15 s) for the "ready" log line. False with the log
    // in `log()` when the daemon exited or never became ready.
    bool start();
    // SIGTERM and wait; returns the exit status (or -signal).
    int stop();
    // SIGKILL and reap.
    void kill_hard();
    bool running() const { return pid_ > 0; }

    std::string url() const { return url_; }              // http://127.0.0.1:PORT
    std::string socket_path() const { return socket_; }   // "" when disabled
    // The bearer token the daemon generated in state_dir/api.token ("" when
    // it generated none: api.token set, require_token = false). http() sends
    // it on every request to url() that names no Authorization header.
    std::string token() const { return token_; }
    std::string log() const;
    pid_t pid() const { return pid_; }

private:
    RunnerOptions options_;
    pid_t pid_ = -1;
    std::string url_;
    std::string socket_;
    std::string log_path_;
    std::string token_;
};

// A daemon on a fresh state directory, started; the test fails (with the
// daemon's log) when it does not become ready.
struct StartedRunner {
    TempDir dir;
    RunnerProcess runner;
    explicit StartedRunner(std::string config_text = "");
};

struct Reply {
    long status = 0;
    nlohmann::json body;  // null when empty or not JSON
    std::string raw;
    std::map<std::string, std::string> headers;
};

// One request; transport failures fail the calling test (doctest REQUIRE).
// A request to a running RunnerProcess's url() carries its generated token
// unless `headers` has an Authorization header (http_without_token: none).
Reply http(const std::string& method, const std::string& url, const std::optional<std::string>& body = std::nullopt,
           std::vector<std::pair<std::string, std::string>> headers = {},
           const std::optional<std::string>& unix_socket = std::nullopt);

// As http(), never adding the generated token.
Reply http_without_token(const std::string& method, const std::string& url,
                         const std::optional<std::string>& body = std::nullopt,
                         std::vector<std::pair<std::string, std::string>> headers = {});

// The first line of state_dir/api.token, "" when it is missing.
std::string generated_token(const std::string& state_dir);

// Checks an API error reply: HTTP status, error code and the body shape.
void check_error(const Reply& reply, long status, const std::string& code);

// A minimal valid TaskFrame: a linear chain of `nodes` nodes.
std::string task_frame(const std::string& task_id, int nodes = 3);

// Result of running the binary as a client command.
struct CommandResult {
    int exit_status = -1;
    std::string out;
    std::string err;
};
CommandResult run_command(const std::vector<std::string>& args, const std::string& stdin_text = "");

}  // namespace nps::test
