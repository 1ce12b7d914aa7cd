// SPDX-License-Identifier: Apache-2.0
#include "https_fixture.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace nps::test {

namespace {

std::string slurp(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

void spit(const std::string& path, const std::string& text)
{
    const std::string tmp = path + ".tmp";
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        out << text;
        if (!out)
            throw std::runtime_error("cannot write " + tmp);
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0)
        throw std::runtime_error("cannot rename " + tmp);
}

// Starts argv with stdout and stderr appended to `log`; returns the pid.
pid_t spawn(const std::vector<std::string>& argv, const std::string& log)
{
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    std::vector<char*> args;
    for (const auto& a : argv)
        args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    pid_t pid = -1;
    const int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0)
        throw std::runtime_error("cannot start " + argv[0]);
    return pid;
}

// Runs argv to completion; throws with its output on failure.
void run(const std::vector<std::string>& argv, const std::string& log)
{
    const pid_t pid = spawn(argv, log);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        std::string command;
        for (const auto& a : argv)
            command += a + " ";
        throw std::runtime_error("'" + command + "' failed:\n" + slurp(log));
    }
}

bool runs(const std::vector<std::string>& argv)
{
    try {
        run(argv, "/dev/null");
        return true;
    } catch (const std::exception&) {
        return false;
    }
}

const char* server_script() { return std::getenv("NPS_TEST_SPEC_SERVER"); }

void make_ca(const std::string& dir, const std::string& name, const std::string& log)
{
    run({"openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
         dir + "/" + name + ".key", "-out", dir + "/" + name + ".pem", "-days", "2", "-subj",
         "/CN=nps-runner test " + name, "-addext", "basicConstraints=critical,CA:TRUE", "-addext",
         "keyUsage=critical,keyCertSign,cRLSign"},
        log);
}

}  // namespace

std::string https_fixture_missing()
{
    if (!server_script())
        return "NPS_TEST_SPEC_SERVER is not set (run through meson test)";
    if (access(server_script(), R_OK) != 0)
        return std::string("the server script ") + server_script() + " is missing";
    if (!runs({"openssl", "version"}))
        return "openssl(1) is not installed";
    if (!runs({"python3", "-c", "import ssl, http.server"}))
        return "python3 with the ssl module is not installed";
    return {};
}

TestPki make_test_pki(const std::string& dir)
{
    const std::string log = dir + "/openssl.log";
    make_ca(dir, "ca", log);
    make_ca(dir, "other-ca", log);
    spit(dir + "/server.ext",
         "subjectAltName=DNS:specs.example.test,DNS:localhost,IP:127.0.0.1,IP:::1\n"
         "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n");
    run({"openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
         dir + "/server.key", "-out", dir + "/server.csr", "-subj", "/CN=specs.example.test"},
        log);
    run({"openssl", "x509", "-req", "-in", dir + "/server.csr", "-CA", dir + "/ca.pem", "-CAkey", dir + "/ca.key",
         "-CAcreateserial", "-out", dir + "/server.pem", "-days", "2", "-extfile", dir + "/server.ext"},
        log);
    return TestPki{.ca_file = dir + "/ca.pem",
                   .other_ca_file = dir + "/other-ca.pem",
                   .cert_file = dir + "/server.pem",
                   .key_file = dir + "/server.key"};
}

SpecServer::SpecServer(const std::string& dir, const std::optional<TestPki>& pki)
    : routes_path_(dir + "/routes-" + std::to_string(getpid()) + "-" +
                   std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()) + ".json"),
      log_path_(routes_path_ + ".log"),
      https_(pki.has_value())
{
    write_routes();
    const std::string port_file = routes_path_ + ".port";
    std::vector<std::string> argv = {"python3", server_script(), "--routes", routes_path_, "--log", log_path_,
                                     "--port-file", port_file};
    if (pki) {
        argv.insert(argv.end(), {"--cert", pki->cert_file, "--key", pki->key_file});
    }
    pid_ = spawn(argv, routes_path_ + ".out");
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < deadline) {
        const std::string text = slurp(port_file);
        if (!text.empty()) {
            port_ = static_cast<std::uint16_t>(std::stoi(text));
            return;
        }
        int status = 0;
        if (waitpid(pid_, &status, WNOHANG) == pid_) {
            pid_ = -1;
            throw std::runtime_error("spec_server.py exited:\n" + slurp(routes_path_ + ".out"));
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    throw std::runtime_error("spec_server.py did not start:\n" + slurp(routes_path_ + ".out"));
}

SpecServer::~SpecServer()
{
    if (pid_ > 0) {
        kill(pid_, SIGKILL);
        int status = 0;
        while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
        }
    }
}

std::string SpecServer::url(const std::string& path, const std::string& host) const
{
    const std::string shown_host = host.find(':') != std::string::npos ? "[" + host + "]" : host;
    return std::string(https_ ? "https" : "http") + "://" + shown_host + ":" + std::to_string(port_) + path;
}

void SpecServer::set(const std::string& path, const Route& route)
{
    routes_[path] = route;
    write_routes();
}

void SpecServer::write_routes() const
{
    nlohmann::json all = nlohmann::json::object();
    for (const auto& [path, r] : routes_) {
        nlohmann::json j = {{"status", r.status}, {"headers", r.headers}, {"body", r.body}, {"delay_ms", r.delay_ms}};
        if (r.body_bytes)
            j["body_bytes"] = *r.body_bytes;
        if (r.etag)
            j["etag"] = *r.etag;
        all[path] = j;
    }
    spit(routes_path_, all.dump());
}

std::vector<nlohmann::json> SpecServer::requests() const
{
    std::vector<nlohmann::json> out;
    std::istringstream lines(slurp(log_path_));
    std::string line;
    while (std::getline(lines, line))
        if (!line.empty())
            out.push_back(nlohmann::json::parse(line, nullptr, false));
    return out;
}

std::size_t SpecServer::hits(const std::string& path) const
{
    std::size_t n = 0;
    for (const auto& r : requests())
        if (r.is_object() && r.value("path", "") == path)
            ++n;
    return n;
}

}  // namespace nps::test
