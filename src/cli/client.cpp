// SPDX-License-Identifier: Apache-2.0
#include "nps/cli/client.hpp"

#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "nps/base/small_file.hpp"
#include "nps/base/terminal_text.hpp"
#include "nps/base/unique_fd.hpp"
#include "nps/config/config.hpp"

namespace nps::cli {

namespace {

// The configuration the client reads. The default file is 0640 root:nps-runner
// in the packages: a user outside the group gets the defaults (and then the
// socket's "permission denied" naming the group) rather than an error.
Result<config::Config> client_config(const std::optional<std::string>& named)
{
    if (!named && ::access(config::kDefaultConfigPath, R_OK) != 0 && errno == EACCES) {
        config::Config defaults;
        defaults.runner_nid = config::default_runner_nid();
        return defaults;
    }
    return config::load_config(named.value_or(config::kDefaultConfigPath), named.has_value());
}

// The token serve generated, when this user may read it (root, the group).
std::optional<std::string> generated_token(const config::Config& config)
{
    auto text = read_small_file(config.generated_token_path(), 4096, "API token");
    if (!text)
        return std::nullopt;
    std::string token = text->substr(0, text->find('\n'));
    while (!token.empty() && (token.back() == '\r' || token.back() == ' '))
        token.pop_back();
    if (token.empty())
        return std::nullopt;
    return token;
}

// errno of connect(2) to the unix socket at `path` (0 when it connects).
int unix_connect_errno(const std::string& path)
{
    sockaddr_un sun{};
    sun.sun_family = AF_UNIX;
    if (path.size() >= sizeof sun.sun_path)
        return ENAMETOOLONG;
    std::memcpy(sun.sun_path, path.data(), path.size());
    UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd)
        return errno;
    return ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&sun), sizeof sun) == 0 ? 0 : errno;
}

// The group to join for the socket at `path`: its own group unless that is
// root's (or unknown), else nps-runner.
std::string socket_group(const std::string& path)
{
    struct stat st{};
    if (::stat(path.c_str(), &st) == 0 && st.st_gid != 0) {
        std::vector<char> buffer(16384);
        group entry{};
        group* found = nullptr;
        if (::getgrgid_r(st.st_gid, &entry, buffer.data(), buffer.size(), &found) == 0 && found != nullptr)
            return found->gr_name;
    }
    return config::kRunnerGroup;
}

}  // namespace

Result<ApiClient> ApiClient::from_args(const ParsedArgs& args)
{
    auto config_path = args.value("--config");
    auto config = NPS_TRY(client_config(config_path));

    ApiClient client;
    std::optional<std::string> server = args.value("--server");
    if (!server)
        if (const char* env = std::getenv("NPS_RUNNER_SERVER"); env && *env)
            server = env;
    if (!server) {
        // A socket this user may not even stat (a closed directory) is
        // still the one to use: the error then says what access is missing.
        bool use_socket = false;
        if (struct stat st{}; !config.socket.empty())
            use_socket = ::stat(config.socket.c_str(), &st) == 0 ? S_ISSOCK(st.st_mode) : errno == EACCES;
        if (use_socket)
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
    if (!client.token_ && !client.unix_socket_ && config.require_token)
        client.token_ = generated_token(config);
    client.token_path_ = config.generated_token_path();
    return client;
}

Result<net::ClientResponse> ApiClient::send(const std::string& method, const std::string& path,
                                            std::optional<std::string> body,
                                            std::vector<std::pair<std::string, std::string>> headers,
                                            long timeout_ms, std::function<bool(std::string_view)> on_data) const
{
    net::ClientRequest request;
    request.on_data = std::move(on_data);
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
    if (!response && unix_socket_) {
        const int err = unix_connect_errno(*unix_socket_);
        if (err == EACCES || err == EPERM)
            return internal_error("permission denied on unix:" + *unix_socket_ + " (add the user to group " +
                                  socket_group(*unix_socket_) + ")");
    }
    if (!response)
        return internal_error("Cannot reach nps-runner at " + description_ + ": " + response.error().describe() +
                              " (is 'nps-runner serve' running? see --server)");
    return response;
}

namespace {

// A non-2xx answer as the Error its body names.
Error answer_error(const std::string& method, const std::string& path, const net::ClientResponse& response,
                   bool has_token, const std::string& description, const std::string& token_path)
{
    const nlohmann::json parsed = nlohmann::json::parse(response.body, nullptr, false);
    if (parsed.is_object() && parsed.contains("error") && parsed["error"].is_string()) {
        std::string message = parsed.value("message", std::string());
        if (response.status == 401)
            message = has_token ? "the daemon refused the bearer token (--token, NPS_RUNNER_TOKEN, api.token)"
                                : "the daemon at " + description + " requires a bearer token: use the unix "
                                  "socket, --token or NPS_RUNNER_TOKEN, or read access to " + token_path +
                                  " (group " + config::kRunnerGroup + ")";
        return protocol_error(parsed["error"].get<std::string>(), message);
    }
    return internal_error(method + " " + path + " answered HTTP " + std::to_string(response.status));
}

}  // namespace

Result<nlohmann::json> ApiClient::call(const std::string& method, const std::string& path,
                                       std::optional<std::string> body,
                                       std::vector<std::pair<std::string, std::string>> headers,
                                       long timeout_ms) const
{
    auto response = NPS_TRY(send(method, path, std::move(body), std::move(headers), timeout_ms));
    if (response.status < 200 || response.status > 299)
        return answer_error(method, path, response, token_.has_value(), description_, token_path_);
    nlohmann::json parsed = response.body.empty() ? nlohmann::json(nullptr)
                                                  : nlohmann::json::parse(response.body, nullptr, false);
    if (parsed.is_discarded())
        return internal_error(method + " " + path + " answered with a body that is not JSON");
    return parsed;
}

Result<void> ApiClient::follow(const std::string& path, const std::function<bool(std::string_view)>& on_data,
                               std::vector<std::pair<std::string, std::string>> headers) const
{
    auto response = NPS_TRY(send("GET", path, std::nullopt, std::move(headers), 0, on_data));
    if (response.status < 200 || response.status > 299)
        return answer_error("GET", path, response, token_.has_value(), description_, token_path_);
    return {};
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
