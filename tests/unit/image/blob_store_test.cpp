// SPDX-License-Identifier: Apache-2.0
// The blob store: verified writes, verified reads, no leftovers, races.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <filesystem>
#include <thread>

#include "image_fixture.hpp"
#include "nps/image/blob_store.hpp"
#include "nps/image/sha256_stream.hpp"

using namespace nps::image;
using image_test::read_text;
using image_test::write_text;

namespace {

struct BlobFixture {
    nps::test::TempDir dir{"nps-blobs"};
    BlobStore store = BlobStore::open(dir.path() + "/images/blobs/sha256").value();

    std::size_t entries() const
    {
        std::size_t n = 0;
        for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(store.dir()))
            ++n;
        return n;
    }
};

}  // namespace

TEST_CASE("streaming SHA-256 matches the one-shot digest")
{
    Sha256Stream s;
    s.update("hello ", 6);
    s.update("world", 5);
    CHECK(s.finish_digest() == digest_of("hello world"));
}

TEST_CASE_FIXTURE(BlobFixture, "a blob is written under its digest and verified on read")
{
    const std::string data = "some layer bytes";
    auto digest = store.put(data, {.expected_digest = digest_of(data)});
    REQUIRE(digest);
    CHECK(*digest == digest_of(data));
    CHECK(read_text(store.path(*digest)) == data);
    CHECK(*store.stat(*digest) == data.size());
    CHECK(store.verify(*digest));
    CHECK(*store.read_verified(*digest, 100) == data);
    CHECK_FALSE(store.read_verified(*digest, 3));
    struct stat st{};
    REQUIRE(::stat(store.dir().c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0700);
    CHECK(entries() == 1);  // no temp file left
}

TEST_CASE_FIXTURE(BlobFixture, "without an expected digest the content names the blob")
{
    auto w = store.writer({});
    REQUIRE(w);
    REQUIRE(w->write("abc", 3));
    REQUIRE(w->write("def", 3));
    CHECK(w->bytes_written() == 6);
    auto digest = w->commit();
    REQUIRE(digest);
    CHECK(*digest == digest_of("abcdef"));
}

TEST_CASE_FIXTURE(BlobFixture, "a digest mismatch is refused by name and leaves nothing")
{
    const std::string promised = digest_of("the real thing");
    auto r = store.put("tampered", {.expected_digest = promised, .source = "'x.tar' member blobs/sha256/…"});
    REQUIRE_FALSE(r);
    INFO(r.error().message);
    CHECK(r.error().message.find("Blob " + promised + " from 'x.tar'") == 0);
    CHECK(r.error().message.find("is corrupt: its content hashes to " + digest_of("tampered")) != std::string::npos);
    CHECK(entries() == 0);
    CHECK_FALSE(*store.stat(promised));
}

TEST_CASE_FIXTURE(BlobFixture, "size mismatches and oversized blobs are refused while writing")
{
    auto longer = store.writer({.expected_size = 4});
    REQUIRE(longer);
    auto r = longer->write("12345", 5);
    REQUIRE_FALSE(r);
    CHECK(r.error().message.find("longer than the 4 bytes its descriptor declares") != std::string::npos);
    CHECK_FALSE(longer->commit());

    auto shorter = store.put("123", {.expected_size = 4});
    REQUIRE_FALSE(shorter);
    CHECK(shorter.error().message.find("it has 3 bytes, its descriptor declares 4") != std::string::npos);

    auto capped = store.writer({.max_bytes = 2});
    REQUIRE(capped);
    CHECK_FALSE(capped->write("abc", 3));
    CHECK(entries() == 0);
}

TEST_CASE_FIXTURE(BlobFixture, "an abandoned writer removes its temp file")
{
    {
        auto w = store.writer({});
        REQUIRE(w);
        REQUIRE(w->write("partial", 7));
        CHECK(store.temp_files()->size() == 1);
    }
    CHECK(entries() == 0);
}

TEST_CASE_FIXTURE(BlobFixture, "a blob changed on disk fails verification naming its digest")
{
    const std::string data(100000, 'x');
    const std::string digest = *store.put(data, {});
    std::string changed = data;
    changed[5000] = 'y';
    write_text(store.path(digest), changed);
    auto r = store.open_verified(digest);
    REQUIRE_FALSE(r);
    CHECK(r.error().message.find("Blob " + digest + " in the image store is corrupt: its content hashes to " +
                                 digest_of(changed)) == 0);
    std::filesystem::remove(store.path(digest));
    auto missing = store.verify(digest);
    REQUIRE_FALSE(missing);
    CHECK(missing.error().message.find("is missing from the image store") != std::string::npos);
}

TEST_CASE_FIXTURE(BlobFixture, "open_verified returns the descriptor it hashed, at offset 0")
{
    const std::string digest = *store.put("0123456789", {});
    auto blob = store.open_verified(digest);
    REQUIRE(blob);
    CHECK(blob->size == 10);
    char buf[4] = {};
    REQUIRE(::read(blob->fd.get(), buf, 4) == 4);
    CHECK(std::string(buf, 4) == "0123");
}

TEST_CASE_FIXTURE(BlobFixture, "writers of the same blob race safely")
{
    const std::string data(1 << 20, 'z');
    const std::string digest = digest_of(data);
    std::vector<std::thread> threads;
    std::atomic<int> ok{0};
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&] {
            // A store object per thread, as in separate processes.
            auto own = BlobStore::open(store.dir());
            if (own && own->put(data, {.expected_digest = digest}))
                ++ok;
        });
    for (auto& t : threads)
        t.join();
    CHECK(ok == 4);
    CHECK(store.verify(digest));
    CHECK(entries() == 1);
}

TEST_CASE_FIXTURE(BlobFixture, "listing and removal")
{
    const std::string a = *store.put("aaa", {});
    const std::string b = *store.put("bbb", {});
    write_text(store.dir() + "/not-a-blob", "x");
    auto list = store.list();
    REQUIRE(list);
    CHECK(list->size() == 2);
    CHECK(*store.remove(a) > 0);
    CHECK(*store.remove(a) == 0);  // already gone: fine
    CHECK(store.list()->size() == 1);
    CHECK(store.verify(b));
    CHECK_FALSE(store.remove_temp("../x"));
    CHECK_FALSE(store.stat("sha256:nothex"));
}
