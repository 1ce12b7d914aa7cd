// SPDX-License-Identifier: Apache-2.0
#include "registry_fixture.hpp"

#include <arpa/inet.h>
#include <crypt.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include "runner_process.hpp"
#include "test_images.hpp"

#ifndef NPS_REGISTRY_HELPER
#error "NPS_REGISTRY_HELPER (the path of registry_helper.py) must be defined by the build"
#endif

namespace image_it {

namespace {

bool have(const std::string& tool)
{
    return std::system(("command -v " + tool + " >/dev/null 2>&1").c_str()) == 0;
}

int free_port()
{
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        throw std::runtime_error("socket() failed");
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
        ::close(fd);
        throw std::runtime_error("bind() to a free loopback port failed");
    }
    ::close(fd);
    return ntohs(addr.sin_port);
}

bool accepts(int port)
{
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return false;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    ::close(fd);
    return ok;
}

}  // namespace

std::string missing_registry_tools()
{
    for (const char* tool : {"docker-registry", "openssl", "python3"})
        if (!have(tool))
            return std::string("no '") + tool + "' (install docker-registry, openssl and python3: scripts/install-deps)";
    return "";
}

Child::Child(const std::vector<std::string>& argv, const std::string& log) : log_(log)
{
    std::vector<std::string> args = argv;
    std::vector<char*> raw;
    for (auto& a : args)
        raw.push_back(a.data());
    raw.push_back(nullptr);
    pid_ = ::fork();
    if (pid_ < 0)
        throw std::runtime_error("fork failed");
    if (pid_ == 0) {
        const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
        const int in = ::open("/dev/null", O_RDONLY);
        ::dup2(in, 0);
        ::dup2(out, 1);
        ::dup2(out, 2);
        ::setpgid(0, 0);
        ::execvp(raw[0], raw.data());
        ::_exit(127);
    }
}

Child::Child(Child&& other) noexcept : pid_(other.pid_), log_(std::move(other.log_))
{
    other.pid_ = -1;
}

Child& Child::operator=(Child&& other) noexcept
{
    if (this != &other) {
        stop();
        pid_ = other.pid_;
        log_ = std::move(other.log_);
        other.pid_ = -1;
    }
    return *this;
}

Child::~Child()
{
    stop();
}

bool Child::running()
{
    if (pid_ <= 0)
        return false;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return false;
    }
    return true;
}

void Child::stop()
{
    if (pid_ <= 0)
        return;
    ::kill(pid_, SIGTERM);
    for (int i = 0; i < 100; ++i) {
        int status = 0;
        if (::waitpid(pid_, &status, WNOHANG) == pid_) {
            pid_ = -1;
            return;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
}

const TestPki& test_pki()
{
    static nps::test::TempDir dir("nps-registry-pki");
    static const TestPki pki = [] {
        const std::string d = dir.path();
        TestPki p{d + "/ca.crt", d + "/server.crt", d + "/server.key", d + "/token.crt", d + "/token.key"};
        shell("cd " + d +
              " && openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 -subj /CN=nps-test-ca"
              " -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign"
              " && openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj /CN=127.0.0.1"
              " && printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\nbasicConstraints=CA:FALSE\\n"
              "extendedKeyUsage=serverAuth\\n' > server.ext"
              " && openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out server.crt -days 2"
              " -extfile server.ext"
              " && openssl req -x509 -newkey rsa:2048 -nodes -keyout token.key -out token.crt -days 2"
              " -subj /CN=nps-test-token-signer");
        return p;
    }();
    return pki;
}

std::string htpasswd_line(const std::string& user, const std::string& password)
{
    char salt[CRYPT_GENSALT_OUTPUT_SIZE];
    if (::crypt_gensalt_rn("$2b$", 5, nullptr, 0, salt, sizeof salt) == nullptr)
        throw std::runtime_error("crypt_gensalt_rn($2b$) failed: libcrypt without bcrypt");
    crypt_data data{};
    const char* hash = ::crypt_rn(password.c_str(), salt, &data, sizeof data);
    if (hash == nullptr || hash[0] != '$')
        throw std::runtime_error("crypt_rn (bcrypt) failed");
    return user + ":" + hash + "\n";
}

Registry::Registry(RegistryOptions options)
{
    port_ = free_port();
    std::string yaml = "version: 0.1\n"
                       "log:\n  level: warn\n  accesslog:\n    disabled: true\n"
                       "storage:\n  filesystem:\n    rootdirectory: " + dir_.path() + "/data\n"
                       "http:\n  addr: 127.0.0.1:" + std::to_string(port_) + "\n  secret: nps-test\n";
    if (options.tls)
        yaml += "  tls:\n    certificate: " + test_pki().server_cert + "\n    key: " + test_pki().server_key + "\n";
    if (!options.htpasswd.empty())
        yaml += "auth:\n  htpasswd:\n    realm: nps-test\n    path: " + options.htpasswd + "\n";
    else if (!options.token_realm.empty())
        yaml += "auth:\n  token:\n    realm: " + options.token_realm +
                "\n    service: nps-test-registry\n    issuer: nps-test-issuer\n    rootcertbundle: " +
                test_pki().token_cert + "\n";
    nps::test::write_file(dir_.path() + "/config.yml", yaml);
    process_ = Child({"docker-registry", "serve", dir_.path() + "/config.yml"}, dir_.path() + "/registry.log");
    for (int i = 0; i < 400; ++i) {
        if (accepts(port_))
            return;
        if (!process_.running())
            break;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    throw std::runtime_error("docker-registry did not start on port " + std::to_string(port_) + ":\n" + log());
}

std::string Registry::log() const
{
    return nps::test::read_file(dir_.path() + "/registry.log");
}

Helper::Helper(const std::string& mode, std::vector<std::string> args)
{
    const std::string port_file = dir_.path() + "/port";
    std::vector<std::string> argv = {"python3", NPS_REGISTRY_HELPER, mode, "--port-file", port_file, "--log",
                                     dir_.path() + "/requests"};
    argv.insert(argv.end(), args.begin(), args.end());
    process_ = Child(argv, dir_.path() + "/helper.log");
    for (int i = 0; i < 400; ++i) {
        if (std::filesystem::exists(port_file)) {
            port_ = std::stoi(nps::test::read_file(port_file));
            return;
        }
        if (!process_.running())
            break;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    throw std::runtime_error("registry_helper.py " + mode + " did not start:\n" +
                             nps::test::read_file(dir_.path() + "/helper.log"));
}

std::string Helper::requests() const
{
    const std::string path = dir_.path() + "/requests";
    return std::filesystem::exists(path) ? nps::test::read_file(path) : std::string();
}

std::string capture(const std::string& command)
{
    static nps::test::TempDir dir("nps-registry-capture");
    const std::string out = dir.path() + "/out";
    const std::string err = dir.path() + "/err";
    if (std::system(("(" + command + ") >" + out + " 2>" + err).c_str()) != 0)
        throw std::runtime_error("command failed: " + command + "\n" + nps::test::read_file(err));
    return nps::test::read_file(out);
}

}  // namespace image_it
