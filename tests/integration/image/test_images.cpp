// SPDX-License-Identifier: Apache-2.0
#include "test_images.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "nps/base/digest.hpp"
#include "temp_dir.hpp"

namespace image_it {

namespace {

using Json = nlohmann::json;

std::string read(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

void write(const std::string& path, const std::string& text)
{
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
}

std::string blob(const std::string& layout, const std::string& digest)
{
    return layout + "/blobs/sha256/" + digest.substr(7);
}

// Adds a blob to a layout; returns its descriptor.
Json add_blob(const std::string& layout, const std::string& media_type, const std::string& data)
{
    const std::string digest = "sha256:" + nps::sha256_hex(data);
    write(blob(layout, digest), data);
    return {{"mediaType", media_type}, {"digest", digest}, {"size", data.size()}};
}

bool have(const char* tool)
{
    const std::string cmd = std::string("command -v ") + tool + " >/dev/null 2>&1";
    return std::system(cmd.c_str()) == 0;
}

TestImages build()
{
    static nps::test::TempDir dir("nps-image-it");
    TestImages t;
    t.root = dir.path();
    const std::string r = t.root;

    // A busybox rootfs in a fresh umoci layout; the config as a worker image would have it.
    shell("umoci init --layout " + r + "/oci");
    shell("umoci new --image " + r + "/oci:latest");
    shell("umoci unpack --image " + r + "/oci:latest " + r + "/bundle");
    shell("mkdir -p " + r + "/bundle/rootfs/bin " + r + "/bundle/rootfs/tmp && cp /bin/busybox " + r +
          "/bundle/rootfs/bin/ && for a in sh true echo cat; do ln -s busybox " + r + "/bundle/rootfs/bin/$a; done");
    shell("umoci repack --image " + r + "/oci:latest " + r + "/bundle");
    shell("umoci config --image " + r + "/oci:latest --config.entrypoint /bin/sh --config.cmd -c "
          "--config.cmd 'echo hello from the image' --config.env GREETING=hello --config.workingdir /tmp "
          "--config.user 1000:1000");
    shell("umoci gc --layout " + r + "/oci");
    t.oci_dir = r + "/oci";

    shell("skopeo copy --quiet oci:" + r + "/oci:latest oci-archive:" + r + "/busybox-oci.tar:busybox:oa");
    t.oci_archive = r + "/busybox-oci.tar";
    shell("skopeo copy --quiet oci:" + r + "/oci:latest docker-archive:" + r +
          "/busybox-docker.tar:docker.io/library/busybox:da");
    t.docker_archive = r + "/busybox-docker.tar";
    shell("skopeo copy --quiet --dest-compress-format zstd oci:" + r + "/oci:latest oci:" + r + "/zstd:latest");
    t.zstd_dir = r + "/zstd";

    // What the umoci image is made of.
    const Json index = Json::parse(read(t.oci_dir + "/index.json"));
    t.manifest_digest = index["manifests"][0]["digest"];
    const Json manifest = Json::parse(read(blob(t.oci_dir, t.manifest_digest)));
    t.layer_digest = manifest["layers"][0]["digest"];
    const Json config = Json::parse(read(blob(t.oci_dir, manifest["config"]["digest"])));
    t.diff_id = config["rootfs"]["diff_ids"][0];

    // A second, arm64 manifest next to the amd64 one (same layer, arm64 config),
    // both listed with their platforms in index.json, as a multi-arch image is.
    shell("cp -a " + t.oci_dir + " " + r + "/multiarch");
    t.multiarch_dir = r + "/multiarch";
    Json arm_config = config;
    arm_config["architecture"] = "arm64";
    arm_config["variant"] = "v8";
    Json arm_manifest = manifest;
    arm_manifest["config"] = add_blob(t.multiarch_dir, manifest["config"]["mediaType"], arm_config.dump());
    Json arm = add_blob(t.multiarch_dir, "application/vnd.oci.image.manifest.v1+json", arm_manifest.dump());
    t.arm64_manifest_digest = arm["digest"];
    arm["platform"] = {{"os", "linux"}, {"architecture", "arm64"}, {"variant", "v8"}};
    arm["annotations"] = {{"org.opencontainers.image.ref.name", "busybox:multi"}};
    Json amd = index["manifests"][0];
    amd["platform"] = {{"os", "linux"}, {"architecture", "amd64"}};
    amd["annotations"] = {{"org.opencontainers.image.ref.name", "busybox:multi"}};
    write(t.multiarch_dir + "/index.json",
          Json{{"schemaVersion", 2}, {"mediaType", "application/vnd.oci.image.index.v1+json"},
               {"manifests", {arm, amd}}}.dump());
    return t;
}

}  // namespace

void shell(const std::string& command)
{
    static nps::test::TempDir logs("nps-image-it-log");
    const std::string log = logs.file("out");
    const std::string full = "(" + command + ") >" + log + " 2>&1";
    if (std::system(full.c_str()) != 0)
        throw std::runtime_error("command failed: " + command + "\n" + read(log));
}

std::string missing_tools()
{
    if (::geteuid() != 0)
        return "not running as root (umoci unpack/repack need it)";
    for (const char* tool : {"umoci", "skopeo", "tar", "script"})
        if (!have(tool))
            return std::string("no '") + tool + "' (install umoci and skopeo: apt-get install umoci skopeo)";
    if (::access("/bin/busybox", X_OK) != 0)
        return "no /bin/busybox (install busybox-static: scripts/install-deps)";
    return "";
}

const TestImages& test_images()
{
    static const TestImages images = build();
    return images;
}

}  // namespace image_it
