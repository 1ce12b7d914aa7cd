// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the condition language (nop/condition.hpp) on arbitrary
// bytes. Beyond "no crash, no sanitizer report", it aborts when:
//   1. a failure carries a code other than NOP-CONDITION-EVAL-ERROR (an
//      internal error means an exception or a bug escaped);
//   2. text longer than limits::kMaxConditionChars characters is accepted
//      (checked conservatively: more than 4 bytes per character);
//   3. parsing is not deterministic (a second parse disagrees), or the same
//      condition evaluates differently twice against the same results.
// The results cover every JSON type, so paths reach each comparison rule.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "nps/base/limits.hpp"
#include "nps/nop/condition.hpp"

namespace {

[[noreturn]] void property_broken(const char* what)
{
    std::fprintf(stderr, "property broken: %s\n", what);
    std::abort();
}

const nps::nop::Snapshot& results()
{
    static const nps::nop::Snapshot snapshot = {
        {"a", nps::nop::Json::parse(R"({"n": 1, "f": 0.5, "s": "x", "t": true, "z": null, "l": [1, "x", null],
                                        "o": {"k": {"k": [2]}}, "e": "", "neg": -3})")},
        {"b", nps::nop::Json::parse(R"([1, 2])")},
        {"c", nps::nop::Json::parse(R"("text")")},
    };
    return snapshot;
}

void check_error(const nps::Error& error)
{
    if (error.code != "NOP-CONDITION-EVAL-ERROR")
        property_broken("a condition failure without NOP-CONDITION-EVAL-ERROR");
    if (error.message.rfind("condition: ", 0) != 0)
        property_broken("a condition error message without its prefix");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    auto condition = nps::nop::Condition::parse(text);
    auto again = nps::nop::Condition::parse(text);
    if (condition.has_value() != again.has_value())
        property_broken("parsing is not deterministic");
    if (!condition) {
        check_error(condition.error());
        if (again.error().message != condition.error().message)
            property_broken("parse errors differ between two parses");
        return 0;
    }
    if (size > 4 * nps::limits::kMaxConditionChars)
        property_broken("a condition over the length limit was accepted");
    const auto first = condition->evaluate(results());
    const auto second = again->evaluate(results());
    if (first.has_value() != second.has_value())
        property_broken("evaluation is not deterministic");
    if (!first) {
        check_error(first.error());
        return 0;
    }
    if (*first != *second)
        property_broken("evaluation is not deterministic");
    // The empty snapshot (every path null) must also evaluate cleanly or fail properly.
    const auto empty = condition->evaluate({});
    if (!empty)
        check_error(empty.error());
    return 0;
}
