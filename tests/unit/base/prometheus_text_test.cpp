// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <cstdint>
#include <limits>

#include "nps/base/prometheus_text.hpp"

namespace prometheus = nps::prometheus;
using prometheus::Type;

TEST_CASE("prometheus text: a family is a HELP and a TYPE line, then its samples")
{
    std::string out;
    prometheus::family(out, "nps_claims_total", Type::counter, "Claim attempts by outcome.");
    prometheus::sample(out, "nps_claims_total", prometheus::label("outcome", "granted"), std::uint64_t{3});
    prometheus::metric(out, "nps_tasks_running", Type::gauge, "Tasks running.", std::int64_t{-1});
    prometheus::metric(out, "h", Type::histogram, "A histogram.", 0.25);
    CHECK(out ==
          "# HELP nps_claims_total Claim attempts by outcome.\n# TYPE nps_claims_total counter\n"
          "nps_claims_total{outcome=\"granted\"} 3\n"
          "# HELP nps_tasks_running Tasks running.\n# TYPE nps_tasks_running gauge\nnps_tasks_running -1\n"
          "# HELP h A histogram.\n# TYPE h histogram\nh 0.25\n");
}

TEST_CASE("prometheus text: values are written in full")
{
    CHECK(prometheus::value_text(1733520000.123456) == "1733520000.123456");
    CHECK(prometheus::value_text(123456789.0) == "123456789");
    CHECK(prometheus::value_text(0.005) == "0.005");
    CHECK(prometheus::value_text(std::numeric_limits<double>::infinity()) == "+Inf");
    CHECK(prometheus::value_text(-std::numeric_limits<double>::infinity()) == "-Inf");
    CHECK(prometheus::value_text(std::numeric_limits<double>::quiet_NaN()) == "NaN");
    std::string out;
    prometheus::sample(out, "big", {}, std::numeric_limits<std::uint64_t>::max());
    CHECK(out == "big 18446744073709551615\n");
}

TEST_CASE("prometheus text: label values are escaped")
{
    CHECK(prometheus::label("nid", "urn:nps:agent:a.example:x") == "{nid=\"urn:nps:agent:a.example:x\"}");
    CHECK(prometheus::label("v", "a\"b\\c\nd") == "{v=\"a\\\"b\\\\c\\nd\"}");
    CHECK(prometheus::label("v", "") == "{v=\"\"}");
}
