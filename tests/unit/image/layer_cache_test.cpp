// SPDX-License-Identifier: Apache-2.0
// LayerCache: unpack once, publish atomically, serialise concurrent callers
// (threads and processes), leave nothing behind on failure.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "image/layer_fixture.hpp"
#include "nps/image/layer_cache.hpp"
#include "temp_dir.hpp"

using namespace nps::image;
using nps::test::CraftedLayer;
using nps::test::make_layer;
using nps::test::slurp;
using nps::test::TempDir;

namespace {

LayerCache open_cache(const std::string& dir)
{
    auto cache = LayerCache::open({.layers_dir = dir, .durability = Durability::none});
    REQUIRE_MESSAGE(cache, cache.error().describe());
    return std::move(cache).value();
}

LayerSource source_of(const CraftedLayer& layer)
{
    return {layer.blob_path, layer.media_type, layer.diff_id};
}

std::vector<std::string> names_in(const std::string& dir)
{
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir))
        names.push_back(e.path().filename().string());
    return names;
}

}  // namespace

TEST_CASE("a layer is unpacked once and then found")
{
    TempDir tmp("nps-cache");
    CraftedLayer layer = make_layer({.scenario = "lower", .compression = "gzip"}, tmp / "blob");
    LayerCache cache = open_cache(tmp / "images/layers");
    CHECK((std::filesystem::status(tmp / "images/layers").permissions() & std::filesystem::perms::all) ==
          std::filesystem::perms::owner_all);
    CHECK_FALSE(cache.contains(layer.diff_id));

    auto first = cache.ensure(source_of(layer));
    REQUIRE_MESSAGE(first, first.error().describe());
    CHECK(*first == tmp / "images/layers/" + layer.diff_id.substr(7));
    CHECK(*cache.path_of(layer.diff_id) == *first);
    CHECK(cache.contains(layer.diff_id));
    CHECK(slurp(*first + "/a/keep") == "keep\n");
    struct stat before {};
    REQUIRE(::stat(first->c_str(), &before) == 0);

    // Found, not unpacked again: the blob is not even read.
    std::filesystem::remove(layer.blob_path);
    auto second = cache.ensure(source_of(layer));
    REQUIRE(second);
    struct stat after {};
    REQUIRE(::stat(second->c_str(), &after) == 0);
    CHECK(after.st_ino == before.st_ino);
    CHECK(names_in(tmp / "images/layers") == std::vector<std::string>{layer.diff_id.substr(7)});
}

TEST_CASE("a layer given without its blob is found in the cache, or refused saying it left")
{
    TempDir tmp("nps-cache");
    CraftedLayer layer = make_layer({.scenario = "lower", .compression = "gzip"}, tmp / "blob");
    LayerCache cache = open_cache(tmp / "images/layers");
    const LayerSource without_blob{.blob_path = "", .media_type = layer.media_type, .diff_id = layer.diff_id};
    auto missing = cache.ensure(without_blob);
    REQUIRE_FALSE(missing);
    CHECK_MESSAGE(missing.error().message.find("left the layer cache") != std::string::npos,
                  missing.error().message);
    CHECK_FALSE(cache.contains(layer.diff_id));

    REQUIRE(cache.ensure(source_of(layer)));
    auto found = cache.ensure(without_blob);
    REQUIRE_MESSAGE(found, found.error().describe());
    CHECK(*found == *cache.path_of(layer.diff_id));
}

TEST_CASE("a failed unpack publishes nothing")
{
    TempDir tmp("nps-cache");
    CraftedLayer layer = make_layer({.scenario = "lower"}, tmp / "blob");
    LayerCache cache = open_cache(tmp / "layers");
    LayerSource wrong = source_of(layer);
    wrong.diff_id = "sha256:" + std::string(64, 'e');
    auto result = cache.ensure(wrong);
    REQUIRE_FALSE(result);
    CHECK(result.error().message.find("does not match its diff_id") != std::string::npos);
    CHECK(names_in(tmp / "layers").empty());

    auto bad = cache.ensure({layer.blob_path, layer.media_type, "sha256:../../etc"});
    REQUIRE_FALSE(bad);
    CHECK(bad.error().message.find("Invalid layer diff_id") == 0);
}

TEST_CASE("leftovers of a crashed unpack are cleared on the next unpack of that layer")
{
    TempDir tmp("nps-cache");
    CraftedLayer layer = make_layer({.scenario = "lower"}, tmp / "blob");
    LayerCache cache = open_cache(tmp / "layers");
    std::string hex = layer.diff_id.substr(7);
    std::filesystem::create_directories(tmp / "layers/.tmp-" + hex + "-deadbeef/half");
    std::filesystem::create_directories(tmp / "layers/.tmp-" + std::string(64, 'f') + "-other");
    REQUIRE(cache.ensure(source_of(layer)));
    auto names = names_in(tmp / "layers");
    std::sort(names.begin(), names.end());
    // The other layer's temporary may belong to a live unpack: untouched.
    CHECK(names == std::vector<std::string>{".tmp-" + std::string(64, 'f') + "-other", hex});
}

TEST_CASE("remove() takes a layer out of the cache")
{
    TempDir tmp("nps-cache");
    CraftedLayer layer = make_layer({.scenario = "lower"}, tmp / "blob");
    LayerCache cache = open_cache(tmp / "layers");
    REQUIRE(cache.ensure(source_of(layer)));
    REQUIRE(cache.remove(layer.diff_id));
    CHECK_FALSE(cache.contains(layer.diff_id));
    CHECK(names_in(tmp / "layers").empty());
    CHECK(cache.remove(layer.diff_id));  // absent: success
}

TEST_CASE("concurrent threads and processes unpack a layer once")
{
    TempDir tmp("nps-cache");
    CraftedLayer layer = make_layer({.scenario = "normal", .compression = "gzip"}, tmp / "blob");
    std::string layers = tmp / "layers";

    constexpr int kProcesses = 3;
    constexpr int kThreads = 3;
    std::vector<pid_t> children;
    for (int p = 0; p < kProcesses; ++p) {
        pid_t pid = ::fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            // Each child process runs its own threads, each with its own cache.
            std::vector<std::thread> threads;
            std::atomic<int> failures{0};
            for (int t = 0; t < kThreads; ++t) {
                threads.emplace_back([&] {
                    auto cache = LayerCache::open({.layers_dir = layers, .durability = Durability::none});
                    if (!cache || !cache->ensure(source_of(layer)))
                        ++failures;
                });
            }
            for (auto& t : threads)
                t.join();
            ::_exit(failures == 0 ? 0 : 1);
        }
        children.push_back(pid);
    }
    for (pid_t pid : children) {
        int status = 0;
        REQUIRE(::waitpid(pid, &status, 0) == pid);
        CHECK(WIFEXITED(status));
        CHECK(WEXITSTATUS(status) == 0);
    }
    // One layer directory; no temporaries, no lock files.
    CHECK(names_in(layers) == std::vector<std::string>{layer.diff_id.substr(7)});
    CHECK(slurp(layers + "/" + layer.diff_id.substr(7) + "/etc/hello.txt") == "hello layer\n");
}
