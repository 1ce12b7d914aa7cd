// SPDX-License-Identifier: Apache-2.0
// unpack_layer() on real tars crafted by python's tarfile (and GNU tar for
// sparse files), into real directories.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "image/layer_fixture.hpp"
#include "nps/image/layer_unpack.hpp"
#include "temp_dir.hpp"

using namespace nps::image;
using nps::test::CraftedLayer;
using nps::test::LayerRecipe;
using nps::test::make_layer;
using nps::test::slurp;
using nps::test::TempDir;

namespace {

constexpr time_t kMtime = 1'600'000'000;  // make_layer.py's MTIME

nps::Result<UnpackStats> unpack(const CraftedLayer& layer, const std::string& target, UnpackLimits limits = {},
                                DeviceNodes devices = DeviceNodes::skip)
{
    return unpack_layer({
        .blob_path = layer.blob_path,
        .media_type = layer.media_type,
        .diff_id = layer.diff_id,
        .target_dir = target,
        .limits = limits,
        .device_nodes = devices,
        .durability = Durability::none,
    });
}

struct stat lstat_of(const std::string& path)
{
    struct stat st {};
    REQUIRE_MESSAGE(::lstat(path.c_str(), &st) == 0, path << " missing");
    return st;
}

bool exists(const std::string& path)
{
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0;
}

std::string xattr_of(const std::string& path, const char* name)
{
    char buf[256];
    ssize_t n = ::lgetxattr(path.c_str(), name, buf, sizeof buf);
    return n < 0 ? std::string("<none>") : std::string(buf, static_cast<std::size_t>(n));
}

std::size_t count_entries(const std::string& dir)
{
    std::size_t n = 0;
    for (auto it = std::filesystem::directory_iterator(dir); it != std::filesystem::directory_iterator(); ++it)
        ++n;
    return n;
}

// A hostile layer must fail naming why, leave no target directory and not
// touch the directory it aims at.
void check_refused(const LayerRecipe& recipe, const std::string& why, UnpackLimits limits = {})
{
    TempDir tmp("nps-unpack");
    std::string outside = tmp / "outside";
    std::filesystem::create_directory(outside);
    nps::test::write_text(outside + "/target", "precious\n");
    LayerRecipe r = recipe;
    r.outside = outside;
    CraftedLayer layer = make_layer(r, tmp / "layer.tar");
    std::string target = tmp / "layer";
    auto result = unpack(layer, target, limits);
    CAPTURE(recipe.scenario);
    REQUIRE_FALSE(result);
    INFO(result.error().describe());
    CHECK(result.error().describe().find(why) != std::string::npos);
    CHECK_FALSE(exists(target));
    CHECK(count_entries(outside) == 1);
    CHECK(slurp(outside + "/target") == "precious\n");
    CHECK(lstat_of(outside + "/target").st_nlink == 1);
}

}  // namespace

