// SPDX-License-Identifier: Apache-2.0
// Platforms (os/architecture/variant, OCI image-index spelling) and the
// choice of one manifest from an index.
//
// The host platform is the architecture this binary was compiled for (what
// its own userspace runs), with the ARM variant read from uname(2)
// (armv6l → v6, armv7l → v7; arm64 is v8). Matching: os and architecture
// must be equal; for arm64 an absent variant equals "v8"; for arm a lower
// variant runs on a higher one (v6 on v7), the newest such preferred; an
// entry without a variant matches any variant. Preference: exact, then
// equivalent (arm64 ""/v8), then no variant, then an older ARM variant.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nps/base/result.hpp"

namespace nps::image {

struct Platform {
    std::string os;            // "linux"
    std::string architecture;  // GOARCH spelling: amd64, arm64, arm, 386, ppc64le, s390x, riscv64
    std::string variant;       // "v7", "v8", or empty

    std::string to_string() const;  // "linux/arm/v7", "linux/amd64"
    bool operator==(const Platform&) const = default;
};

Platform host_platform();

// "os/arch[/variant]" → Platform; an error names the text.
Result<Platform> parse_platform(std::string_view text);

// How well an image built for `candidate` runs on `wanted`: 0 = not at all,
// higher = better, in the order above.
int platform_match(const Platform& wanted, const Platform& candidate);

// The index of the best match among `candidates` (nullopt when none runs on
// `wanted`). Ties go to the earliest entry.
std::optional<std::size_t> select_platform(const Platform& wanted, const std::vector<Platform>& candidates);

// The choice among the manifests an index lists (for an import and a pull).
struct PlatformChoice {
    std::optional<std::size_t> chosen;  // index into `known`; nullopt: none runs on `wanted`
    std::string available;              // the platforms seen, "linux/amd64, linux/arm64", for a message
    std::optional<Error> learn_error;   // why a platform could not be learned, if one could not
};

// `known[i]` is the platform the index gave entry i, nullopt when it gave
// none; then `learn(i)` finds it (from the image's config). An entry whose
// platform cannot be learned is left out, unless it is the only entry: then
// its error is the result.
Result<PlatformChoice> choose_platform(const std::vector<std::optional<Platform>>& known, const Platform& wanted,
                                       const std::function<Result<Platform>(std::size_t)>& learn);

}  // namespace nps::image
