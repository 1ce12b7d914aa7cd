// SPDX-License-Identifier: Apache-2.0
// Test support: a raw HTTP/1.1 client connection over loopback TCP or a unix
// socket. Many of them cost a test no threads (long-poll and connection-count
// tests); the request is written by hand, the answer read until the server
// closes (the requests say "Connection: close").
#pragma once

#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>

#include <nlohmann/json.hpp>

#include "nps/base/unique_fd.hpp"

namespace nps::test {

// A raw HTTP/1.1 client connection: many of them cost the test no threads.
class RawClient {
public:
    explicit RawClient(const std::string& unix_socket)
    {
        fd_ = UniqueFd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
        REQUIRE(fd_);
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        REQUIRE(unix_socket.size() < sizeof addr.sun_path);
        std::memcpy(addr.sun_path, unix_socket.c_str(), unix_socket.size());
        REQUIRE(::connect(fd_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    }

    explicit RawClient(std::uint16_t port)
    {
        fd_ = UniqueFd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
        REQUIRE(fd_);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_port = htons(port);
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        REQUIRE(::connect(fd_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    }

    void send_get(const std::string& target)
    {
        send_text("GET " + target + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    }

    void send_text(const std::string& text)
    {
        REQUIRE(::send(fd_.get(), text.data(), text.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(text.size()));
    }

    int fd() const { return fd_.get(); }

    // True if the server has sent something (or closed) within `ms`.
    bool readable(int ms)
    {
        pollfd p{fd_.get(), POLLIN, 0};
        return ::poll(&p, 1, ms) > 0;
    }

    // Reads until the server closes (Connection: close); fails after 60 s.
    std::string read_all()
    {
        std::string text;
        const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        char buffer[4096];
        while (std::chrono::steady_clock::now() < give_up) {
            if (!readable(1000))
                continue;
            const ssize_t n = ::recv(fd_.get(), buffer, sizeof buffer, 0);
            if (n <= 0)
                return text;
            text.append(buffer, static_cast<std::size_t>(n));
        }
        FAIL("no end of response within 60 s; got: " << text);
        return text;
    }

private:
    UniqueFd fd_;
};

inline int status_of(const std::string& response)
{
    if (response.rfind("HTTP/1.1 ", 0) != 0 || response.size() < 12)
        return 0;
    return std::stoi(response.substr(9, 3));
}

inline nlohmann::json body_of(const std::string& response)
{
    const auto start = response.find("\r\n\r\n");
    if (start == std::string::npos)
        return nullptr;
    return nlohmann::json::parse(response.substr(start + 4), nullptr, false);
}

}  // namespace nps::test