TEST_CASE("a normal layer keeps every entry type and its metadata (plain, gzip, zstd)")
{
    for (const char* compression : {"none", "gzip", "zstd"}) {
        CAPTURE(compression);
        TempDir tmp("nps-unpack");
        CraftedLayer layer = make_layer({.scenario = "normal", .compression = compression}, tmp / "layer");
        std::string root = tmp / "layer-dir";
        auto stats = unpack(layer, root);
        REQUIRE_MESSAGE(stats, stats.error().describe());

        struct stat st = lstat_of(root + "/etc/hello.txt");
        CHECK(S_ISREG(st.st_mode));
        CHECK((st.st_mode & 07777) == 0640);
        CHECK(st.st_uid == 1001);
        CHECK(st.st_gid == 1002);
        CHECK(st.st_mtim.tv_sec == kMtime + 2);
        CHECK(slurp(root + "/etc/hello.txt") == "hello layer\n");
        CHECK(lstat_of(root + "/etc/empty").st_size == 0);

        // Directory times survive the creation of their children.
        CHECK(lstat_of(root + "/etc").st_mtim.tv_sec == kMtime + 1);
        st = lstat_of(root + "/home/user");
        CHECK((st.st_mode & 07777) == 0750);
        CHECK(st.st_uid == 1000);
        CHECK(st.st_mtim.tv_sec == kMtime + 4);
        CHECK((lstat_of(root + "/home").st_mode & 07777) == 0700);
        CHECK((lstat_of(root).st_mode & 07777) == 0755);
        // A directory whose entry follows its contents takes its metadata.
        st = lstat_of(root + "/late");
        CHECK((st.st_mode & 07777) == 0711);
        CHECK(st.st_mtim.tv_sec == kMtime + 5);
        CHECK(slurp(root + "/late/child") == "c");

        // set-uid survives the chown that would clear it.
        CHECK((lstat_of(root + "/bin/su").st_mode & 07777) == 04755);
        struct stat tool = lstat_of(root + "/bin/tool");
        struct stat link = lstat_of(root + "/bin/tool-link");
        CHECK(tool.st_size == 4 + 3 * 1024 * 1024);
        CHECK(tool.st_ino == link.st_ino);
        CHECK(tool.st_nlink == 2);

        CHECK(S_ISLNK(lstat_of(root + "/bin/sh").st_mode));
        CHECK(std::filesystem::read_symlink(root + "/bin/sh") == "busybox");
        CHECK(std::filesystem::read_symlink(root + "/bin/abs") == "/etc/passwd");

        st = lstat_of(root + "/run/fifo");
        CHECK(S_ISFIFO(st.st_mode));
        CHECK((st.st_mode & 07777) == 0620);
        CHECK(st.st_uid == 5);
        CHECK(st.st_gid == 6);

        CHECK_FALSE(exists(root + "/dev/null"));  // device policy: skip
        CHECK(xattr_of(root + "/xattr.txt", "user.test") == "hello");
        CHECK(xattr_of(root + "/xattr.txt", "trusted.nps") == "kept");
        CHECK(xattr_of(root + "/overlayish", "trusted.overlay.redirect") == "<none>");
        CHECK(xattr_of(root + "/overlayish", "trusted.overlay.opaque") == "<none>");
        CHECK(slurp(root + "/caf\u00e9/na\u00efve") == "utf-8 names\n");
        CHECK(slurp(root + "/dup") == "second\n");

        CHECK(stats->devices_skipped == 1);
        CHECK(stats->xattrs_skipped == 2);
        CHECK(stats->hard_links == 1);
        CHECK(stats->symlinks == 2);
        CHECK(stats->fifos == 1);
        CHECK(stats->entries == 24);
        CHECK(stats->tar_bytes > 3 * 1024 * 1024);
    }
}

TEST_CASE("whiteouts become overlay whiteouts; AUFS metadata is skipped")
{
    TempDir tmp("nps-unpack");
    CraftedLayer layer = make_layer({.scenario = "upper"}, tmp / "layer.tar");
    std::string root = tmp / "upper";
    auto stats = unpack(layer, root);
    REQUIRE_MESSAGE(stats, stats.error().describe());
    for (const char* hidden : {"/a/gone", "/a/gonedir"}) {
        struct stat st = lstat_of(root + hidden);
        CHECK(S_ISCHR(st.st_mode));
        CHECK(st.st_rdev == makedev(0, 0));
    }
    CHECK_FALSE(exists(root + "/a/.wh.gone"));
    CHECK(xattr_of(root + "/d", "trusted.overlay.opaque") == "y");
    CHECK(slurp(root + "/d/new") == "new\n");
    // The same layer's entry wins over its whiteout.
    CHECK(slurp(root + "/a/both") == "both\n");
    CHECK_FALSE(exists(root + "/.wh..wh.plnk"));
    CHECK(stats->whiteouts == 3);
    CHECK(stats->opaque_dirs == 1);
}

TEST_CASE("hostile layers are refused and leave the host untouched")
{
    check_refused({.scenario = "absolute"}, "absolute path");
    check_refused({.scenario = "dotdot"}, "'..' in its path");
    check_refused({.scenario = "symlink-parent"}, "'link' is a symbolic link");
    check_refused({.scenario = "symlink-parent-relative"}, "'a/up' is a symbolic link");
    check_refused({.scenario = "symlink-dir-then-mkdir"}, "'link' is a symbolic link");
    check_refused({.scenario = "symlink-replaces-dir"}, "'a/sub' is a symbolic link");
    check_refused({.scenario = "hardlink-absolute"}, "absolute path");
    check_refused({.scenario = "hardlink-dotdot"}, "'..' in its path");
    check_refused({.scenario = "hardlink-via-symlink"}, "hard link target 'l/target' is not in the layer");
    check_refused({.scenario = "hardlink-missing"}, "hard link target 'not-in-this-layer' is not in the layer");
    check_refused({.scenario = "long-path"}, "longer than the layer path limit");
    check_refused({.scenario = "bad-owner"}, "owner 4294967295:0 out of range");
    check_refused({.scenario = "not-a-dir-parent"}, "'file' is not a directory");
    check_refused({.scenario = "root-symlink"}, "the layer root is not a directory");
}

