// SPDX-License-Identifier: Apache-2.0
#include "nps/image/media_types.hpp"

namespace nps::image::media_type {

bool is_manifest(std::string_view type)
{
    return type == kOciManifest || type == kDockerManifest;
}

bool is_index(std::string_view type)
{
    return type == kOciIndex || type == kDockerManifestList;
}

bool is_config(std::string_view type)
{
    return type == kOciConfig || type == kDockerConfig;
}

std::optional<Compression> layer_compression(std::string_view type)
{
    struct LayerType {
        std::string_view name;
        Compression compression;
    };
    // The OCI image spec's layer types and Docker's image manifest v2 schema
    // 2 ones. Non-distributable ("foreign") layers are refused: their content
    // lives at URLs outside the image, which an air-gapped runner cannot
    // fetch and should not trust.
    static constexpr LayerType kLayerTypes[] = {
        {kOciLayerTar, Compression::none},
        {kOciLayerGzip, Compression::gzip},
        {kOciLayerZstd, Compression::zstd},
        {"application/vnd.docker.image.rootfs.diff.tar", Compression::none},
        {kDockerLayerGzip, Compression::gzip},
    };
    for (const LayerType& layer : kLayerTypes)
        if (layer.name == type)
            return layer.compression;
    return std::nullopt;
}

std::string_view oci_layer_type(Compression compression)
{
    switch (compression) {
    case Compression::gzip:
        return kOciLayerGzip;
    case Compression::zstd:
        return kOciLayerZstd;
    case Compression::none:
        break;
    }
    return kOciLayerTar;
}

Compression sniff_compression(std::string_view b)
{
    if (b.size() >= 2 && static_cast<unsigned char>(b[0]) == 0x1f && static_cast<unsigned char>(b[1]) == 0x8b)
        return Compression::gzip;
    if (b.size() >= 4 && static_cast<unsigned char>(b[0]) == 0x28 && static_cast<unsigned char>(b[1]) == 0xb5 &&
        static_cast<unsigned char>(b[2]) == 0x2f && static_cast<unsigned char>(b[3]) == 0xfd)
        return Compression::zstd;
    return Compression::none;
}

}  // namespace nps::image::media_type
