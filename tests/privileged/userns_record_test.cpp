// SPDX-License-Identifier: Apache-2.0
// The record of a passed idmap probe (src/sandbox/idmap_probe_record.hpp):
// decide_user_namespace() trusts it only for this boot, the same mount, the
// same rootfs kind, and a file nobody else may write; the probe itself
// (user_namespace_unavailable_reason) never reads it.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "nps/config/config.hpp"
#include "nps/sandbox/userns.hpp"
#include "sandbox_rootfs.hpp"
#include "temp_dir.hpp"
#include "text_contains.hpp"

namespace {

namespace sandbox = nps::sandbox;
using nps::test::contains;

std::vector<std::string> records(const std::string& dir)
{
    std::vector<std::string> found;
    std::error_code ignored;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ignored))
        if (entry.path().filename().string().rfind("idmap-probe-", 0) == 0)
            found.push_back(entry.path().string());
    return found;
}

std::string read_text(const std::string& path)
{
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

void write_text(const std::string& path, const std::string& text)
{
    std::ofstream(path, std::ios::trunc) << text;
}

sandbox::UsernsDecision decide(const sandbox::UsernsSlotsOptions& range, const std::string& scratch,
                               sandbox::RootfsKind kind = sandbox::RootfsKind::directory)
{
    auto decision = sandbox::decide_user_namespace(sandbox::UsernsMode::automatic, range, scratch, kind);
    REQUIRE_MESSAGE(decision, (decision ? std::string() : decision.error().describe()));
    return std::move(*decision);
}

// Whether the kernel can idmap here at all (else the cases do not apply).
bool idmap_possible()
{
    const std::string why_not = nps::test::user_namespace_unavailable_reason();
    if (!why_not.empty())
        MESSAGE("not applicable, the kernel cannot idmap here: " << why_not);
    return why_not.empty();
}

// A lock directory (where records go) and a scratch directory, both fresh,
// and the default id range with those locks.
struct Scratch {
    nps::test::TempDir dir{"nps-userns-record"};
    std::string locks = dir / "locks";
    std::string scratch = dir / "scratch";
    sandbox::UsernsSlotsOptions range;

    Scratch()
    {
        std::filesystem::create_directories(scratch);
        const nps::config::Config defaults;
        range = sandbox::userns_slots_options(static_cast<std::uint32_t>(defaults.userns_first_host_id),
                                              static_cast<std::uint32_t>(defaults.userns_id_count), locks);
    }
};

}  // namespace

TEST_CASE_FIXTURE(Scratch, "a passed idmap probe is recorded for this boot and mount, and stands for the probe only while it is valid")
{
    if (!idmap_possible())
        return;

    // A tmpfs of its own: the scratch directory's mount, which the record names.
    REQUIRE(::mount("tmpfs", scratch.c_str(), "tmpfs", 0, "size=1m,mode=0755") == 0);
    CHECK(decide(range, scratch).enabled);
    const auto written = records(locks);
    REQUIRE(written.size() == 1);
    const std::string line = read_text(written.front());
    CHECK(contains(line, "boot=" + read_text("/proc/sys/kernel/random/boot_id").substr(0, 36) + " "));
    CHECK(contains(line, " kind=directory\n"));
    struct stat st {};
    REQUIRE(::stat(written.front().c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);

    // Read-only now: the probe cannot make its directories there, so only the
    // record can say yes.
    REQUIRE(::mount(nullptr, scratch.c_str(), nullptr, MS_REMOUNT | MS_RDONLY, nullptr) == 0);
    const std::string probed = sandbox::user_namespace_unavailable_reason(range, scratch, sandbox::RootfsKind::directory);
    CHECK(contains(probed, "Failed to make a probe directory"));
    CHECK(decide(range, scratch).enabled);  // the record stands for the probe
    // Another kind was never probed there.
    auto overlay = decide(range, scratch, sandbox::RootfsKind::overlay);
    CHECK(!overlay.enabled);
    CHECK(contains(overlay.reason, "Failed to make a probe directory"));

    // Writable by others: not trusted, probed again (and failing, read-only).
    REQUIRE(::chmod(written.front().c_str(), 0622) == 0);
    auto loose = decide(range, scratch);
    CHECK(!loose.enabled);
    CHECK(contains(loose.reason, "auto: off, a rootfs directory cannot be mounted here"));
    REQUIRE(::chmod(written.front().c_str(), 0600) == 0);
    CHECK(decide(range, scratch).enabled);

    // From another boot: not trusted.
    std::string other_boot = line;
    other_boot.replace(other_boot.find("boot=") + 5, 1, line[5] == '0' ? "1" : "0");
    write_text(written.front(), other_boot);
    CHECK(!decide(range, scratch).enabled);
    write_text(written.front(), line);
    CHECK(decide(range, scratch).enabled);

    // Another mount at the same place: another record's business where the
    // kernel tells mounts apart for the whole boot (STATX_MNT_ID_UNIQUE,
    // Linux 6.8); before, ids are reused, and a mount of the same type may
    // inherit the record, which idmaps alike.
    REQUIRE(::umount2(scratch.c_str(), MNT_DETACH) == 0);
    REQUIRE(::mount("tmpfs", scratch.c_str(), "tmpfs", MS_RDONLY, "size=1m") == 0);
    struct statx stx {};
    REQUIRE(::statx(AT_FDCWD, scratch.c_str(), 0, 0x4000 /* STATX_MNT_ID_UNIQUE */, &stx) == 0);
    if (stx.stx_mask & 0x4000)
        CHECK(!decide(range, scratch).enabled);
    else
        MESSAGE("this kernel reuses mount ids: the remount's check does not apply");
    CHECK(records(locks).size() == 1);  // a failed probe is not recorded
}

TEST_CASE_FIXTURE(Scratch, "user_namespace on records its probe and keeps the probe's namespace as slot 0's; off reads and writes no record")
{
    if (!idmap_possible())
        return;

    auto off = sandbox::decide_user_namespace(sandbox::UsernsMode::off, range, scratch, sandbox::RootfsKind::directory);
    REQUIRE(off);
    CHECK(!off->enabled);
    CHECK(records(locks).empty());

    auto on = sandbox::decide_user_namespace(sandbox::UsernsMode::on, range, scratch, sandbox::RootfsKind::directory);
    REQUIRE_MESSAGE(on, (on ? std::string() : on.error().describe()));
    CHECK(on->enabled);
    CHECK(records(locks).size() == 1);
    // The namespace the check made is slot 0's: a lease gets it, mapped there.
    auto lease = on->slots->acquire();
    REQUIRE(lease);
    CHECK(lease->slot() == 0);
    CHECK(lease->spec().host_uid == range.first_host_id);
    CHECK(lease->spec().fd >= 0);
}
