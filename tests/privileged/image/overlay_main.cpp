// SPDX-License-Identifier: Apache-2.0
// The overlay rootfs suite needs root and overlayfs; without either it says
// so and skips (exit 77).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace {

bool kernel_has_overlay()
{
    std::ifstream in("/proc/filesystems");
    std::string line;
    while (std::getline(in, line)) {
        if (line.size() >= 7 && line.compare(line.size() - 7, 7, "overlay") == 0)
            return true;
    }
    return false;
}

}  // namespace

int main(int argc, char** argv)
{
    if (::geteuid() != 0) {
        std::printf("skipped: mounting overlays needs root\n");
        return 77;
    }
    if (!kernel_has_overlay()) {
        std::printf("skipped: the kernel has no overlay filesystem (modprobe overlay)\n");
        return 77;
    }
    doctest::Context context(argc, argv);
    return context.run();
}