TEST_CASE("entry and byte caps refuse a layer, also a compressed bomb")
{
    check_refused({.scenario = "many-entries", .count = 50}, "more than 20 entries (the layer entry limit)",
                  {.max_bytes = 1 << 30, .max_entries = 20});
    check_refused({.scenario = "big-file", .count = 2 << 20}, "declared size 2097152 exceeds the layer byte limit",
                  {.max_bytes = 1 << 20, .max_entries = 100});
    // A bomb: 64 files of 1 MiB of zeros gzip to ~64 KiB; every file is
    // within the cap, the stream stops after 4 MiB.
    check_refused({.scenario = "zero-files", .compression = "gzip", .count = 64},
                  "its uncompressed tar stream exceeds 4194304 bytes", {.max_bytes = 4 << 20, .max_entries = 100});
}

TEST_CASE("device nodes can be refused by policy")
{
    TempDir tmp("nps-unpack");
    CraftedLayer layer = make_layer({.scenario = "device"}, tmp / "layer.tar");
    auto skipped = unpack(layer, tmp / "skip");
    REQUIRE(skipped);
    CHECK(skipped->devices_skipped == 1);
    CHECK_FALSE(exists(tmp / "skip/dev/sda"));
    auto refused = unpack(layer, tmp / "refuse", {}, DeviceNodes::refuse);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().message == "Refusing layer entry 'dev/sda': device node (the device policy refuses them)");
    CHECK_FALSE(exists(tmp / "refuse"));
}

TEST_CASE("replacing a symlink, or linking to one, never writes through it")
{
    TempDir tmp("nps-unpack");
    std::string outside = tmp / "outside";
    std::filesystem::create_directory(outside);
    nps::test::write_text(outside + "/target", "precious\n");

    CraftedLayer replaced = make_layer({.scenario = "symlink-replaced", .outside = outside}, tmp / "a.tar");
    REQUIRE(unpack(replaced, tmp / "a"));
    CHECK(S_ISREG(lstat_of(tmp / "a/x").st_mode));
    CHECK(slurp(tmp / "a/x") == "replaced\n");

    CraftedLayer linked = make_layer({.scenario = "hardlink-to-symlink", .outside = outside}, tmp / "b.tar");
    REQUIRE(unpack(linked, tmp / "b"));
    CHECK(S_ISLNK(lstat_of(tmp / "b/h").st_mode));
    CHECK(lstat_of(tmp / "b/h").st_ino == lstat_of(tmp / "b/l").st_ino);

    CHECK(slurp(outside + "/target") == "precious\n");
    CHECK(lstat_of(outside + "/target").st_nlink == 1);
}

TEST_CASE("a diff_id mismatch fails and leaves nothing")
{
    TempDir tmp("nps-unpack");
    CraftedLayer layer = make_layer({.scenario = "lower", .compression = "gzip"}, tmp / "layer.tgz");
    std::string real = layer.diff_id;
    layer.diff_id = "sha256:" + std::string(64, '0');
    auto result = unpack(layer, tmp / "layer");
    REQUIRE_FALSE(result);
    CHECK(result.error().message.find("does not match its diff_id: expected sha256:" + std::string(64, '0') +
                                      ", got " + real) != std::string::npos);
    CHECK_FALSE(exists(tmp / "layer"));
}

