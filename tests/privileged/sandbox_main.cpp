// SPDX-License-Identifier: Apache-2.0
// The privileged suite skips (exit 77, meson's "skipped") where the sandbox
// cannot exist, saying why.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

#include "sandbox_rootfs.hpp"

int main(int argc, char** argv)
{
    std::string reason = nps::test::sandbox_unavailable_reason();
    if (!reason.empty()) {
        std::printf("skipped: %s\n", reason.c_str());
        return 77;
    }
    doctest::Context context(argc, argv);
    return context.run();
}
