// SPDX-License-Identifier: Apache-2.0
// The default seccomp program is built into the executable at build time
// (seccomp-generate); it must be exactly what libseccomp compiles from the
// allowlist now, or the two have drifted apart.
#include <doctest/doctest.h>

#include <cstring>

#include "nps/sandbox/seccomp.hpp"

TEST_CASE("the built-in default seccomp program equals a fresh compile of the allowlist")
{
    auto builtin = nps::sandbox::SeccompProgram::default_program();
    auto fresh = nps::sandbox::SeccompProgram::compile({});
    REQUIRE_MESSAGE(builtin.has_value(), (builtin ? std::string() : builtin.error().describe()));
    REQUIRE_MESSAGE(fresh.has_value(), (fresh ? std::string() : fresh.error().describe()));
    const sock_fprog* a = (*builtin)->program();
    const sock_fprog* b = (*fresh)->program();
    REQUIRE(a->len == b->len);
    CHECK(a->len > 100);
    CHECK(std::memcmp(a->filter, b->filter, a->len * sizeof(sock_filter)) == 0);
}
