// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: msgpack_to_json on arbitrary bytes. Beyond "no crash, no
// sanitizer report, no allocation beyond the limits":
//   1. Accepted output is JSON that json_to_msgpack accepts.
//   2. JSON → MsgPack → JSON gives the same value (RFC 8785 form).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "nps/proto/jcs.hpp"
#include "nps/proto/msgpack_json.hpp"

using namespace nps::proto;

namespace {

[[noreturn]] void property_broken(const char* what)
{
    std::fprintf(stderr, "property broken: %s\n", what);
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    auto json = msgpack_to_json(input);
    if (!json)
        return 0;
    auto packed = json_to_msgpack(*json);
    if (!packed)
        property_broken("msgpack_to_json produced JSON that json_to_msgpack refuses");
    // Compared in RFC 8785 form: msgpack-cxx packs an integral double as an
    // integer, whose text differs from the double's shortest form.
    auto again = msgpack_to_json(*packed);
    if (!again)
        property_broken("JSON -> MsgPack -> JSON failed");
    const auto a = jcs_canonicalize(*json);
    const auto b = jcs_canonicalize(*again);
    if (a.has_value() != b.has_value() || (a && *a != *b))
        property_broken("JSON -> MsgPack -> JSON changed the value");
    return 0;
}
