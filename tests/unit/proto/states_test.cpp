// SPDX-License-Identifier: Apache-2.0
// Task and node states: the spec's spellings to and from the enums, and
// which states are terminal (NPS-5 §5, the saga states of §3.5).
#include <doctest/doctest.h>

#include <initializer_list>
#include <string>

#include "nps/proto/states.hpp"

using nps::proto::NodeState;
using nps::proto::TaskState;

namespace {

struct Spelling {
    const char* text;
    bool terminal;
};

// Each spelling parses, prints back the same, and is terminal as given.
template <class Parse>
void check_spellings(std::initializer_list<Spelling> spellings, Parse parse)
{
    for (const Spelling& s : spellings) {
        CAPTURE(s.text);
        const auto parsed = parse(s.text);
        REQUIRE(parsed);
        CHECK(nps::proto::to_string(*parsed) == s.text);
        CHECK(nps::proto::is_terminal(*parsed) == s.terminal);
    }
}

}  // namespace

TEST_CASE("every task state reads back from its spelling; the ends are COMPLETED, FAILED, CANCELLED")
{
    check_spellings({{"PENDING", false}, {"RUNNING", false}, {"COMPLETED", true}, {"FAILED", true}, {"CANCELLED", true}},
                    nps::proto::parse_task_state);
    CHECK(std::string(nps::proto::task_state_text::completed) == "COMPLETED");
}

TEST_CASE("every node state reads back from its spelling; COMPENSATING is not an end")
{
    check_spellings({{"PENDING", false},
                     {"RUNNING", false},
                     {"COMPLETED", true},
                     {"FAILED", true},
                     {"CANCELLED", true},
                     {"SKIPPED", true},
                     {"COMPENSATING", false},
                     {"COMPENSATED", true},
                     {"COMPENSATION_FAILED", true}},
                    nps::proto::parse_node_state);
}

TEST_CASE("only the exact spelling is a state")
{
    for (const char* text : {"", "completed", "Completed", "COMPLETED ", "DONE", "NOT RUN"}) {
        CAPTURE(text);
        CHECK_FALSE(nps::proto::parse_node_state(text));
        CHECK_FALSE(nps::proto::parse_task_state(text));
    }
    CHECK_FALSE(nps::proto::parse_task_state("SKIPPED"));  // a node state only
    CHECK(nps::proto::parse_node_state("SKIPPED") == NodeState::skipped);
    CHECK(nps::proto::parse_task_state("FAILED") == TaskState::failed);
}
