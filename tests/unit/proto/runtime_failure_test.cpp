// SPDX-License-Identifier: Apache-2.0
// The runner's own attempt failures: each kind's code and retryability, and
// docs/errors.md ("Which failures are retried") saying the same.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "nps/proto/error_codes.hpp"
#include "nps/proto/runtime_failure.hpp"

using nps::proto::RuntimeFailure;

namespace {

struct Expected {
    RuntimeFailure kind;
    const char* code;
    bool retryable;
};

constexpr Expected kExpected[] = {
    {RuntimeFailure::spawn_spec_invalid, "NOP-SPAWN-SPEC-INVALID", false},
    {RuntimeFailure::image_unavailable, "NOP-RESOURCE-INSUFFICIENT", true},
    {RuntimeFailure::sandbox_unavailable, "NOP-RESOURCE-INSUFFICIENT", true},
    {RuntimeFailure::spawn_transient, "NOP-DELEGATE-REJECTED", true},
    {RuntimeFailure::spawn_refused, "NOP-DELEGATE-REJECTED", false},
    {RuntimeFailure::exit_status, "NOP-DELEGATE-REJECTED", true},
    {RuntimeFailure::killed_by_signal, "NOP-DELEGATE-REJECTED", true},
    {RuntimeFailure::no_final_frame, "NOP-DELEGATE-REJECTED", false},
    {RuntimeFailure::status_unknown, "NOP-DELEGATE-REJECTED", false},
    {RuntimeFailure::out_of_memory, "NOP-RESOURCE-INSUFFICIENT", false},
    {RuntimeFailure::idle_timeout, "NOP-RUNTIME-IDLE-TIMEOUT", true},
    {RuntimeFailure::max_runtime, "NOP-RUNTIME-MAX-RUNTIME", true},
    {RuntimeFailure::shutdown, "NPS-SERVER-UNAVAILABLE", true},
    {RuntimeFailure::deadline, "NOP-DELEGATE-TIMEOUT", true},
};

std::string read_file(const char* path)
{
    std::ifstream in(path);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

}  // namespace

TEST_CASE("a runtime failure carries its kind's code, the message and whether a retry may help")
{
    for (const Expected& e : kExpected) {
        CAPTURE(nps::proto::describe(e.kind).name);
        const nps::Error error = nps::proto::runtime_failure(e.kind, "what happened");
        CHECK(error.code == e.code);
        CHECK(error.message == "what happened");
        CHECK(error.retryable == e.retryable);
        CHECK(nps::proto::lookup_error_code(error.code).has_value());
    }
}

TEST_CASE("a protocol violation is never retried; errors made elsewhere are not retryable")
{
    CHECK_FALSE(nps::proto::describe(RuntimeFailure::protocol_violation).retryable);
    CHECK_FALSE(nps::protocol_error(nps::proto::code::kNopResourceInsufficient, "x").retryable);
    CHECK_FALSE(nps::system_error("x", 11).retryable);
}

TEST_CASE("docs/errors.md lists every runtime failure with its code and retry decision")
{
    const std::string doc = read_file(NPS_ERRORS_DOC);
    REQUIRE_FALSE(doc.empty());
    std::size_t kinds = 0;
    for (auto it = nps::proto::runtime_failure_table_begin(); it != nps::proto::runtime_failure_table_end(); ++it) {
        ++kinds;
        CAPTURE(it->name);
        const std::string row_start = std::string("| `") + it->name + "` | ";
        const auto row = doc.find(row_start);
        REQUIRE(row != std::string::npos);
        const std::string line = doc.substr(row, doc.find('\n', row) - row);
        if (std::string(it->name) != "protocol_violation")
            CHECK(line.find(std::string("`") + it->code + "`") != std::string::npos);
        CHECK(line.find(it->retryable ? " | yes | " : " | no | ") != std::string::npos);
    }
    CHECK(kinds == std::size(kExpected) + 1);  // + protocol_violation
}
