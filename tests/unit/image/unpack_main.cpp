// SPDX-License-Identifier: Apache-2.0
// Unpacking keeps owners, makes whiteout devices and sets trusted.* xattrs:
// all need root. Without it the suite says so and skips (exit 77).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdio>

int main(int argc, char** argv)
{
    if (::geteuid() != 0) {
        std::printf("skipped: unpacking layers needs root (CAP_CHOWN, CAP_MKNOD, trusted.* xattrs)\n");
        return 77;
    }
    doctest::Context context(argc, argv);
    return context.run();
}
