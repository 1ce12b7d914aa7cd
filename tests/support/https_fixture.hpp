// SPDX-License-Identifier: Apache-2.0
// Test support: a throw-away PKI made with openssl(1) and a scriptable
// HTTP(S) server (spec_server.py, python3) on loopback, for the SpawnSpec
// fetch tests. Suites using it skip (77) when the tools are missing.
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace nps::test {

// Why the fixture cannot run here ("" when it can): openssl, python3 with
// ssl, and the server script (NPS_TEST_SPEC_SERVER) must be present.
std::string https_fixture_missing();

// A CA and a server certificate it signed, for the names specs.example.test,
// localhost, 127.0.0.1 and ::1, written into `dir` as ca.pem, server.pem and
// server.key. A second, unrelated CA is other-ca.pem (for "untrusted" tests).
struct TestPki {
    std::string ca_file;
    std::string other_ca_file;
    std::string cert_file;
    std::string key_file;
};
// Throws std::runtime_error with openssl's output when generation fails.
TestPki make_test_pki(const std::string& dir);

struct Route {
    int status = 200;
    std::map<std::string, std::string> headers{};
    std::string body{};
    std::optional<std::size_t> body_bytes{};  // instead of body: that many spaces
    std::optional<std::string> etag{};        // 304 when If-None-Match carries it
    int delay_ms = 0;
};

// spec_server.py as a child process on 127.0.0.1; killed on destruction.
class SpecServer {
public:
    // https when pki is given, else plain http. Throws when it does not start.
    SpecServer(const std::string& dir, const std::optional<TestPki>& pki);
    ~SpecServer();
    SpecServer(const SpecServer&) = delete;
    SpecServer& operator=(const SpecServer&) = delete;

    std::uint16_t port() const { return port_; }
    // "https://<host>:<port><path>" (or http).
    std::string url(const std::string& path, const std::string& host = "127.0.0.1") const;

    // Routes take effect on the next request.
    void set(const std::string& path, const Route& route);
    // Every request served so far, in order (see spec_server.py).
    std::vector<nlohmann::json> requests() const;
    std::size_t hits(const std::string& path) const;

private:
    void write_routes() const;

    std::string routes_path_;
    std::string log_path_;
    bool https_ = false;
    pid_t pid_ = -1;
    std::uint16_t port_ = 0;
    std::map<std::string, Route> routes_;
};

}  // namespace nps::test
