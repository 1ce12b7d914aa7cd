// SPDX-License-Identifier: Apache-2.0
// The process an image's config describes, as OCI runtimes start it, with a
// caller's overrides: argv = `command` when given, else Entrypoint followed
// by (`args` when given, else Cmd); the environment is the image's Env (PATH
// added when it has none) with `env` entries ("K=V") replacing or adding
// keys; the working directory is WorkingDir or "/"; the user is `user` when
// given, else the image's User resolved inside the rootfs (image_user.hpp).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "nps/base/result.hpp"
#include "nps/image/image.hpp"
#include "nps/image/image_user.hpp"

namespace nps::image {


struct ProcessOverrides {
    std::optional<std::vector<std::string>> command{};  // replaces Entrypoint and Cmd
    std::optional<std::vector<std::string>> args{};     // replaces Cmd
    std::vector<std::string> env{};                     // "K=V", applied in order
    std::optional<ProcessIds> user{};
};

struct ImageProcess {
    std::vector<std::string> argv;
    std::vector<std::string> env;
    std::string cwd = "/";
    ProcessIds ids;
};

// Fails when the result has no program ("the image has neither Entrypoint
// nor Cmd") or the User cannot be resolved in `rootfs`.
Result<ImageProcess> image_process(const ImageConfig& config, const std::string& rootfs,
                                   const ProcessOverrides& overrides);

// Sets "K=V" in env, replacing an entry for K.
void set_env_entry(std::vector<std::string>& env, const std::string& entry);

}  // namespace nps::image
