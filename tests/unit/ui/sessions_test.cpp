// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <set>
#include <string>

#include "nps/ui/sessions.hpp"

using nps::FakeClock;
using nps::ui::Sessions;

TEST_CASE("a login code opens one session, once")
{
    FakeClock clock;
    Sessions sessions(clock);
    const auto code = sessions.issue_code();
    REQUIRE(code);
    CHECK(code->code.size() == 64);
    CHECK(code->expires_at_ms == clock.now_ms() + nps::ui::kCodeLifetimeMs);
    const auto session = sessions.redeem(code->code);
    REQUIRE(session);
    REQUIRE(session->has_value());
    CHECK((*session)->id.size() == 64);
    CHECK((*session)->csrf.size() == 64);
    CHECK((*session)->id != (*session)->csrf);
    CHECK(sessions.find((*session)->id) != nullptr);
    // Spent: the same code again opens nothing.
    const auto again = sessions.redeem(code->code);
    REQUIRE(again);
    CHECK_FALSE(again->has_value());
}

TEST_CASE("unknown and expired codes and sessions open nothing")
{
    FakeClock clock;
    Sessions sessions(clock);
    CHECK_FALSE(sessions.redeem("")->has_value());
    CHECK_FALSE(sessions.redeem(std::string(64, 'a'))->has_value());
    CHECK(sessions.find("") == nullptr);

    const auto late = sessions.issue_code();
    clock.advance_ms(nps::ui::kCodeLifetimeMs);
    CHECK_FALSE(sessions.redeem(late->code)->has_value());

    const auto code = sessions.issue_code();
    const auto session = sessions.redeem(code->code);
    const std::string id = (*session)->id;
    clock.advance_ms(nps::ui::kSessionLifetimeMs - 1);
    CHECK(sessions.find(id) != nullptr);
    clock.advance_ms(1);
    CHECK(sessions.find(id) == nullptr);
}

TEST_CASE("codes and sessions are capped, the oldest dropped first")
{
    FakeClock clock;
    Sessions sessions(clock);
    const auto first = sessions.issue_code();
    for (std::size_t i = 0; i < nps::ui::kMaxCodes; ++i) {
        clock.advance_ms(1);
        REQUIRE(sessions.issue_code());
    }
    CHECK_FALSE(sessions.redeem(first->code)->has_value());

    std::set<std::string> ids;
    for (std::size_t i = 0; i < nps::ui::kMaxSessions + 3; ++i) {
        clock.advance_ms(1);
        ids.insert((*sessions.redeem(sessions.issue_code()->code))->id);
    }
    CHECK(ids.size() == nps::ui::kMaxSessions + 3);
    CHECK(sessions.live_sessions() == nps::ui::kMaxSessions);
}

TEST_CASE("logout ends the session; the anti-CSRF token must match exactly")
{
    FakeClock clock;
    Sessions sessions(clock);
    const auto session = **sessions.redeem(sessions.issue_code()->code);
    CHECK(Sessions::csrf_matches(session, session.csrf));
    CHECK_FALSE(Sessions::csrf_matches(session, ""));
    CHECK_FALSE(Sessions::csrf_matches(session, session.csrf.substr(1)));
    CHECK_FALSE(Sessions::csrf_matches(session, session.id));
    sessions.end(session.id);
    CHECK(sessions.find(session.id) == nullptr);
    sessions.end("unknown");
}

TEST_CASE("cookie values are found by exact name")
{
    using nps::ui::cookie_value;
    CHECK(cookie_value("nps_runner_session=abc", "nps_runner_session") == "abc");
    CHECK(cookie_value("a=1; nps_runner_session=abc; b=2", "nps_runner_session") == "abc");
    CHECK(cookie_value("xnps_runner_session=abc", "nps_runner_session") == std::nullopt);
    CHECK(cookie_value("nps_runner_session_old=abc", "nps_runner_session") == std::nullopt);
    CHECK(cookie_value("", "nps_runner_session") == std::nullopt);
    CHECK(cookie_value("a=1;;", "nps_runner_session") == std::nullopt);
    CHECK(cookie_value("nps_runner_session=", "nps_runner_session") == "");
}
