// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <cerrno>

#include "nps/base/result.hpp"

namespace {

nps::Result<int> half(int v)
{
    if (v % 2)
        return nps::protocol_error("NOP-TASK-DAG-INVALID", "odd value");
    return v / 2;
}

nps::Result<int> quarter(int v)
{
    int h = NPS_TRY(half(v));
    return NPS_TRY(half(h));
}

}  // namespace

TEST_CASE("Result carries a value or an error and NPS_TRY propagates")
{
    auto ok = quarter(8);
    REQUIRE(ok);
    CHECK(*ok == 2);
    auto bad = quarter(6);
    REQUIRE_FALSE(bad);
    CHECK(bad.error().code == "NOP-TASK-DAG-INVALID");
    CHECK(bad.error().message == "odd value");
}

TEST_CASE("system errors describe errno")
{
    auto e = nps::system_error("Failed to open '/nope'", ENOENT);
    CHECK(e.describe() == "Failed to open '/nope': No such file or directory");
    CHECK(e.code.empty());
}
