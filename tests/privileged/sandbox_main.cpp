// SPDX-License-Identifier: Apache-2.0
// The privileged suite skips (exit 77, meson's "skipped") where the sandbox
// cannot exist, saying why; the user-namespace cases (TEST_SUITE "userns")
// are left out, saying why, where the kernel cannot idmap a rootfs.
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
    if (std::string userns = nps::test::user_namespace_unavailable_reason(); !userns.empty()) {
        std::printf("skipping the user-namespace cases (test suite 'userns'): %s\n", userns.c_str());
        context.addFilter("test-suite-exclude", "userns");
    }
    return context.run();
}
