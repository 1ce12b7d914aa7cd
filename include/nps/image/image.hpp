// SPDX-License-Identifier: Apache-2.0
// A resolved image: what the worker side needs to build a rootfs and start
// the image's process. Produced by ImageStore::resolve()/pin() from the refs
// in runner.db and the verified blobs of the content store.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace nps::image {

// One layer of an image, as recorded at import.
struct LayerRef {
    std::string digest;      // "sha256:<hex>" of the blob as stored (compressed or not)
    std::string media_type;  // one of media_types.hpp's layer types
    std::int64_t size = 0;   // bytes of the blob
    std::string diff_id;     // "sha256:<hex>" of the uncompressed tar (the config's rootfs.diff_ids)
};

// The parts of the image config (OCI image-spec "config" object) the
// runtime honours. Empty vectors/strings mean "not set".
struct ImageConfig {
    std::vector<std::string> entrypoint, cmd, env;  // env entries are "KEY=VALUE"
    std::string working_dir, user;                  // user: "uid", "uid:gid", "name", "name:group"
};

struct ResolvedImage {
    std::string name;             // the ref it was resolved from ("busybox:latest"), or the manifest digest
    std::string manifest_digest;  // "sha256:<hex>"
    std::string config_digest;
    std::vector<LayerRef> layers;  // bottom first
    ImageConfig config;
};

}  // namespace nps::image
