// SPDX-License-Identifier: Apache-2.0
#include "nps/ui/sessions.hpp"


#include <algorithm>

#include "nps/base/digest.hpp"
#include "nps/base/random_id.hpp"
#include "nps/lazy/crypto.hpp"

namespace nps::ui {

namespace {

constexpr std::size_t kSecretBytes = 32;

// Drops the entry that expires first while `map` holds `cap` or more.
template <typename Map, typename Expiry>
void make_room(Map& map, std::size_t cap, Expiry expiry)
{
    while (map.size() >= cap) {
        auto oldest = std::min_element(map.begin(), map.end(),
                                       [&](const auto& a, const auto& b) { return expiry(a) < expiry(b); });
        map.erase(oldest);
    }
}

}  // namespace

void Sessions::expire()
{
    const std::int64_t now = clock_.now_ms();
    std::erase_if(codes_, [now](const auto& entry) { return entry.second <= now; });
    std::erase_if(sessions_, [now](const auto& entry) { return entry.second.expires_at_ms <= now; });
}

Result<LoginCode> Sessions::issue_code()
{
    expire();
    LoginCode code{.code = NPS_TRY(random_hex(kSecretBytes, "a dashboard login code")),
                   .expires_at_ms = clock_.now_ms() + kCodeLifetimeMs};
    make_room(codes_, kMaxCodes, [](const auto& entry) { return entry.second; });
    codes_.emplace(sha256_hex(code.code), code.expires_at_ms);
    return code;
}

Result<std::optional<Session>> Sessions::redeem(std::string_view code)
{
    expire();
    const auto it = codes_.find(sha256_hex(code));
    if (it == codes_.end())
        return std::optional<Session>{};
    codes_.erase(it);
    Session session{.id = NPS_TRY(random_hex(kSecretBytes, "a dashboard session")),
                    .csrf = NPS_TRY(random_hex(kSecretBytes, "a dashboard anti-CSRF token")),
                    .expires_at_ms = clock_.now_ms() + kSessionLifetimeMs};
    make_room(sessions_, kMaxSessions, [](const auto& entry) { return entry.second.expires_at_ms; });
    sessions_.emplace(sha256_hex(session.id), session);
    return std::optional<Session>(std::move(session));
}

const Session* Sessions::find(std::string_view id)
{
    expire();
    const auto it = sessions_.find(sha256_hex(id));
    return it == sessions_.end() ? nullptr : &it->second;
}

void Sessions::end(std::string_view id)
{
    sessions_.erase(sha256_hex(id));
}

bool Sessions::csrf_matches(const Session& session, std::string_view presented)
{
    return presented.size() == session.csrf.size() &&
           sym_CRYPTO_memcmp(presented.data(), session.csrf.data(), presented.size()) == 0;
}

std::size_t Sessions::live_sessions()
{
    expire();
    return sessions_.size();
}

std::optional<std::string_view> cookie_value(std::string_view header, std::string_view name)
{
    while (!header.empty()) {
        const std::size_t end = std::min(header.find(';'), header.size());
        std::string_view pair = header.substr(0, end);
        header.remove_prefix(std::min(end + 1, header.size()));
        while (!pair.empty() && pair.front() == ' ')
            pair.remove_prefix(1);
        const std::size_t eq = pair.find('=');
        if (eq != std::string_view::npos && pair.substr(0, eq) == name)
            return pair.substr(eq + 1);
    }
    return std::nullopt;
}

}  // namespace nps::ui
