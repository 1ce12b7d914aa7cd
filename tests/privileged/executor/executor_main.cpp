// SPDX-License-Identifier: Apache-2.0
// Skips (exit 77) where the executor cannot run workers, saying why.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

#include "executor_fixture.hpp"

int main(int argc, char** argv)
{
    std::string reason = nps::test::executor_unavailable_reason();
    if (!reason.empty()) {
        std::printf("skipped: %s\n", reason.c_str());
        return 77;
    }
    doctest::Context context(argc, argv);
    return context.run();
}
