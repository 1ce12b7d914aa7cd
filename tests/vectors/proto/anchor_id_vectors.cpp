// SPDX-License-Identifier: Apache-2.0
// ncp/anchor_id_vectors.json: anchor_id = "sha256:" + hex(SHA-256(JCS(schema))).
// Positive vectors compare the canonical text and the id; the negative one
// recomputes the id of an inbound AnchorFrame and must detect the mismatch
// (NCP-ANCHOR-ID-MISMATCH).
#include "nps/base/digest.hpp"
#include "nps/proto/error_codes.hpp"
#include "nps/proto/jcs.hpp"
#include "vector_harness.hpp"

using namespace nps::proto;
using namespace nps::test::vectors;

namespace {

using Reasons = std::vector<std::string>;

// {canonical_jcs, anchor_id} of a schema, or {error, status} when it is not
// canonicalizable.
Json anchor_of(const Json& schema)
{
    const auto canonical = jcs_canonicalize(schema.dump());
    if (!canonical)
        return Json{{"error", canonical.error().code},
                    {"status", std::string(classify_error_code(canonical.error().code).nps_status)}};
    return Json{{"canonical_jcs", *canonical}, {"anchor_id", "sha256:" + nps::sha256_hex(*canonical)}};
}

Reasons check_anchor_frame(const Json& frame, const Json& expected)
{
    Reasons reasons = unknown_keys(frame, {"frame", "anchor_id", "schema", "ttl"});
    if (!reasons.empty())
        return reasons;
    const Json computed = anchor_of(frame.value("schema", Json()));
    Json actual;
    if (computed.contains("error")) {
        actual = computed;
    } else if (computed["anchor_id"] != frame.value("anchor_id", Json())) {
        const std::string code = "NCP-ANCHOR-ID-MISMATCH";
        actual = Json{{"error", code}, {"status", std::string(classify_error_code(code).nps_status)}};
    } else {
        actual = Json{{"error", nullptr}, {"status", nullptr}, {"anchor_id", computed["anchor_id"]}};
    }
    return compare_expected(expected, actual);
}

}  // namespace

int main()
{
    return run_vector_file("ncp/anchor_id_vectors.json",
                           [](Report&, const std::string& id, const Json& vector) -> std::optional<Reasons> {
        if (!id.starts_with("ncp.anchor_id."))
            return Reasons{"unknown vector id (this file holds ncp.anchor_id.* vectors)"};
        const Json& input = vector["input"];
        const Json& expected = vector["expected"];
        Reasons reasons = unknown_keys(input, {"schema", "anchor_frame"});
        if (!reasons.empty())
            return reasons;
        if (input.contains("schema"))
            return compare_expected(expected, anchor_of(input["schema"]));
        if (input.contains("anchor_frame"))
            return check_anchor_frame(input["anchor_frame"], expected);
        return Reasons{"input holds neither schema nor anchor_frame"};
    });
}
