// SPDX-License-Identifier: Apache-2.0
// Parsers for image manifests and indexes (OCI image-spec v1, Docker
// distribution schema 2 and manifest lists), bounded by base/limits.hpp.
//
// Contract: the text is untrusted. Sizes are checked before parsing, JSON
// nesting is bounded, every field the runner uses is type- and range-checked
// (digests are sha256, sizes are non-negative integers, layer media types
// are supported ones) and any violation is an error naming the document and
// the field. Unknown fields are ignored, as the specs require.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nps/base/result.hpp"
#include "nps/image/platform.hpp"

namespace nps::image {

inline constexpr std::string_view kAnnotationRefName = "org.opencontainers.image.ref.name";
inline constexpr std::string_view kAnnotationContainerdName = "io.containerd.image.name";

struct Descriptor {
    std::string media_type;
    std::string digest;
    std::int64_t size = 0;
    std::optional<Platform> platform;               // index entries only
    std::map<std::string, std::string> annotations;  // string values only; others ignored
};

struct ImageManifest {
    std::string media_type;  // the document's own, or the descriptor's when the document has none
    Descriptor config;
    std::vector<Descriptor> layers;  // bottom first; every media type is a supported layer type
};

struct ImageIndex {
    std::string media_type;
    std::vector<Descriptor> manifests;  // entries of any media type; callers skip what they do not know
};

enum class DocumentKind { manifest, index };

// Which of the two a document is: its mediaType field, else the
// descriptor's media type (`hint`, may be empty), else the presence of
// "manifests" / "layers". `what` names the document in errors.
Result<DocumentKind> document_kind(std::string_view text, std::string_view hint, std::string_view what);

// `hint` is the media type of the descriptor that pointed at the document
// (empty for none); when both are given they must agree.
Result<ImageManifest> parse_manifest(std::string_view text, std::string_view hint, std::string_view what);
Result<ImageIndex> parse_index(std::string_view text, std::string_view hint, std::string_view what);

// A manifest as compact JSON, for images whose source has none (docker-archive):
// an OCI manifest with mediaType, config and layers, keys in sorted order.
std::string serialize_manifest(const ImageManifest& manifest);

}  // namespace nps::image
