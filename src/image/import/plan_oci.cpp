// SPDX-License-Identifier: Apache-2.0
// Planning the import of an OCI image layout: index.json → (nested
// indexes →) one manifest per selected name for the wanted platform → its
// config and layers.
#include <algorithm>
#include <map>

#include "import_plan.hpp"
#include "../format/json_document.hpp"
#include "nps/base/limits.hpp"
#include "nps/image/content_digest.hpp"
#include "nps/image/media_types.hpp"
#include "nps/image/reference.hpp"

namespace nps::image::detail {

namespace {

std::string blob_path(const std::string& digest)
{
    return "blobs/sha256/" + std::string(digest_hex(digest));
}

// The entries of index.json that share a name annotation.
struct Group {
    std::string label;       // annotation value; empty when none
    bool full_name = false;  // the label is a whole name, not just a tag
    std::vector<Descriptor> entries;
};

// io.containerd.image.name is always a whole name; ref.name often is only a
// tag ("latest" from umoci or skopeo's oci:DIR:TAG), and counts as a whole
// name only when it has a '/' or ':'.
Group label_of(const Descriptor& d)
{
    Group g;
    if (auto it = d.annotations.find(std::string(kAnnotationContainerdName)); it != d.annotations.end()) {
        g.label = it->second;
        g.full_name = true;
    } else if (auto ref = d.annotations.find(std::string(kAnnotationRefName)); ref != d.annotations.end()) {
        g.label = ref->second;
        g.full_name = g.label.find_first_of("/:") != std::string::npos;
    }
    return g;
}

struct Candidate {
    Descriptor descriptor;
    std::optional<Platform> platform;
};

Result<void> collect_candidates(ImportSource& source, const std::vector<Descriptor>& entries, std::size_t depth,
                                std::vector<Candidate>& out)
{
    for (const auto& entry : entries) {
        if (media_type::is_index(entry.media_type)) {
            if (depth >= limits::kMaxIndexNesting)
                return internal_error("Refusing " + source.describe() + ": image indexes nested more than " +
                                      std::to_string(limits::kMaxIndexNesting) + " deep");
            const std::string text = NPS_TRY(read_described_blob(source, blob_path(entry.digest), entry.digest,
                                                                 entry.size, limits::kMaxImageIndexBytes));
            const ImageIndex nested =
                NPS_TRY(parse_index(text, entry.media_type, "image index " + entry.digest + " in " + source.describe()));
            NPS_TRY_VOID(collect_candidates(source, nested.manifests, depth + 1, out));
        } else if (media_type::is_manifest(entry.media_type)) {
            if (out.size() >= limits::kMaxIndexManifests)
                return internal_error("Refusing " + source.describe() + ": more than " +
                                      std::to_string(limits::kMaxIndexManifests) + " manifests");
            out.push_back({entry, entry.platform});
        }
        // Other media types (signatures, attestations, artifacts) are not images to run.
    }
    return {};
}

struct ReadManifest {
    std::string bytes;
    ImageManifest manifest;
};

Result<ReadManifest> read_manifest(ImportSource& source, const Descriptor& d)
{
    ReadManifest out;
    out.bytes = NPS_TRY(read_described_blob(source, blob_path(d.digest), d.digest, d.size,
                                            limits::kMaxImageManifestBytes));
    out.manifest = NPS_TRY(parse_manifest(out.bytes, d.media_type, "manifest " + d.digest + " in " + source.describe()));
    return out;
}

// The platform of a manifest whose descriptor does not say: its config's.
Result<Platform> learn_platform(ImportSource& source, const Descriptor& d)
{
    const ReadManifest m = NPS_TRY(read_manifest(source, d));
    const std::string text = NPS_TRY(read_described_blob(source, blob_path(m.manifest.config.digest),
                                                         m.manifest.config.digest, m.manifest.config.size,
                                                         limits::kMaxImageConfigBytes));
    auto config = NPS_TRY(parse_image_config(text, "image config " + m.manifest.config.digest + " in " +
                                                       source.describe()));
    return config.platform;
}

// The one manifest of a group that runs on `wanted`.
Result<Descriptor> choose_manifest(ImportSource& source, const Group& group, const Platform& wanted)
{
    std::vector<Candidate> candidates;
    NPS_TRY_VOID(collect_candidates(source, group.entries, 0, candidates));
    if (candidates.empty())
        return internal_error(source.describe() + " holds no image manifest" +
                              (group.label.empty() ? std::string() : " for '" + group.label + "'"));
    std::vector<std::optional<Platform>> known;
    for (const auto& c : candidates)
        known.push_back(c.platform);
    const auto choice = NPS_TRY(choose_platform(
        known, wanted, [&](std::size_t i) { return learn_platform(source, candidates[i].descriptor); }));
    if (choice.chosen)
        return candidates[*choice.chosen].descriptor;
    std::string message = source.describe() + " has no image for " + wanted.to_string();
    if (!group.label.empty())
        message += " under '" + group.label + "'";
    if (!choice.available.empty())
        message += " (it has: " + choice.available + ")";
    if (choice.learn_error)
        message += "; " + choice.learn_error->message;
    return internal_error(message);
}

Result<PlannedImage> plan_group(ImportSource& source, const Group& group, std::vector<std::string> names,
                                const Platform& wanted)
{
    const Descriptor chosen = NPS_TRY(choose_manifest(source, group, wanted));
    ReadManifest m = NPS_TRY(read_manifest(source, chosen));
    PlannedImage image;
    image.names = std::move(names);
    image.manifest_bytes = std::move(m.bytes);
    image.manifest_media_type = m.manifest.media_type;
    const Descriptor& cd = m.manifest.config;
    std::string config = NPS_TRY(read_described_blob(source, blob_path(cd.digest), cd.digest, cd.size,
                                                     limits::kMaxImageConfigBytes));
    NPS_TRY_VOID(attach_config(image, std::move(config), cd.digest, cd.media_type, m.manifest.layers.size(), wanted,
                               "image config " + cd.digest + " in " + source.describe()));
    for (std::size_t i = 0; i < m.manifest.layers.size(); ++i) {
        const Descriptor& d = m.manifest.layers[i];
        PlannedLayer layer;
        // A blob missing from the source is fine when the store has it already.
        layer.source_path = NPS_TRY(source.canonical(blob_path(d.digest))).value_or("");
        layer.expected_digest = d.digest;
        layer.expected_size = static_cast<std::uint64_t>(d.size);
        layer.diff_id = image.config.diff_ids[i];
        layer.digest = d.digest;
        layer.media_type = d.media_type;
        layer.size = d.size;
        image.layers.push_back(std::move(layer));
    }
    return image;
}

Result<void> check_layout_version(ImportSource& source)
{
    const std::string text = NPS_TRY(source.read_small("oci-layout", 4096));
    const auto doc = NPS_TRY(parse_json_document(text, 4096, "oci-layout in " + source.describe()));
    Fields f(doc, "oci-layout in " + source.describe());
    const std::string version = NPS_TRY(f.required_string("imageLayoutVersion", 32));
    if (version.rfind("1.", 0) != 0)
        return f.fail("imageLayoutVersion", "is '" + version + "'; only 1.x layouts are supported");
    return {};
}

std::string list_labels(const std::vector<Group>& groups)
{
    std::string out;
    for (const auto& g : groups)
        out += (out.empty() ? "" : ", ") + (g.label.empty() ? std::string("(unnamed)") : g.label);
    return out;
}

}  // namespace

Result<std::vector<PlannedImage>> plan_oci(ImportSource& source, const ImportRequest& request, const Platform& wanted)
{
    NPS_TRY_VOID(check_layout_version(source));
    const std::string text = NPS_TRY(source.read_small("index.json", limits::kMaxImageIndexBytes));
    const ImageIndex index = NPS_TRY(parse_index(text, "", "index.json in " + source.describe()));

    std::vector<Group> groups;
    for (const auto& entry : index.manifests) {
        Group g = label_of(entry);
        auto it = std::find_if(groups.begin(), groups.end(), [&](const Group& x) { return x.label == g.label; });
        if (it == groups.end()) {
            if (groups.size() >= limits::kMaxImageNames)
                return internal_error("Refusing " + source.describe() + ": more than " +
                                      std::to_string(limits::kMaxImageNames) + " image names");
            groups.push_back(std::move(g));
            it = groups.end() - 1;
        }
        it->entries.push_back(entry);
    }
    if (groups.empty())
        return internal_error("index.json in " + source.describe() + " lists no images");

    std::vector<PlannedImage> planned;
    if (request.name) {
        const std::string name = NPS_TRY(checked_name(*request.name, "--name"));
        const Group* chosen = groups.size() == 1 ? &groups[0] : nullptr;
        if (!chosen) {
            const ImageName parsed = NPS_TRY(parse_image_name(*request.name));
            std::size_t matches = 0;
            for (const auto& g : groups) {
                const bool match = g.label == *request.name || g.label == name ||
                                   (!g.full_name && !g.label.empty() && g.label == parsed.tag);
                if (match) {
                    chosen = &g;
                    ++matches;
                }
            }
            if (matches != 1)
                return internal_error(source.describe() + " holds several images (" + list_labels(groups) +
                                      "); --name must match exactly one of their names or tags");
        }
        planned.push_back(NPS_TRY(plan_group(source, *chosen, {name}, wanted)));
        return planned;
    }
    for (const auto& g : groups) {
        if (g.label.empty())
            return internal_error(source.describe() + " does not name its image; give it a name with --name "
                                                      "REPOSITORY[:TAG]");
        if (!g.full_name)
            return internal_error(source.describe() + " names its image only with the tag '" + g.label +
                                  "' (org.opencontainers.image.ref.name); give it a name with --name "
                                  "REPOSITORY[:TAG]");
        const std::string name = NPS_TRY(checked_name(g.label, "annotation in " + source.describe()));
        planned.push_back(NPS_TRY(plan_group(source, g, {name}, wanted)));
    }
    return planned;
}

}  // namespace nps::image::detail
