// SPDX-License-Identifier: Apache-2.0
// Manifest, index and config parsing: what is read, and what is refused.
#include <doctest/doctest.h>

#include "image_fixture.hpp"
#include "nps/base/limits.hpp"
#include "nps/image/image_config.hpp"
#include "nps/image/manifest.hpp"

using namespace nps::image;
using image_test::Json;
namespace mt = nps::image::media_type;

namespace {

const std::string kHexA(64, 'a');
const std::string kHexB(64, 'b');

Json oci_manifest(Json layers)
{
    return {{"schemaVersion", 2},
            {"mediaType", mt::kOciManifest},
            {"config", {{"mediaType", mt::kOciConfig}, {"digest", "sha256:" + kHexA}, {"size", 10}}},
            {"layers", std::move(layers)}};
}

Json layer(std::string_view type, const std::string& hex = kHexB, Json size = 100)
{
    return {{"mediaType", type}, {"digest", "sha256:" + hex}, {"size", std::move(size)}};
}

std::string refusal(const Json& doc)
{
    auto m = parse_manifest(doc.dump(), "", "manifest M");
    REQUIRE_FALSE(m);
    return m.error().message;
}

}  // namespace

TEST_CASE("an OCI manifest is read with its layers bottom first")
{
    auto m = parse_manifest(oci_manifest({layer(mt::kOciLayerGzip), layer(mt::kOciLayerZstd, kHexA, 7),
                                          layer(mt::kOciLayerTar)})
                                .dump(),
                            "", "manifest M");
    REQUIRE_MESSAGE(m, (m ? "" : m.error().message));
    CHECK(m->media_type == mt::kOciManifest);
    CHECK(m->config.digest == "sha256:" + kHexA);
    REQUIRE(m->layers.size() == 3);
    CHECK(m->layers[1].media_type == mt::kOciLayerZstd);
    CHECK(m->layers[1].size == 7);
}

TEST_CASE("a Docker schema 2 manifest is read")
{
    Json doc = {{"schemaVersion", 2},
                {"mediaType", mt::kDockerManifest},
                {"config", {{"mediaType", mt::kDockerConfig}, {"digest", "sha256:" + kHexA}, {"size", 10}}},
                {"layers", {layer(mt::kDockerLayerGzip)}}};
    auto m = parse_manifest(doc.dump(), mt::kDockerManifest, "manifest M");
    REQUIRE(m);
    CHECK(m->layers[0].media_type == mt::kDockerLayerGzip);
}

TEST_CASE("an OCI manifest without mediaType takes the descriptor's")
{
    Json doc = oci_manifest({layer(mt::kOciLayerTar)});
    doc.erase("mediaType");
    auto m = parse_manifest(doc.dump(), mt::kOciManifest, "manifest M");
    REQUIRE(m);
    CHECK(m->media_type == mt::kOciManifest);
    auto kind = document_kind(doc.dump(), "", "doc");
    REQUIRE(kind);
    CHECK(*kind == DocumentKind::manifest);
}

