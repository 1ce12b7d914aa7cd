// SPDX-License-Identifier: Apache-2.0
// The checks that need no filesystem: entry paths, digests, media types.
#include <doctest/doctest.h>

#include <string>

#include "../../../src/image/unpack/diff_id.hpp"
#include "../../../src/image/unpack/entry_path.hpp"
#include "nps/image/layer_unpack.hpp"

using nps::image::Compression;
using nps::image::compression_for_media_type;
using nps::image::detail::parse_entry_path;
using nps::image::detail::sha256_hex_of;

TEST_CASE("entry paths are normalised and split")
{
    struct Case {
        const char* raw;
        const char* parent;
        const char* name;
    };
    for (const Case& c : {Case{"a", "", "a"}, Case{"./a/b/", "a", "b"}, Case{"a//b/./c", "a/b", "c"},
                          Case{".", "", ""}, Case{"./", "", ""}, Case{"", "", ""}, Case{"a.b/..c/...", "a.b/..c", "..."}}) {
        CAPTURE(c.raw);
        auto p = parse_entry_path(c.raw);
        REQUIRE(p);
        CHECK(p->parent == c.parent);
        CHECK(p->name == c.name);
        CHECK_FALSE(p->aufs_meta);
    }
}

TEST_CASE("absolute paths, '..' and over-long paths are refused")
{
    for (const char* raw : {"/etc/passwd", "/", "..", "../x", "a/../b", "a/..", "./a/../../x"}) {
        CAPTURE(raw);
        auto p = parse_entry_path(raw);
        REQUIRE_FALSE(p);
        CHECK(p.error().message.find("Refusing layer entry") == 0);
    }
    CHECK(parse_entry_path(std::string(4096, 'a')));
    auto too_long = parse_entry_path(std::string(4097, 'a'));
    REQUIRE_FALSE(too_long);
    CHECK(too_long.error().message.find("longer than the layer path limit") != std::string::npos);
}

TEST_CASE("whiteout names: markers, AUFS metadata, and never a directory")
{
    auto opq = parse_entry_path("d/.wh..wh..opq");
    REQUIRE(opq);
    CHECK(opq->name == ".wh..wh..opq");
    CHECK_FALSE(opq->aufs_meta);
    CHECK(parse_entry_path(".wh..wh.plnk")->aufs_meta);
    CHECK(parse_entry_path(".wh..wh.plnk/123.456")->aufs_meta);
    CHECK_FALSE(parse_entry_path("a/.wh.x")->aufs_meta);
    auto through = parse_entry_path("a/.wh.x/y");
    REQUIRE_FALSE(through);
    CHECK(through.error().message.find("whiteout name used as a directory") != std::string::npos);
}

TEST_CASE("diff_ids must be sha256 with 64 lowercase hex digits")
{
    std::string hex(64, 'a');
    auto ok = sha256_hex_of("sha256:" + hex);
    REQUIRE(ok);
    CHECK(*ok == hex);
    for (std::string bad : {"sha256:" + std::string(63, 'a'), "sha256:" + std::string(65, 'a'),
                            "sha256:" + std::string(64, 'A'), "sha512:" + hex, hex, "sha256:../" + std::string(61, 'a'),
                            std::string("")}) {
        CAPTURE(bad);
        CHECK_FALSE(sha256_hex_of(bad));
    }
}

TEST_CASE("layer media types map to their compression")
{
    CHECK(*compression_for_media_type("application/vnd.oci.image.layer.v1.tar") == Compression::none);
    CHECK(*compression_for_media_type("application/vnd.oci.image.layer.v1.tar+gzip") == Compression::gzip);
    CHECK(*compression_for_media_type("application/vnd.oci.image.layer.v1.tar+zstd") == Compression::zstd);
    CHECK(*compression_for_media_type("application/vnd.docker.image.rootfs.diff.tar.gzip") == Compression::gzip);
    auto unknown = compression_for_media_type("application/vnd.oci.image.layer.v1.tar+bzip2");
    REQUIRE_FALSE(unknown);
    CHECK(unknown.error().message == "Unsupported layer media type 'application/vnd.oci.image.layer.v1.tar+bzip2'");
}
