// SPDX-License-Identifier: Apache-2.0
// How the client verbs reach the daemon: server address and token resolved
// from flags, environment and config; responses decoded; API error bodies
// turned into one readable line ("NOP-TASK-NOT-FOUND: No task 'x'").
//
// Server: --server, NPS_RUNNER_SERVER, else the config's unix socket when it
// exists (or cannot be stat'ed for lack of permission), else its TCP listen
// address. Token (TCP only): --token, NPS_RUNNER_TOKEN, api.token, else the
// token serve generated in <state_dir>/api.token when this user can read it.
// A unix socket refusing this user is reported as "permission denied on
// unix:PATH (add the user to group nps-runner)".
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "nps/base/result.hpp"
#include "nps/cli/args.hpp"
#include "nps/net/http_client.hpp"

namespace nps::cli {

class ApiClient {
public:
    static Result<ApiClient> from_args(const ParsedArgs& args);

    // Sends the request; any HTTP status is returned (callers decide).
    Result<net::ClientResponse> send(const std::string& method, const std::string& path,
                                     std::optional<std::string> body = std::nullopt,
                                     std::vector<std::pair<std::string, std::string>> headers = {},
                                     long timeout_ms = 30000,
                                     std::function<bool(std::string_view)> on_data = nullptr) const;

    // As send(), but a non-2xx status becomes an Error carrying the API's
    // error code and message; a 2xx JSON body is parsed (null when empty).
    Result<nlohmann::json> call(const std::string& method, const std::string& path,
                                std::optional<std::string> body = std::nullopt,
                                std::vector<std::pair<std::string, std::string>> headers = {},
                                long timeout_ms = 30000) const;

    // GET of a followed feed: a 2xx body goes to on_data as it arrives, with
    // no time limit, until the daemon ends it or on_data returns false; any
    // other answer is an Error as in call().
    Result<void> follow(const std::string& path, const std::function<bool(std::string_view)>& on_data,
                        std::vector<std::pair<std::string, std::string>> headers = {}) const;

    const std::string& describe() const { return description_; }
    // The http(s):// base URL when the client talks TCP; nullopt on the unix socket.
    std::optional<std::string> tcp_base() const
    {
        return unix_socket_ ? std::nullopt : std::optional<std::string>(base_url_);
    }

private:
    std::string base_url_;
    std::optional<std::string> unix_socket_;
    std::optional<std::string> token_;
    std::string token_path_;  // <state_dir>/api.token, named in a 401's message
    std::string description_;
};

// Prints "nps-runner: <message>" to stderr and returns the exit status for it.
int report_error(const Error& error);

}  // namespace nps::cli
