// SPDX-License-Identifier: Apache-2.0
// The image suite needs umoci, skopeo, busybox and root; without them it
// skips (exit 77) saying why.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <exception>

#include "test_images.hpp"

int main(int argc, char** argv)
{
    const std::string reason = image_it::missing_tools();
    if (!reason.empty()) {
        std::printf("skipped: %s\n", reason.c_str());
        return 77;
    }
    try {
        image_it::test_images();
    } catch (const std::exception& e) {
        std::printf("failed to build the test images: %s\n", e.what());
        return 1;
    }
    doctest::Context context(argc, argv);
    return context.run();
}
