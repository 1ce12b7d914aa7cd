// SPDX-License-Identifier: Apache-2.0
// OverlayRootfs over layers unpacked by LayerCache: whiteouts seen through
// a real overlay mount, per-worker uppers, long chains (new mount API and
// the legacy option string), cleanup.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "disk_usage.hpp"
#include "image/layer_fixture.hpp"
#include "nps/image/layer_cache.hpp"
#include "nps/image/rootfs.hpp"
#include "nps/sandbox/spawner.hpp"
#include "nps/sandbox/userns.hpp"
#include "temp_dir.hpp"

using namespace nps::image;
using nps::test::CraftedLayer;
using nps::test::LayerRecipe;
using nps::test::make_layer;
using nps::test::slurp;
using nps::test::TempDir;
using nps::test::disk_bytes_beneath;

namespace {

bool exists(const std::string& path)
{
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0;
}

bool is_dir(const std::string& path)
{
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool is_mounted(const std::string& path)
{
    std::ifstream in("/proc/self/mountinfo");
    std::string line;
    while (std::getline(in, line)) {
        if (line.find(" " + path + " ") != std::string::npos)
            return true;
    }
    return false;
}

// Unpacks each recipe (listed bottom first) and returns the layer
// directories top first, as OverlayOptions wants them.
std::vector<std::string> unpack_chain(const TempDir& tmp, const std::vector<LayerRecipe>& bottom_first)
{
    auto cache = LayerCache::open({.layers_dir = tmp / "layers", .durability = Durability::none});
    REQUIRE_MESSAGE(cache, cache.error().describe());
    std::vector<LayerSource> sources;
    for (const LayerRecipe& recipe : bottom_first) {
        CraftedLayer layer = make_layer(recipe, tmp / ("blob-" + std::to_string(sources.size())));
        sources.push_back({layer.blob_path, layer.media_type, layer.diff_id});
    }
    auto top_first = cache->ensure_chain(sources);
    REQUIRE_MESSAGE(top_first, top_first.error().describe());
    REQUIRE(top_first->size() == sources.size());
    CHECK(top_first->front() == *cache->path_of(sources.back().diff_id));
    return std::move(top_first).value();
}

OverlayRootfs mount_rootfs(const std::vector<std::string>& lowers, const std::string& worker_dir,
                           OverlayMountApi api = OverlayMountApi::automatic,
                           UpperRetention retention = UpperRetention::remove)
{
    auto rootfs = OverlayRootfs::mount(
        {.lower_dirs = lowers, .worker_dir = worker_dir, .retention = retention, .mount_api = api});
    REQUIRE_MESSAGE(rootfs, rootfs.error().describe());
    return std::move(rootfs).value();
}

}  // namespace

TEST_CASE("whiteouts and opaque directories hide lower entries in the merged view")
{
    TempDir tmp("nps-overlay");
    auto lowers = unpack_chain(tmp, {{.scenario = "lower"}, {.scenario = "upper", .compression = "gzip"}});
    OverlayRootfs rootfs = mount_rootfs(lowers, tmp / "workers/w1");
    const std::string& r = rootfs.path();
    CHECK(r == tmp / "workers/w1/rootfs");
    CHECK(is_mounted(r));

    CHECK(slurp(r + "/a/keep") == "keep\n");
    CHECK_FALSE(exists(r + "/a/gone"));      // file whiteout
    CHECK_FALSE(exists(r + "/a/gonedir"));   // a whited-out directory with contents
    CHECK(slurp(r + "/a/both") == "both\n");
    CHECK_FALSE(exists(r + "/d/old"));       // opaque directory: lower contents hidden
    CHECK_FALSE(exists(r + "/d/olddir"));
    CHECK(slurp(r + "/d/new") == "new\n");
    CHECK_FALSE(exists(r + "/.wh..wh.plnk"));
    // The sandbox's mount points were made in the upper directory.
    for (const char* mp : {"/proc", "/dev", "/tmp"}) {
        CHECK(is_dir(r + mp));
        CHECK(is_dir(rootfs.upper_dir() + mp));
    }
    CHECK((std::filesystem::status(r + "/tmp").permissions() & std::filesystem::perms::sticky_bit) ==
          std::filesystem::perms::sticky_bit);

    // Writes land in the worker's upper, never in a layer.
    nps::test::write_text(r + "/a/keep", "changed\n");
    CHECK(slurp(rootfs.upper_dir() + "/a/keep") == "changed\n");
    CHECK(slurp(lowers.back() + "/a/keep") == "keep\n");

    REQUIRE(rootfs.release());
    CHECK_FALSE(is_mounted(tmp / "workers/w1/rootfs"));
    CHECK_FALSE(exists(tmp / "workers/w1/upper"));
    CHECK_FALSE(exists(tmp / "workers/w1/work"));
    CHECK_FALSE(exists(tmp / "workers/w1/rootfs"));
    CHECK(is_dir(tmp / "workers/w1"));  // the worker's own directory stays
    CHECK(rootfs.release());            // idempotent
}

TEST_CASE("a second worker of the same image shares the layers, not the upper")
{
    TempDir tmp("nps-overlay");
    auto lowers = unpack_chain(tmp, {{.scenario = "lower"}});
    OverlayRootfs one = mount_rootfs(lowers, tmp / "workers/one");
    OverlayRootfs two = mount_rootfs(lowers, tmp / "workers/two");
    nps::test::write_text(one.path() + "/only-in-one", "1");
    CHECK(exists(one.path() + "/only-in-one"));
    CHECK_FALSE(exists(two.path() + "/only-in-one"));
    CHECK(slurp(two.path() + "/a/keep") == "keep\n");
}

TEST_CASE("the destructor unmounts, also when the mount is busy")
{
    TempDir tmp("nps-overlay");
    auto lowers = unpack_chain(tmp, {{.scenario = "lower"}});
    std::string mount_point = tmp / "workers/w/rootfs";
    int busy = -1;
    {
        OverlayRootfs rootfs = mount_rootfs(lowers, tmp / "workers/w");
        busy = ::open((rootfs.path() + "/a").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        REQUIRE(busy >= 0);  // umount2() now fails with EBUSY: MNT_DETACH it is
    }
    CHECK_FALSE(is_mounted(mount_point));
    CHECK_FALSE(exists(tmp / "workers/w/upper"));
    ::close(busy);
}

TEST_CASE("UpperRetention::keep leaves the upper for inspection")
{
    TempDir tmp("nps-overlay");
    auto lowers = unpack_chain(tmp, {{.scenario = "lower"}});
    {
        OverlayRootfs rootfs = mount_rootfs(lowers, tmp / "workers/k", OverlayMountApi::automatic, UpperRetention::keep);
        nps::test::write_text(rootfs.path() + "/log", "kept\n");
    }
    CHECK(slurp(tmp / "workers/k/upper/log") == "kept\n");
    CHECK_FALSE(exists(tmp / "workers/k/work"));
    CHECK_FALSE(exists(tmp / "workers/k/rootfs"));
}

TEST_CASE("an upper left by an earlier worker of the same name is refused, not reused")
{
    TempDir tmp("nps-overlay");
    auto lowers = unpack_chain(tmp, {{.scenario = "lower"}});
    std::filesystem::create_directories(tmp / "workers/w/upper");
    auto rootfs = OverlayRootfs::mount({.lower_dirs = lowers, .worker_dir = tmp / "workers/w"});
    REQUIRE_FALSE(rootfs);
    CHECK(rootfs.error().message.find("it exists (a previous worker of this name was not cleaned up)") !=
          std::string::npos);
    CHECK(is_dir(tmp / "workers/w/upper"));
}

TEST_CASE("mount points the image has as symlinks become directories; the host is untouched")
{
    TempDir tmp("nps-overlay");
    std::string outside = tmp / "outside";
    std::filesystem::create_directory(outside);
    // A layer whose /tmp points out of the rootfs and whose /proc is a file.
    std::filesystem::create_directories(tmp / "src");
    std::filesystem::create_symlink(outside, tmp / "src/tmp");
    nps::test::write_text(tmp / "src/proc", "not a directory");
    REQUIRE(nps::test::run_program({"tar", "-C", tmp / "src", "-cf", tmp / "layer.tar", "tmp", "proc"}) == 0);
    std::string digest;
    REQUIRE(nps::test::run_program({"sha256sum", tmp / "layer.tar"}, &digest) == 0);
    auto cache = LayerCache::open({.layers_dir = tmp / "layers", .durability = Durability::none});
    REQUIRE(cache);
    auto dir = cache->ensure({tmp / "layer.tar", "application/vnd.oci.image.layer.v1.tar", "sha256:" + digest.substr(0, 64)});
    REQUIRE_MESSAGE(dir, dir.error().describe());

    OverlayRootfs rootfs = mount_rootfs({*dir}, tmp / "workers/w");
    CHECK(is_dir(rootfs.path() + "/tmp"));
    CHECK(is_dir(rootfs.path() + "/proc"));
    CHECK(std::filesystem::is_empty(rootfs.path() + "/tmp"));
    CHECK(std::filesystem::is_empty(outside));
    // The layer itself is unchanged.
    CHECK(std::filesystem::is_symlink(*dir + "/tmp"));
}

TEST_CASE("a chain of 100 layers mounts with every mount API: lowerdir+ by fd, by path, legacy option string")
{
    TempDir tmp("nps-overlay");
    std::vector<LayerRecipe> recipes;
    for (int i = 1; i <= 100; ++i)
        recipes.push_back({.scenario = "chain", .compression = i % 2 ? "gzip" : "none", .count = i});
    auto lowers = unpack_chain(tmp, recipes);
    REQUIRE(lowers.size() == 100);

    for (OverlayMountApi api : {OverlayMountApi::automatic, OverlayMountApi::lowerdir_by_fd,
                                OverlayMountApi::lowerdir_by_path, OverlayMountApi::legacy}) {
        CAPTURE(static_cast<int>(api));
        OverlayRootfs rootfs = mount_rootfs(lowers, tmp / ("workers/chain-" + std::to_string(static_cast<int>(api))), api);
        CHECK(slurp(rootfs.path() + "/shared") == "from layer 100\n");  // the top layer wins
        for (int i = 1; i <= 100; ++i) {
            char name[32];
            std::snprintf(name, sizeof name, "/layer-%03d", i);
            CHECK(slurp(rootfs.path() + name) == std::to_string(i) + "\n");
        }
    }
}

TEST_CASE("idmapped layers show the layer's root as the namespace's root with every mount API, and go with the overlay")
{
    TempDir tmp("nps-overlay");
    auto lowers = unpack_chain(tmp, {{.scenario = "lower"}, {.scenario = "upper", .compression = "gzip"}});
    struct stat layer_file {};
    REQUIRE(::stat((lowers.back() + "/a/keep").c_str(), &layer_file) == 0);
    REQUIRE(layer_file.st_uid == 0);
    constexpr uid_t kHostRoot = 1879048192 + 65536 * 11;
    auto ns = nps::sandbox::UserNamespaceFd::create(kHostRoot, kHostRoot, 65536);
    REQUIRE_MESSAGE(ns, ns.error().describe());

    // automatic takes layers by descriptor from 6.13 and attaches them at
    // paths before; by_path and legacy always attach them.
    for (OverlayMountApi api : {OverlayMountApi::automatic, OverlayMountApi::lowerdir_by_path,
                                OverlayMountApi::legacy}) {
        CAPTURE(static_cast<int>(api));
        const std::string worker = tmp / ("workers/idmap-" + std::to_string(static_cast<int>(api)));
        {
            auto rootfs = OverlayRootfs::mount({.lower_dirs = lowers,
                                                .worker_dir = worker,
                                                .mount_api = api,
                                                .disk_bytes = 16 << 20,
                                                .space_owner_uid = kHostRoot,
                                                .space_owner_gid = kHostRoot,
                                                .idmap_userns_fd = ns->fd()});
            REQUIRE_MESSAGE(rootfs, rootfs.error().describe());
            struct stat seen {};
            REQUIRE(::stat((rootfs->path() + "/a/keep").c_str(), &seen) == 0);
            CHECK(seen.st_uid == kHostRoot);
            CHECK(seen.st_gid == kHostRoot);
            CHECK(slurp(rootfs->path() + "/a/keep") == "keep\n");
            CHECK_FALSE(exists(rootfs->path() + "/a/gone"));  // the whiteout still works through the idmap
            // No attached clone is left once the overlay is up (detached
            // ones, by descriptor, are held until release()).
            CHECK_FALSE(exists(worker + "/layers"));
        }
        CHECK_FALSE(is_mounted(worker + "/rootfs"));
        CHECK_FALSE(exists(worker));  // the directory was the space: it went with it
    }
    // The shared layers are unchanged.
    REQUIRE(::stat((lowers.back() + "/a/keep").c_str(), &layer_file) == 0);
    CHECK(layer_file.st_uid == 0);
}

TEST_CASE("chains beyond what a mount can take fail with a clear error")
{
    TempDir tmp("nps-overlay");
    auto lowers = unpack_chain(tmp, {{.scenario = "lower"}});

    // The legacy option string holds about 200 layers.
    std::vector<std::string> long_chain(300, lowers.front());
    auto legacy = OverlayRootfs::mount(
        {.lower_dirs = long_chain, .worker_dir = tmp / "workers/l", .mount_api = OverlayMountApi::legacy});
    REQUIRE_FALSE(legacy);
    CHECK(legacy.error().message.find("300 layers need") != std::string::npos);
    CHECK(legacy.error().message.find("more than the 4095 mount(2) takes") != std::string::npos);
    CHECK_FALSE(exists(tmp / "workers/l/upper"));

    std::vector<std::string> too_deep(501, lowers.front());
    auto deep = OverlayRootfs::mount({.lower_dirs = too_deep, .worker_dir = tmp / "workers/d"});
    REQUIRE_FALSE(deep);
    CHECK(deep.error().message.find("501 layers, more than overlayfs stacks (500)") != std::string::npos);

    auto none = OverlayRootfs::mount({.lower_dirs = {}, .worker_dir = tmp / "workers/n"});
    REQUIRE_FALSE(none);
    CHECK(none.error().message.find("the image has no layers") != std::string::npos);
}

TEST_CASE("a missing layer directory fails the mount and leaves nothing behind")
{
    TempDir tmp("nps-overlay");
    auto rootfs = OverlayRootfs::mount({.lower_dirs = {tmp / "no-such-layer"}, .worker_dir = tmp / "workers/m"});
    REQUIRE_FALSE(rootfs);
    CHECK(rootfs.error().describe() ==
          "Failed to open overlay layer '" + tmp / "no-such-layer" + "': No such file or directory");
    CHECK(std::filesystem::is_empty(tmp / "workers/m"));
}

namespace {

// Two layers: busybox as /bin/sh and two files in /etc (no /proc, /dev or
// /tmp: the rootfs makes them), then a whiteout for /etc/gone. Top first.
std::vector<std::string> busybox_lowers(const TempDir& tmp)
{
    std::string src = tmp / "base";
    std::filesystem::create_directories(src + "/bin");
    std::filesystem::create_directories(src + "/etc");
    std::filesystem::copy_file("/bin/busybox", src + "/bin/busybox");
    std::filesystem::create_symlink("busybox", src + "/bin/sh");
    nps::test::write_text(src + "/etc/kept", "kept\n");
    nps::test::write_text(src + "/etc/gone", "gone\n");
    std::string top = tmp / "top";
    std::filesystem::create_directories(top + "/etc");
    nps::test::write_text(top + "/etc/.wh.gone", "");
    auto cache = LayerCache::open({.layers_dir = tmp / "layers", .durability = Durability::none});
    REQUIRE(cache);
    std::vector<std::string> lowers;
    for (const std::string& dir : {src, top}) {
        std::string blob = dir + ".tar.gz";
        REQUIRE(nps::test::run_program({"sh", "-c", "tar --numeric-owner -C '" + dir + "' -cf '" + dir +
                                                        ".tar' . && gzip -k -n '" + dir + ".tar'"}) == 0);
        std::string digest;
        REQUIRE(nps::test::run_program({"sha256sum", dir + ".tar"}, &digest) == 0);
        auto layer = cache->ensure({blob, "application/vnd.oci.image.layer.v1.tar+gzip", "sha256:" + digest.substr(0, 64)});
        REQUIRE_MESSAGE(layer, layer.error().describe());
        lowers.insert(lowers.begin(), *layer);
    }
    return lowers;
}

}  // namespace

TEST_CASE("a sandbox runs on an overlay rootfs of image layers")
{
    REQUIRE_MESSAGE(::access("/bin/busybox", X_OK) == 0, "needs /bin/busybox (busybox-static, scripts/install-deps)");
    TempDir tmp("nps-overlay");
    std::vector<std::string> lowers = busybox_lowers(tmp);
    OverlayRootfs rootfs = mount_rootfs(lowers, tmp / "workers/w");

    auto child = nps::sandbox::spawn({
        .rootfs = rootfs.path(),
        .argv = {"/bin/sh", "-c", "test -e /etc/kept && ! test -e /etc/gone && test -d /proc/self && echo hi > /tmp/x"},
        .env = {"PATH=/bin"},
    });
    REQUIRE_MESSAGE(child, child.error().describe());
    auto status = child->wait();
    REQUIRE(status);
    CHECK(status->shell_status() == 0);
}

namespace {

// The mountinfo lines whose mount point is `path`.
std::vector<std::string> mounts_at(const std::string& path)
{
    std::vector<std::string> lines;
    std::ifstream in("/proc/self/mountinfo");
    std::string line;
    while (std::getline(in, line))
        if (line.find(" " + path + " ") != std::string::npos)
            lines.push_back(line);
    return lines;
}

}  // namespace

TEST_CASE("a bounded writable space: root, /tmp and /dev/shm together hold at most disk_bytes, off the host's disk")
{
    REQUIRE_MESSAGE(::access("/bin/busybox", X_OK) == 0, "needs /bin/busybox (busybox-static, scripts/install-deps)");
    TempDir tmp("nps-overlay");
    std::vector<std::string> lowers = busybox_lowers(tmp);
    const std::string worker = tmp / "workers/bounded";
    constexpr std::uint64_t kLimit = 16ull << 20;
    auto mounted = OverlayRootfs::mount({.lower_dirs = lowers, .worker_dir = worker, .disk_bytes = kLimit});
    REQUIRE_MESSAGE(mounted, mounted.error().describe());
    OverlayRootfs rootfs = std::move(*mounted);
    CHECK(rootfs.space_dir() == worker);
    CHECK(rootfs.upper_dir() == worker + "/upper");
    CHECK(rootfs.path() == worker + "/rootfs");
    auto space_mounts = mounts_at(worker);
    REQUIRE(space_mounts.size() == 1);
    CHECK(space_mounts[0].find(" - tmpfs nps-worker ") != std::string::npos);
    CHECK(space_mounts[0].find("nosuid") != std::string::npos);
    CHECK(space_mounts[0].find("nodev") != std::string::npos);

    int out[2];
    REQUIRE(::pipe2(out, O_CLOEXEC) == 0);
    nps::sandbox::SandboxSpec spec{
        .rootfs = rootfs.path(),
        .argv = {"/bin/sh", "-c",
                 "for f in /fill /tmp/fill /dev/shm/fill; do dd if=/dev/zero of=$f bs=1M count=8 2>/dev/null; "
                 "echo \"$f=$(wc -c <$f)\"; done"},
        .env = {"PATH=/bin"},
        .root = nps::sandbox::RootAccess::writable,
    };
    spec.writable.host_dir = rootfs.space_dir();
    spec.stdout_fd = out[1];
    auto child = nps::sandbox::spawn(spec);
    ::close(out[1]);
    REQUIRE_MESSAGE(child, child.error().describe());
    std::string text;
    char buffer[512];
    for (ssize_t n; (n = ::read(out[0], buffer, sizeof buffer)) > 0;)
        text.append(buffer, static_cast<std::size_t>(n));
    ::close(out[0]);
    auto status = child->wait();
    REQUIRE(status);
    INFO(text);
    auto size_of = [&](const std::string& name) -> std::uint64_t {
        auto at = text.find(name + "=");
        REQUIRE(at != std::string::npos);
        return std::strtoull(text.c_str() + at + name.size() + 1, nullptr, 10);
    };
    const std::uint64_t root = size_of("/fill"), in_tmp = size_of("/tmp/fill"), in_shm = size_of("/dev/shm/fill");
    CHECK(root == 8ull << 20);                         // the first 8 MiB fit
    CHECK(root + in_tmp + in_shm <= kLimit);            // the sum is bounded
    CHECK(root + in_tmp + in_shm >= kLimit - (1ull << 20));  // ... at about the limit
    CHECK(in_shm < 8ull << 20);                         // so the last write hit ENOSPC
    // The root's file went to the upper, in the space: the host's disk
    // beneath workers/ holds none of it, and the worker's directory is
    // the space's root (0700: only root passes).
    CHECK(std::filesystem::file_size(rootfs.upper_dir() + "/fill") == root);
    CHECK(disk_bytes_beneath(tmp / "workers") < (1u << 20));
    struct stat top {};
    REQUIRE(::stat(worker.c_str(), &top) == 0);
    CHECK((top.st_mode & 07777) == 0700);

    REQUIRE(rootfs.release());
    CHECK(mounts_at(worker + "/rootfs").empty());
    CHECK(mounts_at(worker).empty());
    CHECK_FALSE(exists(worker));
    CHECK(std::filesystem::is_empty(tmp / "workers"));
}

TEST_CASE("a bounded space refuses UpperRetention::keep and sizes out of range, leaving nothing")
{
    TempDir tmp("nps-overlay");
    auto lowers = unpack_chain(tmp, {{.scenario = "lower"}});
    auto kept = OverlayRootfs::mount({.lower_dirs = lowers, .worker_dir = tmp / "workers/k",
                                      .retention = UpperRetention::keep, .disk_bytes = 16ull << 20});
    REQUIRE_FALSE(kept);
    CHECK(kept.error().message.find("cannot be kept") != std::string::npos);
    auto tiny = OverlayRootfs::mount({.lower_dirs = lowers, .worker_dir = tmp / "workers/t", .disk_bytes = 4096});
    REQUIRE_FALSE(tiny);
    CHECK(tiny.error().message.find("lie outside") != std::string::npos);
    CHECK(mounts_at(tmp / "workers/t").empty());
    CHECK_FALSE(exists(tmp / "workers/t"));
    CHECK_FALSE(exists(tmp / "workers/k"));
}
