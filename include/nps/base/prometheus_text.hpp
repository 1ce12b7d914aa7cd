// SPDX-License-Identifier: Apache-2.0
// The Prometheus text exposition format (version 0.0.4) that GET /metrics
// serves, written by every area that exports metrics: a family is a HELP and
// a TYPE line, then its samples, `name{labels} value`. Values are written in
// full (integers as integers, other numbers in their shortest exact form,
// +Inf, -Inf, NaN); label values are escaped as the format requires.
#pragma once

#include <string>
#include <string_view>
#include <type_traits>

namespace nps::prometheus {

enum class Type { counter, gauge, histogram };

// Appends a family's "# HELP" and "# TYPE" lines; `help` is one line.
void family(std::string& out, std::string_view name, Type type, std::string_view help);

// `{key="value"}`, the value escaped (backslash, double quote, newline).
std::string label(std::string_view key, std::string_view value);

// A number as a sample's value.
std::string value_text(double value);

// Appends one sample line; `labels` is empty or made by label().
void sample_text(std::string& out, std::string_view name, std::string_view labels, std::string_view value);

template <class V>
    requires std::is_arithmetic_v<V> && (!std::is_same_v<V, bool>)
void sample(std::string& out, std::string_view name, std::string_view labels, V value)
{
    if constexpr (std::is_floating_point_v<V>)
        sample_text(out, name, labels, value_text(static_cast<double>(value)));
    else
        sample_text(out, name, labels, std::to_string(value));
}

// A family with a single sample and no labels.
template <class V>
void metric(std::string& out, std::string_view name, Type type, std::string_view help, V value)
{
    family(out, name, type, help);
    sample(out, name, {}, value);
}

}  // namespace nps::prometheus
