// SPDX-License-Identifier: Apache-2.0
#include <string>

#include "nps/image/layer_unpack.hpp"

namespace nps::image {

namespace {

struct MediaType {
    std::string_view name;
    Compression compression;
};

// The OCI image spec's layer types (the .nondistributable. ones are
// deprecated but still found) and Docker's image manifest v2 schema 2 types.
constexpr MediaType kLayerMediaTypes[] = {
    {"application/vnd.oci.image.layer.v1.tar", Compression::none},
    {"application/vnd.oci.image.layer.v1.tar+gzip", Compression::gzip},
    {"application/vnd.oci.image.layer.v1.tar+zstd", Compression::zstd},
    {"application/vnd.oci.image.layer.nondistributable.v1.tar", Compression::none},
    {"application/vnd.oci.image.layer.nondistributable.v1.tar+gzip", Compression::gzip},
    {"application/vnd.oci.image.layer.nondistributable.v1.tar+zstd", Compression::zstd},
    {"application/vnd.docker.image.rootfs.diff.tar", Compression::none},
    {"application/vnd.docker.image.rootfs.diff.tar.gzip", Compression::gzip},
    {"application/vnd.docker.image.rootfs.foreign.diff.tar.gzip", Compression::gzip},
};

}  // namespace

Result<Compression> compression_for_media_type(std::string_view media_type)
{
    for (const MediaType& type : kLayerMediaTypes) {
        if (type.name == media_type)
            return type.compression;
    }
    return internal_error("Unsupported layer media type '" + std::string(media_type) + "'");
}

}  // namespace nps::image
