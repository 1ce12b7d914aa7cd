// SPDX-License-Identifier: Apache-2.0
// Internal to src/net: creating the listening sockets HttpServer hands to
// libmicrohttpd (MHD_OPTION_LISTEN_SOCKET). Creating them here rather than in
// MHD gives precise bind errors and lets us serve a unix socket.
#pragma once

#include <sys/socket.h>
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

#include "nps/base/result.hpp"
#include "nps/base/unique_fd.hpp"

namespace nps::net::detail {

struct TcpListener {
    UniqueFd fd;
    bool ipv6 = false;
    std::uint16_t port = 0;  // the bound port (resolves port 0)
};

// Parses `address` ("127.0.0.1:17437", "[::1]:0", "localhost:8080"), binds a
// listening TCP socket (SOCK_CLOEXEC, SO_REUSEADDR; "[::]" is dual stack).
// Errors name the address: "Failed to bind '127.0.0.1:17437': Address already in use".
Result<TcpListener> open_tcp_listener(const std::string& address);

struct UnixListener {
    UniqueFd fd;
    dev_t dev = 0;  // identity of the socket file we created, so we only
    ino_t ino = 0;  // ever unlink our own file
};

// Creates the parent directory (0755) if missing, replaces a stale socket
// file (a socket nobody listens on), refuses to touch anything else (a live
// socket or a non-socket file), binds, chmods to `mode`, gives the file to
// `group` (when set; the owner is unchanged), then listens (so no client can
// connect before mode and group are applied).
Result<UnixListener> open_unix_listener(const std::string& path, mode_t mode,
                                        std::optional<gid_t> group = std::nullopt);

// Removes `path` if it is still the socket file identified by dev/ino.
void remove_unix_socket_file(const std::string& path, dev_t dev, ino_t ino) noexcept;

// True for AF_INET 127.0.0.0/8, AF_INET6 ::1 and ::ffff:127.0.0.0/104.
bool is_loopback_sockaddr(const struct sockaddr* addr) noexcept;

}  // namespace nps::net::detail
