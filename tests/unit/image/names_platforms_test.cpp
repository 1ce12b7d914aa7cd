// SPDX-License-Identifier: Apache-2.0
// Image names, digests, platforms and the choice of a platform.
#include <doctest/doctest.h>

#include "../../../src/image/import/import_source.hpp"
#include "nps/image/content_digest.hpp"
#include "nps/image/media_types.hpp"
#include "nps/image/platform.hpp"
#include "nps/image/reference.hpp"

using namespace nps::image;

TEST_CASE("image names get the default tag and keep their spelling")
{
    const std::pair<const char*, const char*> good[] = {
        {"busybox", "busybox:latest"},
        {"busybox:1.36", "busybox:1.36"},
        // Docker Hub's spellings are one name, in Docker's short form.
        {"library/busybox:1.36-musl", "busybox:1.36-musl"},
        {"docker.io/library/busybox:da", "busybox:da"},
        {"index.docker.io/library/alpine", "alpine:latest"},
        {"Docker.IO/ux/wc:3", "ux/wc:3"},
        {"docker.io/ux/wc:3", "ux/wc:3"},
        {"ux/wc:3", "ux/wc:3"},
        {"docker.io/library/team/app", "library/team/app:latest"},
        {"reg.example/library/alpine", "reg.example/library/alpine:latest"},
        {"localhost:5000/team/app", "localhost:5000/team/app:latest"},
        {"Registry.Example.com/a__b/c-d.e:V_1", "Registry.Example.com/a__b/c-d.e:V_1"},
    };
    for (const auto& [text, expect] : good) {
        auto name = parse_image_name(text);
        REQUIRE_MESSAGE(name, text);
        CHECK(name->to_string() == expect);
    }
}

TEST_CASE("bad image names are refused with the reason")
{
    const std::pair<const char*, const char*> bad[] = {
        {"", "empty"},
        {"Busybox", "must be lowercase"},
        {"busybox:", "tag ''"},
        {"busybox:-x", "tag '-x'"},
        {"a//b", "component ''"},
        {"a/b_", "component 'b_'"},
        {"a..b", "component 'a..b'"},
        {"host:port/x", "not a registry host"},
        {"busybox@sha256:abc", "cannot carry a digest"},
    };
    for (const auto& [text, why] : bad) {
        auto name = parse_image_name(text);
        REQUIRE_FALSE_MESSAGE(name, text);
        INFO(name.error().message);
        CHECK(name.error().message.find(why) != std::string::npos);
    }
    CHECK_FALSE(parse_image_name(std::string(400, 'a')));
    CHECK(is_valid_tag(std::string(128, 'a')));
    CHECK_FALSE(is_valid_tag(std::string(129, 'a')));
}

TEST_CASE("digests are sha256 and lowercase")
{
    const std::string hex(64, 'a');
    CHECK(is_sha256_digest("sha256:" + hex));
    CHECK_FALSE(is_sha256_digest("sha256:" + std::string(64, 'A')));
    CHECK_FALSE(is_sha256_digest("sha256:" + hex.substr(1)));
    CHECK_FALSE(is_sha256_digest(hex));
    auto r = check_digest("sha512:" + hex, "manifest x");
    REQUIRE_FALSE(r);
    CHECK(r.error().message.find("unsupported digest algorithm 'sha512'") != std::string::npos);
    CHECK(r.error().message.find("manifest x") != std::string::npos);
    CHECK(digest_of("") == "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    CHECK(short_digest("sha256:" + hex) == std::string(12, 'a'));
}

TEST_CASE("media types and compression magic")
{
    using namespace media_type;
    CHECK(layer_compression(kOciLayerTar) == Compression::none);
    CHECK(layer_compression(kOciLayerGzip) == Compression::gzip);
    CHECK(layer_compression(kDockerLayerGzip) == Compression::gzip);
    CHECK(layer_compression(kOciLayerZstd) == Compression::zstd);
    CHECK_FALSE(layer_compression("application/vnd.oci.image.layer.nondistributable.v1.tar+gzip"));
    CHECK(sniff_compression("\x1f\x8b\x08") == Compression::gzip);
    CHECK(sniff_compression("\x28\xb5\x2f\xfd") == Compression::zstd);
    CHECK(sniff_compression("usr/") == Compression::none);
    CHECK(sniff_compression("") == Compression::none);
    CHECK(is_manifest(kDockerManifest));
    CHECK(is_index(kDockerManifestList));
    CHECK(is_config(kDockerConfig));
}

TEST_CASE("the host platform is this binary's")
{
    const Platform host = host_platform();
    CHECK(host.os == "linux");
#if defined(__x86_64__)
    CHECK(host.to_string() == "linux/amd64");
#elif defined(__aarch64__)
    CHECK(host.to_string() == "linux/arm64/v8");
#endif
}

TEST_CASE("platform text")
{
    auto p = parse_platform("linux/arm/v7");
    REQUIRE(p);
    CHECK(p->architecture == "arm");
    CHECK(p->variant == "v7");
    CHECK(parse_platform("linux/amd64")->to_string() == "linux/amd64");
    CHECK_FALSE(parse_platform("linux"));
    CHECK_FALSE(parse_platform("linux/arm/v7/x"));
    CHECK_FALSE(parse_platform("Linux/AMD64"));
    CHECK_FALSE(parse_platform("linux//v7"));
}

TEST_CASE("platform selection prefers exact matches and runs nothing foreign")
{
    const Platform amd64{"linux", "amd64", ""};
    const Platform arm64{"linux", "arm64", "v8"};
    const Platform armv7{"linux", "arm", "v7"};
    const std::vector<Platform> index = {{"linux", "arm64", ""}, {"linux", "amd64", ""}, {"linux", "arm", "v6"},
                                         {"linux", "arm", "v7"}, {"windows", "amd64", ""}, {"linux", "arm", "v5"}};
    CHECK(select_platform(amd64, index) == 1u);
    CHECK(select_platform(arm64, index) == 0u);  // "" and v8 are the same arm64
    CHECK(select_platform(armv7, index) == 3u);  // exact beats older variants
    CHECK(select_platform({"linux", "arm", "v6"}, index) == 2u);
    CHECK(select_platform({"linux", "arm", "v8"}, {{"linux", "arm", "v5"}, {"linux", "arm", "v7"}}) == 1u);
    CHECK_FALSE(select_platform({"linux", "s390x", ""}, index));
    CHECK_FALSE(select_platform(armv7, {{"linux", "arm", "v8"}}));  // newer than the host
    CHECK(select_platform(armv7, {{"linux", "arm", ""}}) == 0u);    // unspecified variant
    CHECK(platform_match(amd64, {"linux", "amd64", "v3"}) == 0);
}

TEST_CASE("archive member names are normalized and confined")
{
    using nps::image::detail::normalize_member_path;
    CHECK(normalize_member_path("./blobs//sha256/x") == "blobs/sha256/x");
    CHECK(normalize_member_path("/index.json") == "index.json");
    CHECK(normalize_member_path("a/../b") == "b");
    CHECK(normalize_member_path("abc/../../x") == std::nullopt);
    CHECK(normalize_member_path("../x") == std::nullopt);
    CHECK(normalize_member_path("./") == std::nullopt);
    CHECK(normalize_member_path("") == std::nullopt);
}
