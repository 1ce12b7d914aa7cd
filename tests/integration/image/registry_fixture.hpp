// SPDX-License-Identifier: Apache-2.0
// Real registries on loopback for the pull suite: Debian's docker-registry
// (plain, TLS from a test CA, htpasswd or token authentication), the token
// service and the faulty proxy of registry_helper.py. Every process is
// killed and reaped by its object's destructor.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "temp_dir.hpp"

namespace image_it {

// Why the pull suite cannot run here ("" when it can), beyond missing_tools().
std::string missing_registry_tools();

// A child process with its output in a log file; SIGTERM, then SIGKILL, on destruction.
class Child {
public:
    Child() = default;
    Child(const std::vector<std::string>& argv, const std::string& log);
    Child(Child&& other) noexcept;
    Child& operator=(Child&& other) noexcept;
    ~Child();
    void stop();
    bool running();
    const std::string& log_path() const { return log_; }

private:
    pid_t pid_ = -1;
    std::string log_;
};

// A test CA and a server certificate for 127.0.0.1 and localhost, made once.
struct TestPki {
    std::string ca_cert;
    std::string server_cert;
    std::string server_key;
    std::string token_cert;  // self-signed, signs tokens
    std::string token_key;
};
const TestPki& test_pki();

// "user:$2b$…" (bcrypt through libcrypt, as docker-registry's htpasswd wants).
std::string htpasswd_line(const std::string& user, const std::string& password);

struct RegistryOptions {
    bool tls = false;
    std::string htpasswd;      // path of an htpasswd file: basic authentication
    std::string token_realm;   // token authentication against this realm
};

class Registry {
public:
    explicit Registry(RegistryOptions options = {});
    std::string host() const { return "127.0.0.1:" + std::to_string(port_); }
    int port() const { return port_; }
    std::string log() const;

private:
    nps::test::TempDir dir_{"nps-registry"};
    int port_ = 0;
    Child process_;
};

// registry_helper.py in one of its modes; `args` after the mode.
class Helper {
public:
    Helper(const std::string& mode, std::vector<std::string> args);
    int port() const { return port_; }
    std::string host() const { return "127.0.0.1:" + std::to_string(port_); }
    // The requests it served, one line each.
    std::string requests() const;

private:
    nps::test::TempDir dir_{"nps-registry-helper"};
    int port_ = 0;
    Child process_;
};

// Runs a shell command and returns its stdout; throws with its output when it fails.
std::string capture(const std::string& command);

}  // namespace image_it
