// SPDX-License-Identifier: Apache-2.0
#include "vector_harness.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

namespace nps::test::vectors {

std::optional<Json> load_vector_file(std::string_view relative_path, bool& unusable)
{
    unusable = false;
    const char* dir = std::getenv("NPS_VECTORS_DIR");
    if (dir == nullptr || *dir == '\0') {
        std::cerr << "SKIP: NPS_VECTORS_DIR is not set\n";
        return std::nullopt;
    }
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec)) {
        std::cerr << "SKIP: vectors directory '" << dir << "' does not exist\n";
        return std::nullopt;
    }
    const std::filesystem::path path = std::filesystem::path(dir) / relative_path;
    std::ifstream in(path);
    if (!in) {
        std::cerr << "SKIP: vector file '" << path.string() << "' is missing\n";
        return std::nullopt;
    }
    Json file = Json::parse(in, nullptr, false);
    if (file.is_discarded() || !file.is_object() || !file.contains("vectors") || !file["vectors"].is_array() ||
        file["vectors"].empty()) {
        std::cerr << "FAIL: '" << path.string() << "' is not a vector file with a non-empty `vectors` array\n";
        unusable = true;
        return std::nullopt;
    }
    return file;
}

std::vector<std::string> compare_expected(const Json& expected, const Json& actual)
{
    std::vector<std::string> diffs;
    if (!expected.is_object()) {
        diffs.push_back("`expected` is not an object");
        return diffs;
    }
    for (const auto& [key, want] : expected.items()) {
        if (!actual.contains(key))
            diffs.push_back("expected." + key + " = " + want.dump() + ", but the check produced no " + key +
                            " (actual: " + actual.dump() + ")");
        else if (actual[key] != want)
            diffs.push_back("expected." + key + " = " + want.dump() + ", got " + actual[key].dump());
    }
    return diffs;
}

std::vector<std::string> unknown_keys(const Json& object, const std::set<std::string>& known)
{
    std::vector<std::string> out;
    if (!object.is_object()) {
        out.push_back("input is not an object");
        return out;
    }
    for (const auto& [key, value] : object.items())
        if (!known.contains(key))
            out.push_back("input has a field this suite does not understand: " + key);
    return out;
}

void Report::pass(std::string_view id)
{
    ++passed_;
    std::cout << "PASS " << id << '\n';
}

void Report::fail(std::string_view id, std::string_view why)
{
    ++failed_;
    std::cout << "FAIL " << id << ": " << why << '\n';
}

void Report::fail(std::string_view id, const std::vector<std::string>& reasons)
{
    ++failed_;
    std::cout << "FAIL " << id << '\n';
    for (const auto& reason : reasons)
        std::cout << "    " << reason << '\n';
}

void Report::owned_elsewhere(std::string_view id, std::string_view owner)
{
    ++elsewhere_;
    std::cout << "OWNED-ELSEWHERE " << id << " (" << owner << ")\n";
}

int Report::finish() const
{
    std::cout << file_ << ": " << passed_ << " passed, " << failed_ << " failed, " << elsewhere_
              << " covered by other suites\n";
    if (failed_ > 0 || passed_ == 0)
        return 1;
    return 0;
}

int run_vector_file(std::string_view relative_path, const VectorCheck& check)
{
    bool unusable = false;
    const auto file = load_vector_file(relative_path, unusable);
    if (!file)
        return unusable ? 1 : kExitSkip;
    Report report{std::string(relative_path)};
    std::size_t index = 0;
    for (const Json& vector : (*file)["vectors"]) {
        const std::string fallback = "vectors[" + std::to_string(index++) + "]";
        if (!vector.is_object() || !vector.contains("id") || !vector["id"].is_string()) {
            report.fail(fallback, "vector has no string id");
            continue;
        }
        const std::string id = vector["id"].get<std::string>();
        if (!vector.contains("input") || !vector.contains("expected")) {
            report.fail(id, "vector has no input or no expected");
            continue;
        }
        auto reasons = check(report, id, vector);
        if (!reasons)
            continue;  // the check reported it (owned elsewhere)
        if (reasons->empty())
            report.pass(id);
        else
            report.fail(id, *reasons);
    }
    return report.finish();
}

}  // namespace nps::test::vectors
