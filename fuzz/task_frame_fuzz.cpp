// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: decode_task_frame, jcs_canonicalize and the inbox's
// other decoder, decode_completion_message, on arbitrary bytes.
// Beyond "no crash, no sanitizer report", it checks three properties and
// aborts when one breaks:
//   1. JCS is idempotent: canon(canon(x)) == canon(x).
//   2. A decoded frame's DAG validates and its hashes follow from its
//      canonical text.
//   3. Decoding the canonical form of an accepted frame gives the same frame
//      hashes (canonicalization never changes what a frame means).
//   4. No text is both a TaskFrame and a completion message, and one the
//      route takes for a completion message (looks_like_…) is never a frame.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "nps/base/digest.hpp"
#include "nps/proto/completion_message.hpp"
#include "nps/proto/dag.hpp"
#include "nps/proto/dedup.hpp"
#include "nps/proto/jcs.hpp"
#include "nps/proto/task_frame.hpp"

namespace {

[[noreturn]] void property_broken(const char* what)
{
    std::fprintf(stderr, "property broken: %s\n", what);
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    using namespace nps::proto;
    const std::string_view text(reinterpret_cast<const char*>(data), size);

    const auto canonical = jcs_canonicalize(text);
    if (canonical) {
        const auto again = jcs_canonicalize(*canonical);
        if (!again || *again != *canonical)
            property_broken("JCS is not idempotent");
    }

    const auto frame = decode_task_frame(text);
    const auto message = decode_completion_message(text);
    if (frame && (message || looks_like_completion_message(text)))
        property_broken("a text is both a TaskFrame and a completion message");
    if (message && !looks_like_completion_message(text))
        property_broken("a completion message the route would not recognise");
    if (!frame)
        return 0;
    if (!canonical)
        property_broken("a decoded frame has no canonical form");
    if (!validate_dag(frame->dag))
        property_broken("a decoded frame's DAG does not validate");
    if (frame->dag_hash != dag_hash_from_canonical(frame->canonical_dag_json) ||
        frame->dedup_key != dedup_key(frame->task_id, frame->dag_hash))
        property_broken("derived hashes do not follow from the canonical dag");

    const auto redecoded = decode_task_frame(*canonical);
    if (!redecoded)
        property_broken("the canonical form of an accepted frame is rejected");
    if (redecoded->canonical_frame_hash != frame->canonical_frame_hash || redecoded->dag_hash != frame->dag_hash)
        property_broken("canonicalization changed the frame hashes");
    return 0;
}
