// SPDX-License-Identifier: Apache-2.0
// The image config: platform, the runtime settings, rootfs.diff_ids.
#include "nps/image/image_config.hpp"

#include "json_document.hpp"
#include "nps/base/limits.hpp"
#include "nps/image/content_digest.hpp"

namespace nps::image {

namespace {

using detail::Fields;

Result<void> read_runtime(const nlohmann::json& object, const std::string& what, ImageConfig& out)
{
    Fields f(object, what, "config.");
    constexpr std::size_t max_string = limits::kMaxImageConfigStringBytes;
    out.entrypoint = NPS_TRY(f.strings("Entrypoint", limits::kMaxImageConfigArgs, max_string)).value_or(
        std::vector<std::string>{});
    out.cmd = NPS_TRY(f.strings("Cmd", limits::kMaxImageConfigArgs, max_string)).value_or(std::vector<std::string>{});
    if (out.entrypoint.size() + out.cmd.size() > limits::kMaxImageConfigArgs)
        return f.fail("Entrypoint", "and Cmd have more than " + std::to_string(limits::kMaxImageConfigArgs) +
                                        " entries together");
    out.env = NPS_TRY(f.strings("Env", limits::kMaxImageConfigEnv, max_string)).value_or(std::vector<std::string>{});
    for (const auto& entry : out.env) {
        const auto eq = entry.find('=');
        if (eq == 0 || eq == std::string::npos)
            return f.fail("Env", "entry '" + entry.substr(0, 64) + "' is not KEY=VALUE");
    }
    out.working_dir = NPS_TRY(f.string("WorkingDir", max_string)).value_or("");
    if (!out.working_dir.empty() && out.working_dir.front() != '/')
        return f.fail("WorkingDir", "'" + out.working_dir.substr(0, 64) + "' is not an absolute path");
    out.user = NPS_TRY(f.string("User", max_string)).value_or("");
    return {};
}

}  // namespace

Result<ParsedImageConfig> parse_image_config(std::string_view text, std::string_view what)
{
    const std::string name(what);
    const auto doc = NPS_TRY(detail::parse_json_document(text, limits::kMaxImageConfigBytes, name));
    Fields f(doc, name);
    ParsedImageConfig out;
    out.platform.os = NPS_TRY(f.required_string("os", 64));
    out.platform.architecture = NPS_TRY(f.required_string("architecture", 64));
    out.platform.variant = NPS_TRY(f.string("variant", 64)).value_or("");

    if (const nlohmann::json* runtime = NPS_TRY(f.object("config")))
        NPS_TRY_VOID(read_runtime(*runtime, name, out.config));

    const nlohmann::json* rootfs = NPS_TRY(f.object("rootfs"));
    if (!rootfs)
        return f.fail("rootfs", "is missing");
    Fields r(*rootfs, name, "rootfs.");
    const std::string type = NPS_TRY(r.required_string("type", 64));
    if (type != "layers")
        return r.fail("type", "is '" + type + "', not 'layers'");
    auto diff_ids = NPS_TRY(r.strings("diff_ids", limits::kMaxImageLayers, 128));
    if (!diff_ids)
        return r.fail("diff_ids", "is missing");
    for (std::size_t i = 0; i < diff_ids->size(); ++i)
        NPS_TRY_VOID(check_digest((*diff_ids)[i], name + " rootfs.diff_ids[" + std::to_string(i) + "]"));
    out.diff_ids = std::move(*diff_ids);
    return out;
}

}  // namespace nps::image
