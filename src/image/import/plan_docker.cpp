// SPDX-License-Identifier: Apache-2.0
// Planning the import of a docker-archive: manifest.json → config and
// layer.tar members. The archive has no manifest blob; the import builds an
// OCI manifest for each image after copying its layers (import.cpp).
#include "import_plan.hpp"
#include "../format/json_document.hpp"
#include "nps/base/limits.hpp"
#include "nps/image/content_digest.hpp"
#include "nps/image/media_types.hpp"

namespace nps::image::detail {

namespace {

struct DockerEntry {
    std::string config_path;
    std::vector<std::string> repo_tags;
    std::vector<std::string> layer_paths;
};

Result<std::vector<DockerEntry>> read_entries(ImportSource& source)
{
    const std::string what = "manifest.json in " + source.describe();
    const std::string text = NPS_TRY(source.read_small("manifest.json", limits::kMaxDockerManifestBytes));
    const auto doc = NPS_TRY(parse_json_document(text, limits::kMaxDockerManifestBytes, what, TopLevel::object_or_array));
    if (!doc.is_array())
        return internal_error("Invalid " + what + ": not a JSON array");
    if (doc.empty())
        return internal_error(what + " lists no images");
    if (doc.size() > limits::kMaxImageNames)
        return internal_error("Refusing " + what + ": more than " + std::to_string(limits::kMaxImageNames) + " images");
    std::vector<DockerEntry> out;
    for (std::size_t i = 0; i < doc.size(); ++i) {
        if (!doc[i].is_object())
            return internal_error("Invalid " + what + ": entry " + std::to_string(i) + " is not an object");
        Fields f(doc[i], what, "[" + std::to_string(i) + "].");
        DockerEntry e;
        e.config_path = NPS_TRY(f.required_string("Config", 4096));
        e.repo_tags = NPS_TRY(f.strings("RepoTags", limits::kMaxImageNames, limits::kMaxImageRefChars))
                          .value_or(std::vector<std::string>{});
        auto layers = NPS_TRY(f.strings("Layers", limits::kMaxImageLayers, 4096));
        if (!layers)
            return f.fail("Layers", "is missing");
        e.layer_paths = std::move(*layers);
        out.push_back(std::move(e));
    }
    return out;
}

// The digest a member's name promises, if it is content-addressed:
// "<hex>.json" (classic docker save configs) or "blobs/sha256/<hex>" (Docker 25+).
std::optional<std::string> digest_from_name(const std::string& path)
{
    const auto slash = path.rfind('/');
    const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
    if (path.rfind("blobs/sha256/", 0) == 0 && is_sha256_hex(base))
        return sha256_digest_of_hex(base);
    if (base.size() == 64 + 5 && base.substr(64) == ".json" && is_sha256_hex(base.substr(0, 64)))
        return sha256_digest_of_hex(base.substr(0, 64));
    return std::nullopt;
}

Result<std::string> member(ImportSource& source, const std::string& path, const std::string& role)
{
    const auto normal = normalize_member_path(path);
    auto real = normal ? NPS_TRY(source.canonical(*normal)) : std::nullopt;
    if (!real)
        return internal_error(source.describe() + " has no " + role + " '" + path + "' (named in manifest.json)");
    return *real;
}

Result<PlannedImage> plan_entry(ImportSource& source, const DockerEntry& entry, std::vector<std::string> names,
                                const Platform& wanted)
{
    PlannedImage image;
    image.names = std::move(names);
    image.synthesize_manifest = true;
    image.manifest_media_type = media_type::kOciManifest;

    const std::string config_path = NPS_TRY(member(source, entry.config_path, "config"));
    std::string config = NPS_TRY(source.read_small(config_path, limits::kMaxImageConfigBytes));
    const std::string digest = digest_of(config);
    if (auto promised = digest_from_name(config_path); promised && *promised != digest)
        return internal_error("Blob " + *promised + " in " + source.describe() + " is corrupt: its content hashes to " +
                              digest);
    NPS_TRY_VOID(attach_config(image, std::move(config), digest, std::string(media_type::kOciConfig),
                               entry.layer_paths.size(), wanted, "image config " + digest + " in " + source.describe()));
    for (std::size_t i = 0; i < entry.layer_paths.size(); ++i) {
        PlannedLayer layer;
        layer.source_path = NPS_TRY(member(source, entry.layer_paths[i], "layer"));
        layer.expected_digest = digest_from_name(layer.source_path);
        layer.expected_size = NPS_TRY(source.file_size(layer.source_path));
        layer.diff_id = image.config.diff_ids[i];
        layer.sniff = true;
        image.layers.push_back(std::move(layer));
    }
    return image;
}

}  // namespace

Result<std::vector<PlannedImage>> plan_docker(ImportSource& source, const ImportRequest& request,
                                              const Platform& wanted)
{
    const std::vector<DockerEntry> entries = NPS_TRY(read_entries(source));
    std::vector<PlannedImage> planned;
    if (request.name) {
        const std::string name = NPS_TRY(checked_name(*request.name, "--name"));
        const DockerEntry* chosen = entries.size() == 1 ? &entries[0] : nullptr;
        if (!chosen) {
            std::size_t matches = 0;
            for (const auto& e : entries)
                for (const auto& tag : e.repo_tags)
                    if (tag == *request.name || tag == name) {
                        chosen = &e;
                        ++matches;
                        break;
                    }
            if (matches != 1)
                return internal_error(source.describe() + " holds " + std::to_string(entries.size()) +
                                      " images; --name must match exactly one of their RepoTags");
        }
        planned.push_back(NPS_TRY(plan_entry(source, *chosen, {name}, wanted)));
        return planned;
    }
    for (const auto& e : entries) {
        if (e.repo_tags.empty())
            return internal_error(source.describe() + " does not name its image (no RepoTags); give it a name with "
                                                      "--name REPOSITORY[:TAG]");
        std::vector<std::string> names;
        for (const auto& tag : e.repo_tags)
            names.push_back(NPS_TRY(checked_name(tag, "RepoTags in " + source.describe())));
        planned.push_back(NPS_TRY(plan_entry(source, e, std::move(names), wanted)));
    }
    return planned;
}

}  // namespace nps::image::detail
