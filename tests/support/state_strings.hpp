// SPDX-License-Identifier: Apache-2.0
// doctest prints task and node states by their spec spelling ("COMPLETED"),
// so a failed CHECK(record.state == TaskState::completed) says which state
// it found.
#pragma once

#include <doctest/doctest.h>

#include "nps/proto/states.hpp"

namespace doctest {

template <>
struct StringMaker<nps::proto::TaskState> {
    static String convert(nps::proto::TaskState state)
    {
        const auto text = nps::proto::to_string(state);
        return String(text.data(), static_cast<unsigned>(text.size()));
    }
};

template <>
struct StringMaker<nps::proto::NodeState> {
    static String convert(nps::proto::NodeState state)
    {
        const auto text = nps::proto::to_string(state);
        return String(text.data(), static_cast<unsigned>(text.size()));
    }
};

}  // namespace doctest
