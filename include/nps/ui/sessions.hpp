// SPDX-License-Identifier: Apache-2.0
// Dashboard logins (docs/dashboard.md "Access").
//
// A browser cannot send the API's bearer token, so on TCP the dashboard is
// opened with a one-time login code: `nps-runner ui` asks the daemon for one
// as a client the API already trusts (the unix socket or the token), and the
// browser exchanges it once, at GET /ui/login?code=…, for a session: the
// value of an HttpOnly, SameSite=Strict cookie, and an anti-CSRF token that
// the dashboard's script must send with every request that changes state.
//
// Everything lives in memory: a daemon restart ends every session. Codes and
// sessions are looked up by the SHA-256 of their value, so the lookup's
// timing says nothing about a secret. Both are capped (the oldest goes
// first) and expire: a code after kCodeLifetimeMs, a session after
// kSessionLifetimeMs from its login.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "nps/base/clock.hpp"
#include "nps/base/result.hpp"

namespace nps::ui {

inline constexpr std::int64_t kCodeLifetimeMs = 120'000;
inline constexpr std::int64_t kSessionLifetimeMs = 12 * 3600 * 1000;
inline constexpr std::size_t kMaxCodes = 32;
inline constexpr std::size_t kMaxSessions = 64;
// The name of the session cookie.
inline constexpr std::string_view kSessionCookie = "nps_runner_session";

struct LoginCode {
    std::string code;  // 64 hex digits
    std::int64_t expires_at_ms = 0;
};

struct Session {
    std::string id;    // the cookie's value, 64 hex digits
    std::string csrf;  // the anti-CSRF token, 64 hex digits
    std::int64_t expires_at_ms = 0;
};

class Sessions {
public:
    explicit Sessions(const Clock& clock) : clock_(clock) {}

    // A new code; fails only when no random bytes can be drawn.
    Result<LoginCode> issue_code();
    // Exchanges a live code for a new session; the code is spent either
    // way. nullopt for an unknown, spent or expired code.
    Result<std::optional<Session>> redeem(std::string_view code);
    // The live session with this cookie value, or nullptr.
    const Session* find(std::string_view id);
    // Ends the session (logout); unknown ids are ignored.
    void end(std::string_view id);
    // Whether `presented` is the session's anti-CSRF token (constant time).
    static bool csrf_matches(const Session& session, std::string_view presented);

    std::size_t live_sessions();

private:
    void expire();

    const Clock& clock_;
    std::map<std::string, std::int64_t> codes_;  // SHA-256 of the code → expiry
    std::map<std::string, Session> sessions_;    // SHA-256 of the id → session
};

// The value of cookie `name` in a Cookie header ("a=1; b=2"), or nullopt.
std::optional<std::string_view> cookie_value(std::string_view header, std::string_view name);

}  // namespace nps::ui
