// SPDX-License-Identifier: Apache-2.0
// The uid and gid an image's `User` names, as OCI runtimes read it:
// "", "uid", "uid:gid", "name", "name:group", "uid:group", "name:gid".
// Names are looked up in the image's own /etc/passwd and /etc/group, read
// with every path resolved inside the rootfs (an image's symlink such as
// etc/passwd -> /etc/passwd cannot reach the host's files). Without a group,
// the gid is the user's passwd entry's, or 0 when there is none.
#pragma once

#include <sys/types.h>

#include <string>

#include "nps/base/result.hpp"

namespace nps::image {

struct ProcessIds {
    uid_t uid = 0;
    gid_t gid = 0;
};

Result<ProcessIds> resolve_image_user(const std::string& user, const std::string& rootfs);

}  // namespace nps::image
