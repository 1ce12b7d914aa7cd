// SPDX-License-Identifier: Apache-2.0
// Retry delays and subtask ids.
#include <doctest/doctest.h>

#include <regex>

#include "nps/nop/backoff.hpp"
#include "nps/nop/subtask_id.hpp"

using namespace nps::nop;
using nps::proto::Backoff;
using nps::proto::RetryPolicy;
using std::chrono::milliseconds;

TEST_CASE("backoff: the three curves, capped")
{
    RetryPolicy policy;  // exponential, 1000, 30000
    CHECK(backoff_delay(policy, 1) == milliseconds(1000));
    CHECK(backoff_delay(policy, 2) == milliseconds(2000));
    CHECK(backoff_delay(policy, 3) == milliseconds(4000));
    CHECK(backoff_delay(policy, 5) == milliseconds(16000));
    CHECK(backoff_delay(policy, 6) == milliseconds(30000));
    CHECK(backoff_delay(policy, 255) == milliseconds(30000));
    CHECK(backoff_delay(policy, 4'000'000'000u) == milliseconds(30000));

    policy.backoff = Backoff::linear;
    policy.initial_delay_ms = 300;
    CHECK(backoff_delay(policy, 1) == milliseconds(300));
    CHECK(backoff_delay(policy, 2) == milliseconds(600));
    CHECK(backoff_delay(policy, 100) == milliseconds(30000));

    policy.backoff = Backoff::fixed;
    CHECK(backoff_delay(policy, 1) == milliseconds(300));
    CHECK(backoff_delay(policy, 50) == milliseconds(300));

    policy.initial_delay_ms = 50'000;  // above the cap
    CHECK(backoff_delay(policy, 1) == milliseconds(30000));
    policy.initial_delay_ms = 0;
    policy.backoff = Backoff::exponential;
    CHECK(backoff_delay(policy, 10) == milliseconds(0));

    // The largest values do not overflow.
    policy.initial_delay_ms = 4'294'967'295u;
    policy.max_delay_ms = 4'294'967'295u;
    CHECK(backoff_delay(policy, 200) == milliseconds(4'294'967'295LL));
    policy.backoff = Backoff::linear;
    CHECK(backoff_delay(policy, 4'294'967'295u) == milliseconds(4'294'967'295LL));
    // Retry 0 is read as 1.
    policy.initial_delay_ms = 10;
    CHECK(backoff_delay(policy, 0) == milliseconds(10));
}

TEST_CASE("subtask ids: UUID v4 shaped, stable, distinct")
{
    const std::string a = node_subtask_id("task-1", "fetch");
    CHECK(std::regex_match(a, std::regex("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")));
    CHECK(a == node_subtask_id("task-1", "fetch"));
    CHECK(a != node_subtask_id("task-1", "fetch2"));
    CHECK(a != node_subtask_id("task-2", "fetch"));
    // The separator keeps ("ab","c") and ("a","bc") apart.
    CHECK(node_subtask_id("ab", "c") != node_subtask_id("a", "bc"));
    const std::string c = compensation_subtask_id("task-1", "fetch");
    CHECK(c != a);
    CHECK(c == compensation_subtask_id("task-1", "fetch"));
    CHECK(std::regex_match(c, std::regex("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")));
}
