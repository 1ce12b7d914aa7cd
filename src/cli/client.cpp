// SPDX-License-Identifier: Apache-2.0
#include "nps/cli/client.hpp"

#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>

#include "nps/base/terminal_text.hpp"
#include "nps/config/config.hpp"

namespace nps::cli {

Result<ApiClient> ApiClient::from_args(const ParsedArgs& args)
{
    auto config_path = args.value("--config");
    auto config = NPS_TRY(config::load_config(config_path.value_or(config::kDefaultConfigPath), config_path.has_value()));

    ApiClient client;
    std::optional<std::string> server = args.value("--server");
    if (!server)
        if (const char* env = std::getenv("NPS_RUNNER_SERVER"); env && *env)
            server = env;
    if (!server) {
        struct stat st{};
        if (!config.socket.empty() && stat(config.socket.c_str(), &st) == 0 && S_ISSOCK(st.st_mode))
            server = "unix:" + config.socket;
        else
            server = "http://" + (config.listen.empty() ? std::string(config::kDefaultListen) : config.listen);
    }
    if (server->rfind("unix:", 0) == 0) {
        client.unix_socket_ = server->substr(5);
        client.base_url_ = "http://localhost";
    } else if (server->rfind("http://", 0) == 0 || server->rfind("https://", 0) == 0) {
        client.base_url_ = *server;
        while (!client.base_url_.empty() && client.base_url_.back() == '/')
            client.base_url_.pop_back();
    } else {
        return internal_error("--server '" + *server + "' must start with http://, https:// or unix:");
    }
    client.description_ = *server;

    client.token_ = args.value("--token");
    if (!client.token_)
        if (const char* env = std::getenv("NPS_RUNNER_TOKEN"); env && *env)
            client.token_ = env;
    if (!client.token_)
        client.token_ = config.token;
    return client;
}

Result<net::ClientResponse> ApiClient::send(const std::string& method, const std::string& path,
                                            std::optional<std::string> body,
                                            std::vector<std::pair<std::string, std::string>> headers,
                                            long timeout_ms) const
{
    net::ClientRequest request;
    request.method = method;
    request.url = base_url_ + path;
    request.unix_socket = unix_socket_;
    request.headers = std::move(headers);
    if (token_ && !unix_socket_)
        request.headers.emplace_back("Authorization", "Bearer " + *token_);
    if (body)
        request.headers.emplace_back("Content-Type", "application/json");
    request.body = std::move(body);
    request.timeout_ms = timeout_ms;
    auto response = net::http_request(request);
    if (!response)
        return internal_error("Cannot reach nps-runner at " + description_ + ": " + response.error().describe() +
                              " (is 'nps-runner serve' running? see --server)");
    return response;
}

Result<nlohmann::json> ApiClient::call(const std::string& method, const std::string& path,
                                       std::optional<std::string> body,
                                       std::vector<std::pair<std::string, std::string>> headers,
                                       long timeout_ms) const
{
    auto response = NPS_TRY(send(method, path, std::move(body), std::move(headers), timeout_ms));
    nlohmann::json parsed = response.body.empty() ? nlohmann::json(nullptr)
                                                  : nlohmann::json::parse(response.body, nullptr, false);
    if (response.status < 200 || response.status > 299) {
        if (parsed.is_object() && parsed.contains("error") && parsed["error"].is_string()) {
            std::string message = parsed.value("message", std::string());
            return protocol_error(parsed["error"].get<std::string>(), message);
        }
        return internal_error(method + " " + path + " answered HTTP " + std::to_string(response.status));
    }
    if (parsed.is_discarded())
        return internal_error(method + " " + path + " answered with a body that is not JSON");
    return parsed;
}

int report_error(const Error& error)
{
    // The message may quote worker-supplied text: escaped (nps/cli/output.hpp).
    const std::string message = escape_terminal(error.describe());
    if (error.code.empty())
        std::fprintf(stderr, "nps-runner: %s\n", message.c_str());
    else
        std::fprintf(stderr, "nps-runner: %s: %s\n", escape_terminal(error.code).c_str(), message.c_str());
    return 1;
}

}  // namespace nps::cli
