// SPDX-License-Identifier: Apache-2.0
// The media types nps-runner reads, and what a layer's type says about its
// compression. Anything else is refused with an error naming the type.
#pragma once

#include <optional>
#include <string_view>

namespace nps::image::media_type {

inline constexpr std::string_view kOciManifest = "application/vnd.oci.image.manifest.v1+json";
inline constexpr std::string_view kOciIndex = "application/vnd.oci.image.index.v1+json";
inline constexpr std::string_view kOciConfig = "application/vnd.oci.image.config.v1+json";
inline constexpr std::string_view kOciLayerTar = "application/vnd.oci.image.layer.v1.tar";
inline constexpr std::string_view kOciLayerGzip = "application/vnd.oci.image.layer.v1.tar+gzip";
inline constexpr std::string_view kOciLayerZstd = "application/vnd.oci.image.layer.v1.tar+zstd";

inline constexpr std::string_view kDockerManifest = "application/vnd.docker.distribution.manifest.v2+json";
inline constexpr std::string_view kDockerManifestList = "application/vnd.docker.distribution.manifest.list.v2+json";
inline constexpr std::string_view kDockerConfig = "application/vnd.docker.container.image.v1+json";
inline constexpr std::string_view kDockerLayerGzip = "application/vnd.docker.image.rootfs.diff.tar.gzip";

enum class Compression { none, gzip, zstd };

bool is_manifest(std::string_view type);  // OCI manifest or Docker v2s2 manifest
bool is_index(std::string_view type);     // OCI index or Docker manifest list
bool is_config(std::string_view type);    // OCI or Docker image config
// The compression of a supported layer type; nullopt for anything else.
std::optional<Compression> layer_compression(std::string_view type);

// The OCI layer type for a compression (what a docker-archive's layers are
// recorded as after import, chosen from the bytes' magic numbers).
std::string_view oci_layer_type(Compression compression);
// The compression the first bytes of a blob announce (gzip 1f 8b, zstd
// 28 b5 2f fd); none otherwise.
Compression sniff_compression(std::string_view first_bytes);

}  // namespace nps::image::media_type
