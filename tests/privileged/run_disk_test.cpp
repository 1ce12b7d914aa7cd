// SPDX-License-Identifier: Apache-2.0
// `nps-runner run --disk`: /tmp and /dev/shm share one bounded tmpfs
// (docs/sandbox.md "Disk"); a write past the limit fails with ENOSPC.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "nps/cgroup/mode.hpp"
#include "sandbox_rootfs.hpp"
#include "temp_dir.hpp"
#include "text_contains.hpp"

using nps::test::run_sh;

namespace {

using nps::test::contains;

// The number after "name=" in the command's output.
long long value_of(const std::string& out, const std::string& name)
{
    auto at = out.find(name + "=");
    REQUIRE_MESSAGE(at != std::string::npos, out);
    return std::atoll(out.c_str() + at + name.size() + 1);
}

// Fills /tmp, then /dev/shm, 1 MiB blocks, and reports what each holds.
constexpr const char* kFill =
    "dd if=/dev/zero of=/tmp/fill bs=1M count=%s 2>&1 | grep -o 'No space left on device'; "
    "echo tmp=$(wc -c </tmp/fill); "
    "dd if=/dev/zero of=/dev/shm/fill bs=1M count=%s 2>&1 | grep -o 'No space left on device'; "
    "echo shm=$(wc -c </dev/shm/fill)";

std::string fill_script(int mib_each)
{
    char script[512];
    std::snprintf(script, sizeof script, kFill, std::to_string(mib_each).c_str(), std::to_string(mib_each).c_str());
    return script;
}

int count(const std::string& text, const std::string& part)
{
    int n = 0;
    for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1))
        ++n;
    return n;
}

}  // namespace

TEST_CASE("run --disk: /tmp and /dev/shm together hold at most the limit, then ENOSPC")
{
    constexpr long long kLimit = 16ll << 20;
    auto r = run_sh(fill_script(24), {"--disk", "16Mi"});
    INFO("out: " << r.out << "err: " << r.err);
    CHECK(r.exit_status == 0);
    // Both writes stopped on a full space.
    CHECK(count(r.out, "No space left on device") == 2);
    const long long tmp = value_of(r.out, "tmp"), shm = value_of(r.out, "shm");
    CHECK(tmp + shm <= kLimit);
    CHECK(tmp + shm >= kLimit - (1ll << 20));  // about the limit, not less
}

TEST_CASE("run --disk: a command within its limit writes /tmp and /dev/shm in full")
{
    auto r = run_sh(fill_script(8), {"--disk", "32Mi"});
    INFO("out: " << r.out << "err: " << r.err);
    CHECK(r.exit_status == 0);
    CHECK(!contains(r.out, "No space left on device"));
    CHECK(value_of(r.out, "tmp") == 8ll << 20);
    CHECK(value_of(r.out, "shm") == 8ll << 20);
}

TEST_CASE("run: the disk limit defaults to workers.default_disk; /dev/shm stays noexec")
{
    // df -k: 1K-blocks of /tmp, the space's size.
    const std::string script = "df -k /tmp | tail -1 | awk '{print \"size=\" $2}'; "
                               "cp /bin/busybox /dev/shm/x && /dev/shm/x true; echo shm_exec=$?";
    auto defaults = run_sh(script);
    INFO("out: " << defaults.out << "err: " << defaults.err);
    CHECK(defaults.exit_status == 0);
    CHECK(value_of(defaults.out, "size") == 256 * 1024);  // 256Mi
    CHECK(value_of(defaults.out, "shm_exec") != 0);

    nps::test::TempDir dir("nps-run-disk");
    const std::string config = dir.file("config.toml");
    std::ofstream(config) << "[workers]\ndefault_disk = \"8Mi\"\n";
    auto configured = run_sh(script, {"--config", config});
    CHECK(value_of(configured.out, "size") == 8 * 1024);
    auto flag = run_sh(script, {"--config", config, "--disk", "12Mi"});
    CHECK(value_of(flag.out, "size") == 12 * 1024);
}

TEST_CASE("run --disk refuses sizes below 1Mi, above workers.max_disk, and nonsense")
{
    nps::test::TempDir dir("nps-run-disk");
    const std::string config = dir.file("config.toml");
    std::ofstream(config) << "[workers]\nmax_disk = \"64Mi\"\ndefault_disk = \"8Mi\"\n";
    struct Case {
        std::vector<std::string> args;
        std::string message;
    } cases[] = {
        {{"--disk", "512Ki"}, "--disk must be at least"},
        {{"--disk", "lots"}, "lots"},
        {{"--config", config, "--disk", "65Mi"}, "exceeds workers.max_disk"},
        {{"--disk", "2Gi"}, "exceeds workers.max_disk"},  // the default ceiling, 1Gi
    };
    for (const auto& c : cases) {
        auto r = run_sh("echo ran", c.args);
        CHECK_MESSAGE(r.exit_status == 2, c.args.back());
        CHECK_MESSAGE(contains(r.err, c.message), r.err);
        CHECK(!contains(r.out, "ran"));
    }
    auto within = run_sh("echo ran", {"--config", config, "--disk", "64Mi"});
    CHECK(within.exit_status == 0);
}

TEST_CASE("run --disk above --memory: filling the disk is an OOM kill, not ENOSPC (tmpfs pages are memory)")
{
    auto layout = nps::cgroup::detect_cgroup_layout();
    if (!layout || layout->mode == nps::cgroup::CgroupMode::none) {
        MESSAGE("no memory cgroup on this host: nothing charges the tmpfs pages");
        return;
    }
    // dd as pid 1: the OOM killer picks the writer, whose files stay charged.
    auto r = run_sh("exec dd if=/dev/zero of=/tmp/fill bs=1M count=96", {"--memory", "32Mi", "--disk", "128Mi"});
    INFO("out: " << r.out << "err: " << r.err);
    CHECK(r.exit_status == 137);
    CHECK(!contains(r.err, "No space left on device"));
    CHECK(contains(r.err, "OOM killer"));
}
