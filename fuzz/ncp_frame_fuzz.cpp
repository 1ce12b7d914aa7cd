// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: decode_frame_to_json on arbitrary bytes (header, policy,
// length, Tier-1/Tier-2 payload). Beyond "no crash, no sanitizer report":
//   1. An accepted frame's header re-encodes to the input's first bytes
//      (reserved bytes 6-7 aside, which the decoder ignores).
//   2. Its JSON re-framed in the same tier decodes to the same JSON value.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "nps/proto/jcs.hpp"
#include "nps/proto/ncp_frame.hpp"

using namespace nps::proto::ncp;
using nps::proto::jcs_canonicalize;

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
    FrameDecodeOptions options;
    options.policy.binary_vector_v1 = (size % 2) == 1;  // both policies, chosen by the input
    auto frame = decode_frame_to_json(input, options);
    if (!frame)
        return 0;
    auto header = encode_frame_header(frame->header);
    if (!header)
        property_broken("an accepted header does not re-encode");
    const std::size_t compared = frame->header.flags.ext ? 6 : 4;
    if (input.substr(0, compared) != std::string_view(*header).substr(0, compared))
        property_broken("header re-encoding differs");
    auto again = encode_frame(frame->header.frame_type, frame->header.flags.tier, frame->json);
    if (!again) {
        // Tier-1 payloads are passed on unparsed: invalid JSON is the reader's to refuse.
        if (frame->header.flags.tier == Tier::json)
            return 0;
        property_broken("converted JSON does not re-encode");
    }
    // Compared in RFC 8785 form: msgpack-cxx packs an integral double as an
    // integer, which prints exactly (16391072945163730944) where the double
    // printed shortest (16391072945163730000); the value is the same.
    auto back = decode_frame_to_json(*again, options);
    if (!back)
        property_broken("re-framed JSON does not decode");
    const auto a = jcs_canonicalize(frame->json);
    const auto b = jcs_canonicalize(back->json);
    if (a.has_value() != b.has_value() || (a && *a != *b))
        property_broken("re-framed JSON differs");
    return 0;
}
