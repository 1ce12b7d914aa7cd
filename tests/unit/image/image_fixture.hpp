// SPDX-License-Identifier: Apache-2.0
// Test support for the image tests: OCI layouts and docker-archives written
// by hand (JSON and blob files), so each test controls every byte.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nps/image/content_digest.hpp"
#include "nps/image/media_types.hpp"
#include "temp_dir.hpp"

namespace image_test {

using Json = nlohmann::json;
namespace mt = nps::image::media_type;

inline void write_text(const std::string& path, const std::string& text)
{
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
}

inline std::string read_text(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

inline Json descriptor(std::string_view media_type, const std::string& data)
{
    return {{"mediaType", media_type}, {"digest", nps::image::digest_of(data)}, {"size", data.size()}};
}

inline std::string config_json(const std::string& arch, const std::vector<std::string>& diff_ids,
                               const std::string& variant = "")
{
    Json c = {{"architecture", arch},
              {"os", "linux"},
              {"config",
               {{"Entrypoint", {"/bin/sh"}},
                {"Cmd", {"-c", "echo hi"}},
                {"Env", {"PATH=/bin", "FOO=bar"}},
                {"WorkingDir", "/srv"},
                {"User", "1000:1000"}}},
              {"rootfs", {{"type", "layers"}, {"diff_ids", diff_ids}}}};
    if (!variant.empty())
        c["variant"] = variant;
    return c.dump();
}

// An OCI image layout under construction.
class Layout {
public:
    explicit Layout(std::string dir) : dir_(std::move(dir))
    {
        write_text(dir_ + "/oci-layout", R"({"imageLayoutVersion":"1.0.0"})");
    }

    const std::string& dir() const { return dir_; }

    std::string add_blob(const std::string& data)
    {
        const std::string digest = nps::image::digest_of(data);
        write_text(blob_path(digest), data);
        return digest;
    }
    std::string blob_path(const std::string& digest) const
    {
        return dir_ + "/blobs/sha256/" + std::string(nps::image::digest_hex(digest));
    }

    // An image of uncompressed layers with these contents; returns the
    // manifest (its descriptor in `manifest_descriptor`).
    Json add_image(const std::string& arch, const std::vector<std::string>& layers, const std::string& variant = "")
    {
        std::vector<std::string> diff_ids;
        Json layer_descriptors = Json::array();
        for (const auto& layer : layers) {
            add_blob(layer);
            diff_ids.push_back(nps::image::digest_of(layer));
            layer_descriptors.push_back(descriptor(mt::kOciLayerTar, layer));
        }
        const std::string config = config_json(arch, diff_ids, variant);
        add_blob(config);
        const Json manifest = {{"schemaVersion", 2},
                               {"mediaType", mt::kOciManifest},
                               {"config", descriptor(mt::kOciConfig, config)},
                               {"layers", layer_descriptors}};
        const std::string text = manifest.dump();
        add_blob(text);
        last_manifest_ = descriptor(mt::kOciManifest, text);
        return last_manifest_;
    }

    void write_index(const Json& manifests)
    {
        write_text(dir_ + "/index.json", Json{{"schemaVersion", 2}, {"manifests", manifests}}.dump());
    }

    // One image, named by a ref.name annotation.
    void single(const std::string& ref_name, const std::vector<std::string>& layers = {"layer one", "layer two"})
    {
        Json d = add_image("amd64", layers);
        if (!ref_name.empty())
            d["annotations"] = {{"org.opencontainers.image.ref.name", ref_name}};
        write_index(Json::array({d}));
    }

private:
    std::string dir_;
    Json last_manifest_;
};

// tar -cf of a directory's contents.
inline void make_tar(const std::string& dir, const std::string& tar)
{
    const std::string cmd = "tar -C '" + dir + "' -cf '" + tar + "' .";
    if (std::system(cmd.c_str()) != 0)
        throw std::runtime_error("tar failed: " + cmd);
}

}  // namespace image_test
