// SPDX-License-Identifier: Apache-2.0
#include "table_reader.hpp"

#include <sstream>

#include "nps/base/limits.hpp"
#include "nps/spawn/quantity.hpp"

namespace nps::config::detail {

namespace {

// A bound as a person writes it: 0.000278, 876000.
std::string format_number(double value)
{
    std::ostringstream out;
    out << value;
    return out.str();
}

}  // namespace

Result<void> TableReader::check_keys(std::set<std::string> known) const
{
    if (!table_)
        return {};
    for (const auto& [key, _] : *table_)
        if (!known.count(std::string(key.str())))
            return fail(std::string(key.str()), "unknown key");
    return {};
}

Result<std::optional<std::string>> TableReader::string(const std::string& key) const
{
    const toml::node* node = find(key);
    if (!node)
        return std::optional<std::string>{};
    if (auto v = node->value<std::string>())
        return std::optional<std::string>{*v};
    return fail(key, "expected a string");
}

Result<std::optional<std::int64_t>> TableReader::integer(const std::string& key, std::int64_t min,
                                                         std::int64_t max) const
{
    const toml::node* node = find(key);
    if (!node)
        return std::optional<std::int64_t>{};
    auto v = node->value_exact<std::int64_t>();
    if (!v)
        return fail(key, "expected an integer");
    if (*v < min || *v > max)
        return fail(key, "must be between " + std::to_string(min) + " and " + std::to_string(max));
    return std::optional<std::int64_t>{*v};
}

Result<std::optional<double>> TableReader::number(const std::string& key, double min, double max) const
{
    const toml::node* node = find(key);
    if (!node)
        return std::optional<double>{};
    std::optional<double> v;
    if (auto i = node->value_exact<std::int64_t>())
        v = static_cast<double>(*i);
    else if (auto d = node->value_exact<double>())
        v = *d;
    if (!v)
        return fail(key, "expected a number");
    if (!(*v >= min && *v <= max))
        return fail(key, "must be between " + format_number(min) + " and " + format_number(max));
    return v;
}

Result<std::optional<bool>> TableReader::boolean(const std::string& key) const
{
    const toml::node* node = find(key);
    if (!node)
        return std::optional<bool>{};
    if (auto v = node->value_exact<bool>())
        return std::optional<bool>{*v};
    return fail(key, "expected true or false");
}

Result<std::optional<std::vector<std::string>>> TableReader::strings(const std::string& key) const
{
    const toml::node* node = find(key);
    if (!node)
        return std::optional<std::vector<std::string>>{};
    const toml::array* array = node->as_array();
    if (!array)
        return fail(key, "expected an array of strings");
    std::vector<std::string> out;
    for (const auto& element : *array) {
        auto v = element.value<std::string>();
        if (!v)
            return fail(key, "expected an array of strings");
        out.push_back(*v);
    }
    return std::optional<std::vector<std::string>>{std::move(out)};
}

Result<std::optional<std::uint64_t>> TableReader::byte_size(const std::string& key, std::uint64_t min,
                                                            std::uint64_t max) const
{
    const toml::node* node = find(key);
    if (!node)
        return std::optional<std::uint64_t>{};
    std::int64_t value = 0;
    if (auto v = node->value_exact<std::int64_t>()) {
        value = *v;
    } else if (auto text = node->value_exact<std::string>()) {
        auto bytes = spawn::parse_memory_bytes(*text);
        if (!bytes)
            return fail(key, "'" + *text + "' is not a size like \"1Mi\"");
        value = *bytes;
    } else {
        return fail(key, "expected a size (an integer, or a string like \"1Mi\")");
    }
    if (value < 0 || static_cast<std::uint64_t>(value) < min || static_cast<std::uint64_t>(value) > max)
        return fail(key, "must be between " + std::to_string(min) + " and " + std::to_string(max) + " bytes");
    return std::optional<std::uint64_t>{static_cast<std::uint64_t>(value)};
}

Result<std::optional<std::int64_t>> TableReader::cpu_quantity(const std::string& key) const
{
    const toml::node* node = find(key);
    if (!node)
        return std::optional<std::int64_t>{};
    std::int64_t millicores = 0;
    if (auto v = node->value_exact<std::int64_t>()) {
        if (*v < 0 || *v > limits::kMaxCpuMillicores / 1000)
            return fail(key, "must be between 0 and " + std::to_string(limits::kMaxCpuMillicores / 1000) + " CPUs");
        millicores = *v * 1000;
    } else if (auto text = node->value_exact<std::string>()) {
        auto parsed = spawn::parse_cpu_millicores(*text);
        if (!parsed)
            return fail(key, "'" + *text + "' is not a CPU quantity like \"500m\" or \"2\"");
        millicores = *parsed;
    } else {
        return fail(key, "expected a CPU quantity (an integer, or a string like \"500m\")");
    }
    if (millicores != 0 && (millicores < limits::kMinCpuMillicores || millicores > limits::kMaxCpuMillicores))
        return fail(key, "must be 0 (no limit) or between " + spawn::format_cpu_quantity(limits::kMinCpuMillicores) +
                             " and " + spawn::format_cpu_quantity(limits::kMaxCpuMillicores));
    return std::optional<std::int64_t>{millicores};
}

Error TableReader::fail(const std::string& key, const std::string& what) const
{
    return internal_error("Invalid configuration in '" + origin_ + "': " + name_ + "." + key + ": " + what);
}

bool has_control(const std::string& s)
{
    for (char ch : s)
        if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f)
            return true;
    return false;
}

}  // namespace nps::config::detail