TEST_CASE("manifests are refused for each broken or unsupported field")
{
    Json v1 = oci_manifest({});
    v1["schemaVersion"] = 1;
    CHECK(refusal(v1).find("Docker schema 1 manifests are not supported") != std::string::npos);

    Json no_layers = oci_manifest({});
    no_layers.erase("layers");
    CHECK(refusal(no_layers).find("layers is missing") != std::string::npos);

    CHECK(refusal(oci_manifest({layer("application/vnd.oci.image.layer.nondistributable.v1.tar+gzip")}))
              .find("layers[0] has media type") != std::string::npos);
    CHECK(refusal(oci_manifest({layer(mt::kOciLayerTar, std::string(64, 'G'))})).find("Invalid digest") !=
          std::string::npos);
    CHECK(refusal(oci_manifest({layer(mt::kOciLayerTar, kHexB, -1)})).find("layers[0].size must not be negative") !=
          std::string::npos);
    CHECK(refusal(oci_manifest({layer(mt::kOciLayerTar, kHexB, 1.5)})).find("size must be a non-negative integer") !=
          std::string::npos);
    CHECK(refusal(oci_manifest({layer(mt::kOciLayerTar, kHexB, "100")})).find("size must be a non-negative integer") !=
          std::string::npos);

    Json sha512 = oci_manifest({});
    sha512["config"]["digest"] = "sha512:" + kHexA + kHexA;
    CHECK(refusal(sha512).find("unsupported digest algorithm 'sha512'") != std::string::npos);

    Json artifact = oci_manifest({});
    artifact["config"]["mediaType"] = "application/vnd.example.thing";
    CHECK(refusal(artifact).find("is not an image config") != std::string::npos);

    Json mismatch = oci_manifest({});
    auto m = parse_manifest(mismatch.dump(), mt::kDockerManifest, "manifest M");
    REQUIRE_FALSE(m);
    CHECK(m.error().message.find("the descriptor pointing at it says") != std::string::npos);

    Json too_many = oci_manifest(Json::array());
    for (std::size_t i = 0; i <= nps::limits::kMaxImageLayers; ++i)
        too_many["layers"].push_back(layer(mt::kOciLayerTar));
    CHECK(refusal(too_many).find("layers has more than") != std::string::npos);

    CHECK(refusal(Json::array()).find("not a JSON object") != std::string::npos);
}

TEST_CASE("documents are bounded in size and depth and must be UTF-8 JSON")
{
    const std::string big(nps::limits::kMaxImageManifestBytes + 1, ' ');
    auto r = parse_manifest(big, "", "manifest M");
    REQUIRE_FALSE(r);
    CHECK(r.error().message.find("more than the limit") != std::string::npos);

    std::string deep;
    for (int i = 0; i < 100; ++i)
        deep += "{\"a\":";
    deep += "1";
    for (int i = 0; i < 100; ++i)
        deep += "}";
    r = parse_manifest(deep, "", "manifest M");
    REQUIRE_FALSE(r);
    CHECK(r.error().message.find("nested deeper") != std::string::npos);

    r = parse_manifest("{\"schemaVersion\": 2, \"x\": \"\xff\"}", "", "manifest M");
    REQUIRE_FALSE(r);
    CHECK(r.error().message.find("Failed to parse manifest M") != std::string::npos);
    CHECK_FALSE(parse_manifest("{", "", "manifest M"));
}

TEST_CASE("an index keeps platforms and annotations")
{
    Json doc = {{"schemaVersion", 2},
                {"mediaType", mt::kOciIndex},
                {"manifests",
                 {{{"mediaType", mt::kOciManifest},
                   {"digest", "sha256:" + kHexA},
                   {"size", 5},
                   {"platform", {{"os", "linux"}, {"architecture", "arm"}, {"variant", "v7"}}},
                   {"annotations", {{"org.opencontainers.image.ref.name", "1.0"}, {"n", 5}}}},
                  {{"mediaType", "application/vnd.in-toto+json"}, {"digest", "sha256:" + kHexB}, {"size", 5}}}}};
    auto index = parse_index(doc.dump(), "", "index I");
    REQUIRE(index);
    REQUIRE(index->manifests.size() == 2);
    REQUIRE(index->manifests[0].platform);
    CHECK(index->manifests[0].platform->to_string() == "linux/arm/v7");
    CHECK(index->manifests[0].annotations.at("org.opencontainers.image.ref.name") == "1.0");
    CHECK(index->manifests[0].annotations.count("n") == 0);  // not a string: ignored
    CHECK(*document_kind(doc.dump(), "", "I") == DocumentKind::index);

    doc["manifests"][0]["platform"].erase("os");
    auto bad = parse_index(doc.dump(), "", "index I");
    REQUIRE_FALSE(bad);
    CHECK(bad.error().message.find("manifests[0].platform.os is missing") != std::string::npos);

    Json list = {{"schemaVersion", 2}, {"mediaType", mt::kDockerManifestList}, {"manifests", Json::array()}};
    CHECK(parse_index(list.dump(), "", "I"));
    CHECK_FALSE(parse_index(list.dump(), mt::kOciIndex, "I"));
}

