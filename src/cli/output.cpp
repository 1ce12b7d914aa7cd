// SPDX-License-Identifier: Apache-2.0
#include "nps/cli/output.hpp"

#include <cstdio>

namespace nps::cli {

std::string Output::text(std::string_view value) const
{
    return raw ? std::string(value) : escape_terminal(value);
}

std::string Output::field(const nlohmann::json& value) const
{
    if (value.is_string())
        return text(value.get_ref<const std::string&>());
    if (value.is_null())
        return "-";
    return text(value.dump(-1, ' ', /*ensure_ascii=*/!raw, nlohmann::json::error_handler_t::replace));
}

void Output::write_text(std::string_view value) const
{
    const std::string shown = raw ? std::string(value) : escape_terminal(value, KeepControls::newline_and_tab);
    std::fwrite(shown.data(), 1, shown.size(), stdout);
}

void Output::print_json(const nlohmann::json& value) const
{
    const std::string text = value.dump(2, ' ', /*ensure_ascii=*/!raw, nlohmann::json::error_handler_t::replace);
    std::printf("%s\n", text.c_str());
}

}  // namespace nps::cli
