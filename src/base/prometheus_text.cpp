// SPDX-License-Identifier: Apache-2.0
#include "nps/base/prometheus_text.hpp"

#include <charconv>
#include <cmath>

namespace nps::prometheus {

namespace {

std::string_view type_name(Type type)
{
    switch (type) {
    case Type::counter: return "counter";
    case Type::gauge: return "gauge";
    case Type::histogram: return "histogram";
    }
    return "untyped";
}

}  // namespace

void family(std::string& out, std::string_view name, Type type, std::string_view help)
{
    out.append("# HELP ").append(name).append(" ").append(help).append("\n# TYPE ").append(name).append(" ");
    out.append(type_name(type)).append("\n");
}

std::string label(std::string_view key, std::string_view value)
{
    std::string out;
    out.append("{").append(key).append("=\"");
    for (const char c : value) {
        if (c == '\\' || c == '"')
            out.append(1, '\\').append(1, c);
        else if (c == '\n')
            out.append("\\n");
        else
            out.append(1, c);
    }
    out.append("\"}");
    return out;
}

std::string value_text(double value)
{
    if (std::isnan(value))
        return "NaN";
    if (std::isinf(value))
        return value > 0 ? "+Inf" : "-Inf";
    char text[32];
    const auto [end, ec] = std::to_chars(text, text + sizeof text, value);
    return ec == std::errc() ? std::string(text, end) : std::string("NaN");
}

void sample_text(std::string& out, std::string_view name, std::string_view labels, std::string_view value)
{
    out.append(name).append(labels).append(" ").append(value).append("\n");
}

}  // namespace nps::prometheus
