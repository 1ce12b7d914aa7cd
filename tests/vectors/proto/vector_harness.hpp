// SPDX-License-Identifier: Apache-2.0
// Shared driver for the proto conformance-vector programs: loads a file from
// $NPS_VECTORS_DIR, compares `expected` field by field, prints one line per
// vector and turns the outcome into an exit code (0 pass, 1 fail, 77 skip).
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace nps::test::vectors {

using Json = nlohmann::ordered_json;

inline constexpr int kExitSkip = 77;

// The parsed vector file, or nullopt after printing why to stderr (the
// directory or file is missing, or it is not JSON with a `vectors` array).
// A missing directory or file is a skip; unreadable content is reported
// through `unusable` so the caller fails instead of skipping.
std::optional<Json> load_vector_file(std::string_view relative_path, bool& unusable);

// Each key of `expected` must be present in `actual` with an equal value;
// returns one line per difference (empty when they agree).
std::vector<std::string> compare_expected(const Json& expected, const Json& actual);

// Fails unless every key of `object` is in `known` (a vector whose input
// carries a field we do not understand must not pass silently).
std::vector<std::string> unknown_keys(const Json& object, const std::set<std::string>& known);

class Report {
public:
    explicit Report(std::string file) : file_(std::move(file)) {}

    void pass(std::string_view id);
    void fail(std::string_view id, std::string_view why);
    void fail(std::string_view id, const std::vector<std::string>& reasons);
    // A vector whose category another area's suite covers.
    void owned_elsewhere(std::string_view id, std::string_view owner);

    // Prints the summary; 0 when nothing failed and at least one vector ran.
    int finish() const;

private:
    std::string file_;
    int passed_ = 0;
    int failed_ = 0;
    int elsewhere_ = 0;
};

// Runs `check` on every vector of `file`: it returns the reasons a vector
// failed (empty = pass), or nullopt after reporting the vector itself through
// `report` (owned_elsewhere). Vectors without a string `id`, `input` or
// `expected` fail.
using VectorCheck = std::function<std::optional<std::vector<std::string>>(Report& report, const std::string& id,
                                                                          const Json& vector)>;
int run_vector_file(std::string_view relative_path, const VectorCheck& check);

}  // namespace nps::test::vectors
