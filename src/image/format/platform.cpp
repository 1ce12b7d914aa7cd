// SPDX-License-Identifier: Apache-2.0
#include "nps/image/platform.hpp"

#include <sys/utsname.h>

#include <cstring>

namespace nps::image {

namespace {

// GOARCH spelling of the architecture this binary runs as.
constexpr const char* compiled_architecture()
{
#if defined(__x86_64__)
    return "amd64";
#elif defined(__aarch64__)
    return "arm64";
#elif defined(__arm__)
    return "arm";
#elif defined(__i386__)
    return "386";
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    return "ppc64le";
#elif defined(__s390x__)
    return "s390x";
#elif defined(__riscv) && __riscv_xlen == 64
    return "riscv64";
#else
#error "unknown architecture: add its GOARCH name to host_platform()"
#endif
}

// v6, v7 from uname's "armv6l", "armv7l"; empty when unknown.
std::string arm_variant()
{
    utsname u{};
    if (::uname(&u) != 0 || std::strncmp(u.machine, "armv", 4) != 0)
        return {};
    std::string variant = "v";
    for (const char* p = u.machine + 4; *p >= '0' && *p <= '9'; ++p)
        variant.push_back(*p);
    return variant.size() > 1 ? variant : std::string();
}

int variant_number(const std::string& variant)
{
    if (variant.size() < 2 || variant[0] != 'v')
        return -1;
    int n = 0;
    for (std::size_t i = 1; i < variant.size(); ++i) {
        if (variant[i] < '0' || variant[i] > '9' || n > 1000)
            return -1;
        n = n * 10 + (variant[i] - '0');
    }
    return n;
}

bool valid_word(std::string_view s)
{
    if (s.empty() || s.size() > 32)
        return false;
    for (char c : s)
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-'))
            return false;
    return true;
}

}  // namespace

std::string Platform::to_string() const
{
    std::string out = os + "/" + architecture;
    if (!variant.empty())
        out += "/" + variant;
    return out;
}

Platform host_platform()
{
    Platform p{.os = "linux", .architecture = compiled_architecture(), .variant = {}};
    if (p.architecture == "arm64")
        p.variant = "v8";
    else if (p.architecture == "arm")
        p.variant = arm_variant();
    return p;
}

Result<Platform> parse_platform(std::string_view text)
{
    Platform p;
    std::string_view rest = text;
    std::string_view parts[3];
    std::size_t count = 0;
    while (count < 3) {
        const auto slash = rest.find('/');
        parts[count++] = rest.substr(0, slash);
        if (slash == std::string_view::npos) {
            rest = {};
            break;
        }
        rest.remove_prefix(slash + 1);
        if (count == 3)
            return internal_error("Invalid platform '" + std::string(text) + "': expected OS/ARCH[/VARIANT]");
    }
    if (count < 2)
        return internal_error("Invalid platform '" + std::string(text) + "': expected OS/ARCH[/VARIANT]");
    for (std::size_t i = 0; i < count; ++i)
        if (!valid_word(parts[i]))
            return internal_error("Invalid platform '" + std::string(text) + "': '" + std::string(parts[i]) +
                                  "' is not a lowercase platform word");
    p.os = parts[0];
    p.architecture = parts[1];
    if (count == 3)
        p.variant = parts[2];
    return p;
}

int platform_match(const Platform& wanted, const Platform& candidate)
{
    if (wanted.os != candidate.os || wanted.architecture != candidate.architecture)
        return 0;
    if (wanted.variant == candidate.variant)
        return 1000;
    if (wanted.architecture == "arm64") {
        // arm64 has one variant in practice; "" and "v8" name the same thing.
        const auto norm = [](const std::string& v) { return v.empty() ? std::string("v8") : v; };
        if (norm(wanted.variant) == norm(candidate.variant))
            return 900;
    }
    if (candidate.variant.empty())
        return 500;
    if (wanted.architecture == "arm") {
        // Older ARM variants run on newer cores; prefer the newest that does.
        const int want = variant_number(wanted.variant);
        const int have = variant_number(candidate.variant);
        if (want >= 0 && have >= 0 && have <= want && have < 300)
            return 100 + have;
    }
    return 0;
}

std::optional<std::size_t> select_platform(const Platform& wanted, const std::vector<Platform>& candidates)
{
    std::optional<std::size_t> best;
    int best_score = 0;
    for (std::size_t i = 0; i < candidates.size(); ++i) {
        const int score = platform_match(wanted, candidates[i]);
        if (score > best_score) {
            best = i;
            best_score = score;
        }
    }
    return best;
}

Result<PlatformChoice> choose_platform(const std::vector<std::optional<Platform>>& known, const Platform& wanted,
                                       const std::function<Result<Platform>(std::size_t)>& learn)
{
    PlatformChoice choice;
    std::vector<Platform> platforms;
    std::vector<std::size_t> index_of;
    for (std::size_t i = 0; i < known.size(); ++i) {
        if (known[i]) {
            platforms.push_back(*known[i]);
        } else {
            auto learned = learn(i);
            if (!learned) {
                if (known.size() == 1)
                    return std::move(learned).error();
                choice.learn_error = learned.error();
                continue;
            }
            platforms.push_back(*learned);
        }
        index_of.push_back(i);
    }
    if (auto best = select_platform(wanted, platforms))
        choice.chosen = index_of[*best];
    for (const auto& p : platforms)
        choice.available += (choice.available.empty() ? "" : ", ") + p.to_string();
    return choice;
}

}  // namespace nps::image