TEST_CASE("the blob must be what its media type says")
{
    TempDir tmp("nps-unpack");
    CraftedLayer plain = make_layer({.scenario = "lower"}, tmp / "plain.tar");
    CraftedLayer gz = make_layer({.scenario = "lower", .compression = "gzip"}, tmp / "layer.tgz");

    CraftedLayer plain_as_gzip = plain;
    plain_as_gzip.media_type = "application/vnd.oci.image.layer.v1.tar+gzip";
    auto r1 = unpack(plain_as_gzip, tmp / "x1");
    REQUIRE_FALSE(r1);
    CHECK(r1.error().message.find("the blob is not gzip as its media type says") != std::string::npos);

    CraftedLayer gzip_as_zstd = gz;
    gzip_as_zstd.media_type = "application/vnd.oci.image.layer.v1.tar+zstd";
    REQUIRE_FALSE(unpack(gzip_as_zstd, tmp / "x2"));

    CraftedLayer gzip_as_plain = gz;
    gzip_as_plain.media_type = "application/vnd.oci.image.layer.v1.tar";
    auto r3 = unpack(gzip_as_plain, tmp / "x3");
    REQUIRE_FALSE(r3);
    INFO(r3.error().describe());
    for (const char* dir : {"x1", "x2", "x3"})
        CHECK_FALSE(exists(tmp / dir));

    CraftedLayer docker = gz;
    docker.media_type = "application/vnd.docker.image.rootfs.diff.tar.gzip";
    CHECK(unpack(docker, tmp / "docker"));
}

TEST_CASE("an existing target directory is an error and stays as it was")
{
    TempDir tmp("nps-unpack");
    CraftedLayer layer = make_layer({.scenario = "lower"}, tmp / "layer.tar");
    std::filesystem::create_directory(tmp / "there");
    nps::test::write_text(tmp / "there/mine", "mine");
    auto result = unpack(layer, tmp / "there");
    REQUIRE_FALSE(result);
    CHECK(result.error().sys_errno == EEXIST);
    CHECK(slurp(tmp / "there/mine") == "mine");
    CHECK(count_entries(tmp / "there") == 1);
}

TEST_CASE("a missing blob fails before anything is made")
{
    TempDir tmp("nps-unpack");
    CraftedLayer layer{tmp / "nope.tar", "sha256:" + std::string(64, 'a'), "application/vnd.oci.image.layer.v1.tar"};
    auto result = unpack(layer, tmp / "layer");
    REQUIRE_FALSE(result);
    CHECK(result.error().describe() == "Failed to open layer blob '" + tmp / "nope.tar" + "': No such file or directory");
    CHECK_FALSE(exists(tmp / "layer"));
}

TEST_CASE("sparse files stay sparse (GNU tar --sparse)")
{
    TempDir tmp("nps-unpack");
    std::string src = tmp / "src";
    std::filesystem::create_directory(src);
    REQUIRE(nps::test::run_program({"truncate", "-s", "64M", src + "/sparse"}) == 0);
    REQUIRE(nps::test::run_program({"sh", "-c", "printf tail >> '" + src + "/sparse'"}) == 0);
    REQUIRE(nps::test::run_program({"tar", "--sparse", "--format=posix", "-C", src, "-cf", tmp / "sparse.tar",
                                    "sparse"}) == 0);
    std::string digest;
    REQUIRE(nps::test::run_program({"sha256sum", tmp / "sparse.tar"}, &digest) == 0);
    CraftedLayer layer{tmp / "sparse.tar", "sha256:" + digest.substr(0, 64), "application/vnd.oci.image.layer.v1.tar"};
    auto stats = unpack(layer, tmp / "layer");
    REQUIRE_MESSAGE(stats, stats.error().describe());
    struct stat st = lstat_of(tmp / "layer/sparse");
    CHECK(st.st_size == (64 << 20) + 4);
    CHECK(st.st_blocks * 512 < (1 << 20));
    CHECK(stats->tar_bytes < (1 << 20));
    std::string content = slurp(tmp / "layer/sparse");
    CHECK(content.substr(content.size() - 4) == "tail");
}

TEST_CASE("durability sync unpacks the same")
{
    TempDir tmp("nps-unpack");
    CraftedLayer layer = make_layer({.scenario = "lower", .compression = "zstd"}, tmp / "layer.tar.zst");
    auto stats = unpack_layer({.blob_path = layer.blob_path,
                               .media_type = layer.media_type,
                               .diff_id = layer.diff_id,
                               .target_dir = tmp / "layer"});
    REQUIRE_MESSAGE(stats, stats.error().describe());
    CHECK(slurp(tmp / "layer/a/keep") == "keep\n");
}
