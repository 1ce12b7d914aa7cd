// SPDX-License-Identifier: Apache-2.0
// Manifests and indexes: the fields the runner uses, checked; the rest ignored.
#include "nps/image/manifest.hpp"

#include <algorithm>

#include "json_document.hpp"
#include "nps/base/limits.hpp"
#include "nps/image/content_digest.hpp"
#include "nps/image/media_types.hpp"

namespace nps::image {

namespace {

using detail::Fields;

constexpr std::size_t kMaxMediaTypeBytes = 255;    // RFC 6838 caps type/subtype at 127 each
constexpr std::size_t kMaxAnnotationBytes = 4096;  // longer annotations are dropped, not refused

Result<Platform> read_platform(const nlohmann::json& object, const std::string& what, const std::string& path)
{
    Fields f(object, what, path);
    Platform p;
    p.os = NPS_TRY(f.required_string("os", 64));
    p.architecture = NPS_TRY(f.required_string("architecture", 64));
    p.variant = NPS_TRY(f.string("variant", 64)).value_or("");
    return p;
}

Result<Descriptor> read_descriptor(const nlohmann::json& value, const std::string& what, const std::string& path)
{
    if (!value.is_object())
        return internal_error("Invalid " + what + ": " + path + " must be an object");
    Fields f(value, what, path + ".");
    Descriptor d;
    d.media_type = NPS_TRY(f.required_string("mediaType", kMaxMediaTypeBytes));
    d.digest = NPS_TRY(f.required_string("digest", 256));
    NPS_TRY_VOID(check_digest(d.digest, what + " " + path + ".digest"));
    auto size = NPS_TRY(f.integer("size"));
    if (!size)
        return f.fail("size", "is missing");
    d.size = *size;
    if (auto platform = NPS_TRY(f.object("platform")))
        d.platform = NPS_TRY(read_platform(*platform, what, path + ".platform."));
    if (auto annotations = NPS_TRY(f.object("annotations"))) {
        for (const auto& [key, v] : annotations->items())
            if (v.is_string() && key.size() <= kMaxAnnotationBytes &&
                v.get_ref<const std::string&>().size() <= kMaxAnnotationBytes)
                d.annotations.emplace(key, v.get<std::string>());
    }
    return d;
}

// schemaVersion must be 2 (schema 1 Docker manifests are refused by name).
Result<void> check_schema_version(const Fields& f)
{
    auto version = NPS_TRY(f.integer("schemaVersion"));
    if (!version)
        return f.fail("schemaVersion", "is missing");
    if (*version == 1)
        return f.fail("schemaVersion", "is 1: Docker schema 1 manifests are not supported (convert the image with "
                                       "'skopeo copy --format v2s2' or to OCI)");
    if (*version != 2)
        return f.fail("schemaVersion", "is " + std::to_string(*version) + ", not 2");
    return {};
}

// The document's media type, checked against the pointing descriptor's.
Result<std::string> own_media_type(const Fields& f, std::string_view hint)
{
    auto type = NPS_TRY(f.string("mediaType", kMaxMediaTypeBytes));
    if (type && !hint.empty() && *type != hint)
        return f.fail("mediaType", "is '" + *type + "' but the descriptor pointing at it says '" + std::string(hint) + "'");
    if (type)
        return *type;
    return std::string(hint);
}

}  // namespace

Result<DocumentKind> document_kind(std::string_view text, std::string_view hint, std::string_view what)
{
    const std::string name(what);
    const auto doc = NPS_TRY(detail::parse_json_document(
        text, std::max(limits::kMaxImageManifestBytes, limits::kMaxImageIndexBytes), name));
    Fields f(doc, name);
    const std::string type = NPS_TRY(own_media_type(f, hint));
    if (media_type::is_manifest(type))
        return DocumentKind::manifest;
    if (media_type::is_index(type))
        return DocumentKind::index;
    if (!type.empty())
        return internal_error("Unsupported " + name + ": media type '" + type +
                              "' is neither an image manifest nor an image index");
    if (doc.contains("manifests"))
        return DocumentKind::index;
    if (doc.contains("layers") || doc.contains("config"))
        return DocumentKind::manifest;
    return internal_error("Invalid " + name + ": neither an image manifest nor an image index (no mediaType, "
                          "no layers, no manifests)");
}

Result<ImageManifest> parse_manifest(std::string_view text, std::string_view hint, std::string_view what)
{
    const std::string name(what);
    const auto doc = NPS_TRY(detail::parse_json_document(text, limits::kMaxImageManifestBytes, name));
    Fields f(doc, name);
    NPS_TRY_VOID(check_schema_version(f));
    ImageManifest m;
    m.media_type = NPS_TRY(own_media_type(f, hint));
    if (m.media_type.empty())
        m.media_type = media_type::kOciManifest;  // OCI made the field optional; the content decides
    if (!media_type::is_manifest(m.media_type))
        return f.fail("mediaType", "'" + m.media_type + "' is not an image manifest type");

    const nlohmann::json* config = NPS_TRY(f.object("config"));
    if (!config)
        return f.fail("config", "is missing");
    m.config = NPS_TRY(read_descriptor(*config, name, "config"));
    if (!media_type::is_config(m.config.media_type))
        return internal_error("Unsupported " + name + ": config media type '" + m.config.media_type +
                              "' is not an image config (artifacts other than container images are not supported)");
    if (m.config.size > static_cast<std::int64_t>(limits::kMaxImageConfigBytes))
        return f.fail("config.size", "is " + std::to_string(m.config.size) + ", more than the limit of " +
                                         std::to_string(limits::kMaxImageConfigBytes));

    const nlohmann::json* layers = NPS_TRY(f.array("layers", limits::kMaxImageLayers));
    if (!layers)
        return f.fail("layers", "is missing");
    for (std::size_t i = 0; i < layers->size(); ++i) {
        const std::string path = "layers[" + std::to_string(i) + "]";
        Descriptor layer = NPS_TRY(read_descriptor((*layers)[i], name, path));
        if (!media_type::layer_compression(layer.media_type))
            return internal_error("Unsupported " + name + ": " + path + " has media type '" + layer.media_type +
                                  "' (supported: tar, tar+gzip, tar+zstd and Docker's tar.gzip layers)");
        if (static_cast<std::uint64_t>(layer.size) > limits::kMaxImageBlobBytes)
            return f.fail(path + ".size", "is larger than the limit of " + std::to_string(limits::kMaxImageBlobBytes));
        m.layers.push_back(std::move(layer));
    }
    return m;
}

Result<ImageIndex> parse_index(std::string_view text, std::string_view hint, std::string_view what)
{
    const std::string name(what);
    const auto doc = NPS_TRY(detail::parse_json_document(text, limits::kMaxImageIndexBytes, name));
    Fields f(doc, name);
    NPS_TRY_VOID(check_schema_version(f));
    ImageIndex index;
    index.media_type = NPS_TRY(own_media_type(f, hint));
    if (index.media_type.empty())
        index.media_type = media_type::kOciIndex;
    if (!media_type::is_index(index.media_type))
        return f.fail("mediaType", "'" + index.media_type + "' is not an image index type");
    const nlohmann::json* manifests = NPS_TRY(f.array("manifests", limits::kMaxIndexManifests));
    if (!manifests)
        return f.fail("manifests", "is missing");
    for (std::size_t i = 0; i < manifests->size(); ++i)
        index.manifests.push_back(NPS_TRY(read_descriptor((*manifests)[i], name, "manifests[" + std::to_string(i) + "]")));
    return index;
}

std::string serialize_manifest(const ImageManifest& manifest)
{
    const auto descriptor = [](const Descriptor& d) {
        return nlohmann::json{{"mediaType", d.media_type}, {"digest", d.digest}, {"size", d.size}};
    };
    nlohmann::json layers = nlohmann::json::array();
    for (const auto& layer : manifest.layers)
        layers.push_back(descriptor(layer));
    nlohmann::json doc = {{"schemaVersion", 2},
                          {"mediaType", manifest.media_type},
                          {"config", descriptor(manifest.config)},
                          {"layers", std::move(layers)}};
    return doc.dump();
}

}  // namespace nps::image
