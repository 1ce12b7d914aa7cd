// SPDX-License-Identifier: Apache-2.0
// The pull suite needs what the image suite needs (umoci, skopeo, busybox,
// root) and docker-registry, openssl and python3; without them it skips
// (exit 77) saying why.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <exception>

#include "registry_fixture.hpp"
#include "test_images.hpp"

int main(int argc, char** argv)
{
    std::string reason = image_it::missing_tools();
    if (reason.empty())
        reason = image_it::missing_registry_tools();
    if (!reason.empty()) {
        std::printf("skipped: %s\n", reason.c_str());
        return 77;
    }
    try {
        image_it::test_images();
        image_it::test_pki();
    } catch (const std::exception& e) {
        std::printf("failed to build the test images or certificates: %s\n", e.what());
        return 1;
    }
    doctest::Context context(argc, argv);
    return context.run();
}
