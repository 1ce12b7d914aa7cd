// SPDX-License-Identifier: Apache-2.0
#include "nps/net/host_resolver.hpp"

#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>

#include "nps/base/ascii.hpp"

namespace nps::net {

namespace {

std::string lookup_key(std::string host)
{
    if (!host.empty() && host.back() == '.')
        host.pop_back();
    return ascii_lower(host);
}

void add_unique(std::vector<proto::IpAddress>& out, const proto::IpAddress& address)
{
    const bool seen = std::any_of(out.begin(), out.end(), [&](const proto::IpAddress& a) {
        return a.is_v6 == address.is_v6 && a.bytes == address.bytes;
    });
    if (!seen)
        out.push_back(address);
}

// The lookup's state, shared with the helper thread: a caller that gives up
// on a hung resolver leaves, and the thread finishes and frees it alone.
struct Lookup {
    std::mutex mutex;
    std::condition_variable done_cv;
    bool done = false;
    int gai_error = 0;
    int sys_errno = 0;
    std::vector<proto::IpAddress> addresses;
};

void run_lookup(const std::shared_ptr<Lookup>& lookup, const std::string& host)
{
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* list = nullptr;
    const int rc = getaddrinfo(host.c_str(), nullptr, &hints, &list);
    const int saved_errno = errno;
    std::vector<proto::IpAddress> addresses;
    if (rc == 0) {
        for (const addrinfo* ai = list; ai != nullptr; ai = ai->ai_next) {
            proto::IpAddress address;
            if (ai->ai_family == AF_INET && ai->ai_addrlen >= sizeof(sockaddr_in)) {
                sockaddr_in sin{};
                std::memcpy(&sin, ai->ai_addr, sizeof sin);
                std::memcpy(address.bytes.data(), &sin.sin_addr, 4);
                add_unique(addresses, address);
            } else if (ai->ai_family == AF_INET6 && ai->ai_addrlen >= sizeof(sockaddr_in6)) {
                sockaddr_in6 sin6{};
                std::memcpy(&sin6, ai->ai_addr, sizeof sin6);
                address.is_v6 = true;
                std::memcpy(address.bytes.data(), &sin6.sin6_addr, 16);
                add_unique(addresses, address);
            }
        }
        freeaddrinfo(list);
    }
    std::lock_guard lock(lookup->mutex);
    lookup->gai_error = rc;
    lookup->sys_errno = saved_errno;
    lookup->addresses = std::move(addresses);
    lookup->done = true;
    lookup->done_cv.notify_all();
}

class SystemResolver final : public HostResolver {
public:
    Result<std::vector<proto::IpAddress>> resolve(const std::string& host, int timeout_ms) const override
    {
        const std::string what = "Failed to resolve '" + host + "'";
        auto lookup = std::make_shared<Lookup>();
        try {
            std::thread(run_lookup, lookup, host).detach();
        } catch (const std::system_error& e) {
            return internal_error(what + ": cannot start the resolver thread: " + e.what());
        }
        std::unique_lock lock(lookup->mutex);
        if (!lookup->done_cv.wait_for(lock, std::chrono::milliseconds(std::max(timeout_ms, 1)),
                                      [&] { return lookup->done; }))
            return internal_error(what + ": no answer within " + std::to_string(timeout_ms) + " ms");
        if (lookup->gai_error == EAI_SYSTEM)
            return system_error(what, lookup->sys_errno);
        if (lookup->gai_error != 0)
            return internal_error(what + ": " + gai_strerror(lookup->gai_error));
        if (lookup->addresses.empty())
            return internal_error(what + ": no IPv4 or IPv6 address");
        return lookup->addresses;
    }
};

}  // namespace

const HostResolver& system_resolver()
{
    static const SystemResolver resolver;
    return resolver;
}

void StaticResolver::add(const std::string& host, const std::vector<std::string>& addresses)
{
    auto& list = answers_[lookup_key(host)];
    list.insert(list.end(), addresses.begin(), addresses.end());
}

Result<std::vector<proto::IpAddress>> StaticResolver::resolve(const std::string& host, int /*timeout_ms*/) const
{
    const auto it = answers_.find(lookup_key(host));
    if (it == answers_.end() || it->second.empty())
        return internal_error("Failed to resolve '" + host + "': Name or service not known");
    std::vector<proto::IpAddress> out;
    for (const std::string& text : it->second) {
        const auto address = proto::parse_ip_literal(text);
        if (!address)
            return internal_error("Failed to resolve '" + host + "': answer '" + text + "' is not an IP address");
        add_unique(out, *address);
    }
    return out;
}

}  // namespace nps::net
