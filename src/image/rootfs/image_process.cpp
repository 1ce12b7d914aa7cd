// SPDX-License-Identifier: Apache-2.0
#include "nps/image/image_process.hpp"

#include <algorithm>

#include "nps/sandbox/spawner.hpp"

namespace nps::image {

void set_env_entry(std::vector<std::string>& env, const std::string& entry)
{
    std::string key = entry.substr(0, entry.find('=') + 1);
    std::erase_if(env, [&](const std::string& e) { return e.rfind(key, 0) == 0; });
    env.push_back(entry);
}

Result<ImageProcess> image_process(const ImageConfig& config, const std::string& rootfs,
                                   const ProcessOverrides& overrides)
{
    ImageProcess process;
    if (overrides.command) {
        process.argv = *overrides.command;
    } else {
        process.argv = config.entrypoint;
        const auto& tail = overrides.args ? *overrides.args : config.cmd;
        process.argv.insert(process.argv.end(), tail.begin(), tail.end());
    }
    if (process.argv.empty() || process.argv.front().empty())
        return internal_error("the image has neither Entrypoint nor Cmd, and no command was given");
    process.env = config.env;
    if (std::none_of(process.env.begin(), process.env.end(),
                     [](const std::string& e) { return e.rfind("PATH=", 0) == 0; }))
        process.env.insert(process.env.begin(), sandbox::kDefaultPathEnv);
    for (const auto& entry : overrides.env)
        set_env_entry(process.env, entry);
    if (!config.working_dir.empty())
        process.cwd = config.working_dir;
    process.ids = overrides.user ? *overrides.user : NPS_TRY(resolve_image_user(config.user, rootfs));
    return process;
}

}  // namespace nps::image
