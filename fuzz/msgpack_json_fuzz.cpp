// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: msgpack_to_json on arbitrary bytes. Beyond "no crash, no
// sanitizer report, no allocation beyond the limits":
//   1. Accepted output is JSON that json_to_msgpack accepts.
//   2. JSON → MsgPack → JSON gives the same text (the conversion is stable).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

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
    auto again = msgpack_to_json(*packed);
    if (!again || *again != *json)
        property_broken("JSON -> MsgPack -> JSON changed the text");
    return 0;
}
