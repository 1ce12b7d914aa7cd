// SPDX-License-Identifier: Apache-2.0
#include "listen_socket.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "nps/net/http_server.hpp"

namespace nps::net::detail {

namespace {

struct BindAddress {
    sockaddr_storage storage{};
    socklen_t length = 0;
    bool ipv6 = false;
    bool any6 = false;  // "::", served dual stack
};

Result<BindAddress> resolve(const std::string& address, const std::string& host, std::uint16_t port)
{
    BindAddress out;
    in_addr a4{};
    in6_addr a6{};
    const std::string literal = (host == "localhost" || host == "localhost.") ? "127.0.0.1" : host;
    if (inet_pton(AF_INET, literal.c_str(), &a4) == 1) {
        sockaddr_in sin{};
        sin.sin_family = AF_INET;
        sin.sin_port = htons(port);
        sin.sin_addr = a4;
        std::memcpy(&out.storage, &sin, sizeof sin);
        out.length = sizeof sin;
        return out;
    }
    if (inet_pton(AF_INET6, literal.c_str(), &a6) == 1) {
        sockaddr_in6 sin6{};
        sin6.sin6_family = AF_INET6;
        sin6.sin6_port = htons(port);
        sin6.sin6_addr = a6;
        std::memcpy(&out.storage, &sin6, sizeof sin6);
        out.length = sizeof sin6;
        out.ipv6 = true;
        out.any6 = IN6_IS_ADDR_UNSPECIFIED(&a6);
        return out;
    }

    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_ADDRCONFIG;
    addrinfo* found = nullptr;
    const int rc = getaddrinfo(host.c_str(), nullptr, &hints, &found);
    if (rc != 0 || found == nullptr) {
        const std::string why = rc == EAI_SYSTEM ? std::strerror(errno) : gai_strerror(rc);
        if (found != nullptr)
            freeaddrinfo(found);
        return internal_error("Failed to resolve listen address '" + address + "': " + why);
    }
    const addrinfo* ai = found;
    if (ai->ai_addrlen > sizeof out.storage) {
        freeaddrinfo(found);
        return internal_error("Failed to resolve listen address '" + address + "': address too long");
    }
    std::memcpy(&out.storage, ai->ai_addr, ai->ai_addrlen);
    out.length = ai->ai_addrlen;
    out.ipv6 = ai->ai_family == AF_INET6;
    freeaddrinfo(found);
    if (out.ipv6) {
        sockaddr_in6 sin6{};
        std::memcpy(&sin6, &out.storage, sizeof sin6);
        sin6.sin6_port = htons(port);
        std::memcpy(&out.storage, &sin6, sizeof sin6);
    } else {
        sockaddr_in sin{};
        std::memcpy(&sin, &out.storage, sizeof sin);
        sin.sin_port = htons(port);
        std::memcpy(&out.storage, &sin, sizeof sin);
    }
    return out;
}

// mkdir -p with mode 0755 for the missing components of `dir`.
Result<void> make_directories(const std::string& dir)
{
    if (dir.empty())
        return {};
    struct stat st{};
    if (::stat(dir.c_str(), &st) == 0) {
        if (!S_ISDIR(st.st_mode))
            return system_error("Failed to create directory '" + dir + "'", ENOTDIR);
        return {};
    }
    const auto slash = dir.find_last_of('/');
    if (slash != std::string::npos && slash > 0)
        NPS_TRY_VOID(make_directories(dir.substr(0, slash)));
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
        return system_error_errno("Failed to create directory '" + dir + "'");
    return {};
}

Result<sockaddr_un> unix_address(const std::string& path)
{
    sockaddr_un sun{};
    sun.sun_family = AF_UNIX;
    if (path.empty())
        return system_error("Failed to bind unix socket ''", EINVAL);
    if (path.size() >= sizeof sun.sun_path)
        return system_error("Failed to bind unix socket '" + path + "' (path longer than " +
                                std::to_string(sizeof sun.sun_path - 1) + " bytes)",
                            ENAMETOOLONG);
    std::memcpy(sun.sun_path, path.data(), path.size());
    return sun;
}

// A socket file exists at `path`: is somebody listening on it?
// Returns true if live, false if stale (nobody listening).
Result<bool> socket_is_live(const std::string& path, const sockaddr_un& sun)
{
    UniqueFd probe(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!probe)
        return system_error_errno("Failed to probe unix socket '" + path + "'");
    if (::connect(probe.get(), reinterpret_cast<const sockaddr*>(&sun), sizeof sun) == 0)
        return true;
    const int err = errno;
    if (err == ECONNREFUSED || err == ENOENT)
        return false;
    if (err == EAGAIN)  // a listener with a full backlog is alive
        return true;
    return system_error("Failed to probe unix socket '" + path + "'", err);
}

}  // namespace

Result<TcpListener> open_tcp_listener(const std::string& address)
{
    const auto [host, port] = NPS_TRY(parse_listen_address(address));
    const BindAddress bind_address = NPS_TRY(resolve(address, host, port));

    TcpListener out;
    out.ipv6 = bind_address.ipv6;
    out.fd.reset(::socket(bind_address.ipv6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!out.fd)
        return system_error_errno("Failed to create a socket for '" + address + "'");
    const int on = 1;
    if (::setsockopt(out.fd.get(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) != 0)
        return system_error_errno("Failed to set SO_REUSEADDR for '" + address + "'");
    if (bind_address.any6) {
        const int off = 0;
        if (::setsockopt(out.fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off) != 0)
            return system_error_errno("Failed to enable dual stack for '" + address + "'");
    }
    if (::bind(out.fd.get(), reinterpret_cast<const sockaddr*>(&bind_address.storage), bind_address.length) != 0)
        return system_error_errno("Failed to bind '" + address + "'");
    if (::listen(out.fd.get(), SOMAXCONN) != 0)
        return system_error_errno("Failed to listen on '" + address + "'");

    sockaddr_storage bound{};
    socklen_t length = sizeof bound;
    if (::getsockname(out.fd.get(), reinterpret_cast<sockaddr*>(&bound), &length) != 0)
        return system_error_errno("Failed to read the bound port of '" + address + "'");
    if (bound.ss_family == AF_INET6) {
        sockaddr_in6 sin6{};
        std::memcpy(&sin6, &bound, sizeof sin6);
        out.port = ntohs(sin6.sin6_port);
    } else {
        sockaddr_in sin{};
        std::memcpy(&sin, &bound, sizeof sin);
        out.port = ntohs(sin.sin_port);
    }
    return out;
}

Result<UnixListener> open_unix_listener(const std::string& path, mode_t mode, std::optional<gid_t> group)
{
    const sockaddr_un sun = NPS_TRY(unix_address(path));
    const auto slash = path.find_last_of('/');
    if (slash != std::string::npos && slash > 0) {
        const std::string parent = path.substr(0, slash);
        if (auto made = make_directories(parent); !made) {
            Error error = std::move(made).error();
            error.message = "Failed to bind unix socket '" + path + "': " + error.message;
            return error;
        }
    }

    struct stat st{};
    if (::lstat(path.c_str(), &st) == 0) {
        if (!S_ISSOCK(st.st_mode))
            return system_error("Failed to bind unix socket '" + path + "' (an existing file that is not a socket is in the way)",
                                EEXIST);
        if (NPS_TRY(socket_is_live(path, sun)))
            return system_error("Failed to bind unix socket '" + path + "' (another server is listening on it)",
                                EADDRINUSE);
        if (::unlink(path.c_str()) != 0 && errno != ENOENT)
            return system_error_errno("Failed to remove stale unix socket '" + path + "'");
    } else if (errno != ENOENT) {
        return system_error_errno("Failed to bind unix socket '" + path + "'");
    }

    UnixListener out;
    out.fd.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!out.fd)
        return system_error_errno("Failed to create a unix socket for '" + path + "'");
    if (::bind(out.fd.get(), reinterpret_cast<const sockaddr*>(&sun), sizeof sun) != 0)
        return system_error_errno("Failed to bind unix socket '" + path + "'");
    // Not listening yet, so nobody can connect before the mode is applied.
    if (::chmod(path.c_str(), mode) != 0) {
        const int err = errno;
        ::unlink(path.c_str());
        return system_error("Failed to set the mode of unix socket '" + path + "'", err);
    }
    if (group && ::lchown(path.c_str(), static_cast<uid_t>(-1), *group) != 0) {
        const int err = errno;
        ::unlink(path.c_str());
        return system_error("Failed to set the group of unix socket '" + path + "'", err);
    }
    if (::lstat(path.c_str(), &st) != 0) {
        const int err = errno;
        ::unlink(path.c_str());
        return system_error("Failed to stat unix socket '" + path + "'", err);
    }
    out.dev = st.st_dev;
    out.ino = st.st_ino;
    if (::listen(out.fd.get(), SOMAXCONN) != 0) {
        const int err = errno;
        ::unlink(path.c_str());
        return system_error("Failed to listen on unix socket '" + path + "'", err);
    }
    return out;
}

void remove_unix_socket_file(const std::string& path, dev_t dev, ino_t ino) noexcept
{
    struct stat st{};
    if (::lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode) && st.st_dev == dev && st.st_ino == ino)
        ::unlink(path.c_str());
}

bool is_loopback_sockaddr(const struct sockaddr* addr) noexcept
{
    if (addr == nullptr)
        return false;
    if (addr->sa_family == AF_INET) {
        sockaddr_in sin{};
        std::memcpy(&sin, addr, sizeof sin);
        return (ntohl(sin.sin_addr.s_addr) >> 24) == 127;
    }
    if (addr->sa_family == AF_INET6) {
        sockaddr_in6 sin6{};
        std::memcpy(&sin6, addr, sizeof sin6);
        if (IN6_IS_ADDR_LOOPBACK(&sin6.sin6_addr))
            return true;
        return IN6_IS_ADDR_V4MAPPED(&sin6.sin6_addr) && sin6.sin6_addr.s6_addr[12] == 127;
    }
    return false;
}

}  // namespace nps::net::detail
