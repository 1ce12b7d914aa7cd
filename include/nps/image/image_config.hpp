// SPDX-License-Identifier: Apache-2.0
// Parser for the image config blob (OCI image-spec config, Docker image
// JSON), bounded like manifest.hpp: the runtime parts (Entrypoint, Cmd, Env,
// WorkingDir, User), the platform and rootfs.diff_ids.
//
// Every string handed to the sandbox is checked: no NUL bytes, at most
// limits::kMaxImageConfigStringBytes; Env entries are KEY=VALUE with a
// non-empty KEY; WorkingDir, when set, is absolute. Null fields mean unset.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "nps/base/result.hpp"
#include "nps/image/image.hpp"
#include "nps/image/platform.hpp"

namespace nps::image {

struct ParsedImageConfig {
    Platform platform;                  // os, architecture, variant
    ImageConfig config;
    std::vector<std::string> diff_ids;  // rootfs.diff_ids, bottom first
};

Result<ParsedImageConfig> parse_image_config(std::string_view text, std::string_view what);

}  // namespace nps::image