TEST_CASE("an image config gives the runtime settings, platform and diff_ids")
{
    const std::string text = image_test::config_json("arm", {"sha256:" + kHexA, "sha256:" + kHexB}, "v7");
    auto c = parse_image_config(text, "config C");
    REQUIRE_MESSAGE(c, (c ? "" : c.error().message));
    CHECK(c->platform.to_string() == "linux/arm/v7");
    CHECK(c->config.entrypoint == std::vector<std::string>{"/bin/sh"});
    CHECK(c->config.cmd == std::vector<std::string>{"-c", "echo hi"});
    CHECK(c->config.env == std::vector<std::string>{"PATH=/bin", "FOO=bar"});
    CHECK(c->config.working_dir == "/srv");
    CHECK(c->config.user == "1000:1000");
    CHECK(c->diff_ids.size() == 2);
}

TEST_CASE("null and absent runtime settings mean unset")
{
    Json doc = {{"architecture", "amd64"},
                {"os", "linux"},
                {"config", {{"Entrypoint", nullptr}, {"Cmd", nullptr}, {"Env", nullptr}}},
                {"rootfs", {{"type", "layers"}, {"diff_ids", Json::array()}}}};
    auto c = parse_image_config(doc.dump(), "config C");
    REQUIRE(c);
    CHECK(c->config.entrypoint.empty());
    CHECK(c->config.cmd.empty());
    CHECK(c->config.working_dir.empty());
    doc.erase("config");
    CHECK(parse_image_config(doc.dump(), "config C"));
}

TEST_CASE("image configs are refused for what the sandbox cannot take")
{
    const auto refuse = [](const std::function<void(Json&)>& edit, const char* why) {
        Json doc = Json::parse(image_test::config_json("amd64", {}));
        edit(doc);
        auto c = parse_image_config(doc.dump(), "config C");
        REQUIRE_FALSE_MESSAGE(c, why);
        INFO(c.error().message);
        CHECK(c.error().message.find(why) != std::string::npos);
    };
    refuse([](Json& d) { d["config"]["Env"] = {"NOEQUALS"}; }, "config.Env entry 'NOEQUALS' is not KEY=VALUE");
    refuse([](Json& d) { d["config"]["Env"] = {"=x"}; }, "is not KEY=VALUE");
    refuse([](Json& d) { d["config"]["Cmd"] = {std::string("a\0b", 3)}; }, "config.Cmd has an entry containing a NUL");
    refuse([](Json& d) { d["config"]["User"] = std::string("r\0t", 3); }, "config.User contains a NUL");
    refuse([](Json& d) { d["config"]["WorkingDir"] = "srv"; }, "config.WorkingDir 'srv' is not an absolute path");
    refuse([](Json& d) { d["config"]["Entrypoint"] = "/bin/sh"; }, "config.Entrypoint must be an array of strings");
    refuse([](Json& d) { d["rootfs"]["type"] = "zfs"; }, "rootfs.type is 'zfs'");
    refuse([](Json& d) { d["rootfs"]["diff_ids"] = {"md5:abc"}; }, "unsupported digest algorithm 'md5'");
    refuse([](Json& d) { d.erase("rootfs"); }, "rootfs is missing");
    refuse([](Json& d) { d.erase("architecture"); }, "architecture is missing");
    refuse([](Json& d) { d["config"]["Cmd"] = Json::array({std::string(nps::limits::kMaxImageConfigStringBytes + 1, 'x')}); },
           "longer than");
}

TEST_CASE("a synthesized manifest parses back to itself")
{
    ImageManifest m;
    m.media_type = std::string(mt::kOciManifest);
    m.config = {.media_type = std::string(mt::kOciConfig), .digest = "sha256:" + kHexA, .size = 3};
    m.layers.push_back({.media_type = std::string(mt::kOciLayerTar), .digest = "sha256:" + kHexB, .size = 9});
    const std::string text = serialize_manifest(m);
    auto back = parse_manifest(text, mt::kOciManifest, "M");
    REQUIRE(back);
    CHECK(back->layers[0].digest == "sha256:" + kHexB);
    CHECK(serialize_manifest(*back) == text);
}
