// SPDX-License-Identifier: Apache-2.0
// Runs the suite unless openssl or python3 is missing (then exit 77, saying
// why). An environment proxy is set on purpose: fetches must not use it.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>

#include "https_fixture.hpp"

int main(int argc, char** argv)
{
    const std::string reason = nps::test::https_fixture_missing();
    if (!reason.empty()) {
        std::printf("skipped: %s\n", reason.c_str());
        return 77;
    }
    setenv("https_proxy", "http://127.0.0.1:9", 1);
    setenv("HTTPS_PROXY", "http://127.0.0.1:9", 1);
    setenv("ALL_PROXY", "http://127.0.0.1:9", 1);
    doctest::Context context(argc, argv);
    return context.run();
}
