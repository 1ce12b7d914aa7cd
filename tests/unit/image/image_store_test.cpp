// SPDX-License-Identifier: Apache-2.0
// ImageStore on hand-made layouts and archives: import rules, refs,
// resolution, pins, rm and gc. (tests/integration/image builds real images
// with umoci and skopeo.)
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <filesystem>

#include "image_fixture.hpp"
#include "nps/image/blob_store.hpp"
#include "nps/image/image_store.hpp"

using namespace nps::image;
using namespace image_test;
namespace fs = std::filesystem;

namespace {

struct StoreFixture {
    nps::test::TempDir dir{"nps-images"};
    nps::FakeClock clock;
    std::string state = dir.path() + "/state";
    std::unique_ptr<ImageStore> store = ImageStore::open({.state_dir = state, .clock = &clock}).value();

    std::vector<ImportedImage> import(const std::string& path, std::optional<std::string> name = std::nullopt,
                                      std::optional<Platform> platform = std::nullopt)
    {
        auto r = store->import({.path = path, .name = std::move(name), .platform = std::move(platform)});
        REQUIRE_MESSAGE(r, (r ? std::string() : r.error().message));
        return *r;
    }
    std::string import_error(const std::string& path, std::optional<std::string> name = std::nullopt)
    {
        auto r = store->import({.path = path, .name = std::move(name)});
        REQUIRE_FALSE(r);
        return r.error().message;
    }
    std::size_t blob_files() const
    {
        std::size_t n = 0;
        for (const auto& e : fs::directory_iterator(state + "/images/blobs/sha256"))
            n += e.path().filename().string().size() == 64;
        return n;
    }
    std::vector<std::string> names()
    {
        std::vector<std::string> out;
        const auto images = store->list();
        for (const auto& i : *images)
            out.push_back(i.name);
        return out;
    }
    // A fake unpacked layer directory, as the unpacker would leave it.
    std::string make_layer_dir(const std::string& diff_id, std::size_t bytes = 10000)
    {
        const std::string path = store->layout().layer_dir(diff_id);
        write_text(path + "/usr/data", std::string(bytes, 'u'));
        return path;
    }
};

// A docker-archive directory: manifest.json, <hex>.json config, <id>/layer.tar.
std::string docker_archive_dir(const std::string& dir, const std::vector<std::string>& layers, const Json& repo_tags)
{
    std::vector<std::string> diff_ids;
    Json layer_paths = Json::array();
    int i = 0;
    for (const auto& layer : layers) {
        diff_ids.push_back(nps::image::digest_of(layer));
        const std::string path = "layer" + std::to_string(i++) + "/layer.tar";
        write_text(dir + "/" + path, layer);
        layer_paths.push_back(path);
    }
    const std::string config = config_json("amd64", diff_ids);
    const std::string config_name = std::string(nps::image::digest_hex(nps::image::digest_of(config))) + ".json";
    write_text(dir + "/" + config_name, config);
    write_text(dir + "/manifest.json",
               Json::array({{{"Config", config_name}, {"RepoTags", repo_tags}, {"Layers", layer_paths}}}).dump());
    return config_name;
}

}  // namespace

TEST_CASE_FIXTURE(StoreFixture, "an OCI layout imports under --name and resolves with its config")
{
    Layout layout(dir.path() + "/oci");
    layout.single("latest");
    const auto imported = import(layout.dir(), "app:1");
    REQUIRE(imported.size() == 1);
    CHECK(imported[0].name == "app:1");
    CHECK(imported[0].platform.to_string() == "linux/amd64");
    CHECK_FALSE(imported[0].replaced);
    CHECK(blob_files() == 4);  // manifest, config, two layers

    auto image = store->resolve("app:1");
    REQUIRE(image);
    CHECK(image->name == "app:1");
    REQUIRE(image->layers.size() == 2);
    CHECK(image->layers[0].digest == digest_of("layer one"));
    CHECK(image->layers[0].diff_id == digest_of("layer one"));
    CHECK(image->layers[0].media_type == media_type::kOciLayerTar);
    CHECK(image->config.entrypoint == std::vector<std::string>{"/bin/sh"});
    CHECK(image->config.working_dir == "/srv");
    // By digest and by a prefix of 12 hex digits too.
    CHECK(store->resolve(image->manifest_digest)->manifest_digest == image->manifest_digest);
    CHECK(store->resolve(std::string(digest_hex(image->manifest_digest)).substr(0, 12)));
    // The unpack step's verified access to a layer.
    auto blob = store->open_blob(image->layers[1].digest);
    REQUIRE(blob);
    CHECK(blob->size == std::string("layer two").size());
    CHECK(read_text(blob->path) == "layer two");
    write_text(blob->path, "layer 2wo");
    auto damaged = store->open_blob(image->layers[1].digest);
    REQUIRE_FALSE(damaged);
    CHECK(damaged.error().message.find("Blob " + image->layers[1].digest + " in the image store is corrupt") == 0);
    CHECK_FALSE(store->resolve("app:2"));
    CHECK_FALSE(store->resolve("sha256:" + std::string(64, '0')));
}

TEST_CASE_FIXTURE(StoreFixture, "naming rules: full annotations name the image, bare tags need --name")
{
    Layout tagged(dir.path() + "/tagged");
    tagged.single("latest");
    CHECK(import_error(tagged.dir()).find("names its image only with the tag 'latest'") != std::string::npos);

    Layout unnamed(dir.path() + "/unnamed");
    unnamed.single("");
    CHECK(import_error(unnamed.dir()).find("does not name its image") != std::string::npos);

    Layout named(dir.path() + "/named");
    named.single("registry.local/team/app:2.0");
    CHECK(import(named.dir())[0].name == "registry.local/team/app:2.0");

    Layout bad(dir.path() + "/bad");
    bad.single("Bad:Name");
    CHECK(import_error(bad.dir()).find("Invalid image name 'Bad:Name'") != std::string::npos);
    CHECK(import_error(named.dir(), "UPPER").find("Invalid image name 'UPPER'") != std::string::npos);
}

TEST_CASE_FIXTURE(StoreFixture, "a layout with several names imports them all, or the one --name selects")
{
    Layout layout(dir.path() + "/multi");
    Json a = layout.add_image("amd64", {"a1"});
    a["annotations"] = {{"org.opencontainers.image.ref.name", "1.0"}};
    Json b = layout.add_image("amd64", {"b1"});
    b["annotations"] = {{"org.opencontainers.image.ref.name", "2.0"}};
    layout.write_index(Json::array({a, b}));
    CHECK(import_error(layout.dir()).find("only with the tag '1.0'") != std::string::npos);
    CHECK(import_error(layout.dir(), "app:3.0").find("several images (1.0, 2.0)") != std::string::npos);
    const auto imported = import(layout.dir(), "app:2.0");
    REQUIRE(imported.size() == 1);
    CHECK(imported[0].manifest_digest == b["digest"]);

    Layout full(dir.path() + "/full");
    Json x = full.add_image("amd64", {"x"});
    x["annotations"] = {{"io.containerd.image.name", "docker.io/library/x:1"},
                        {"org.opencontainers.image.ref.name", "1"}};
    Json y = full.add_image("amd64", {"y"});
    y["annotations"] = {{"org.opencontainers.image.ref.name", "y:2"}};
    full.write_index(Json::array({x, y}));
    CHECK(import(full.dir()).size() == 2);
    // containerd's full name of a Docker Hub image is kept in Docker's short form.
    CHECK(names() == std::vector<std::string>{"app:2.0", "x:1", "y:2"});
}

TEST_CASE_FIXTURE(StoreFixture, "a multi-platform index gives the host's manifest, or --platform's")
{
    Layout layout(dir.path() + "/multiarch");
    Json arm64 = layout.add_image("arm64", {"arm64 layer"}, "v8");
    arm64["platform"] = {{"os", "linux"}, {"architecture", "arm64"}, {"variant", "v8"}};
    Json amd64 = layout.add_image("amd64", {"amd64 layer"});
    amd64["platform"] = {{"os", "linux"}, {"architecture", "amd64"}};
    const std::string index = Json{{"schemaVersion", 2}, {"mediaType", media_type::kOciIndex},
                                   {"manifests", {arm64, amd64}}}.dump();
    Json index_descriptor = descriptor(media_type::kOciIndex, index);
    layout.add_blob(index);
    index_descriptor["annotations"] = {{"org.opencontainers.image.ref.name", "multi:1"}};
    layout.write_index(Json::array({index_descriptor}));

    const auto imported = import(layout.dir());
    REQUIRE(imported.size() == 1);
#if defined(__x86_64__)
    CHECK(imported[0].manifest_digest == amd64["digest"]);
    CHECK(store->resolve("multi:1")->layers[0].digest == digest_of("amd64 layer"));
#endif
    const auto arm = import(layout.dir(), "multi:arm", Platform{"linux", "arm64", ""});
    CHECK(arm[0].manifest_digest == arm64["digest"]);
    CHECK(arm[0].platform.to_string() == "linux/arm64/v8");
    CHECK_FALSE(fs::exists(state + "/images/blobs/sha256/" + std::string(digest_hex(digest_of("nothing")))));

    auto none = store->import({.path = layout.dir(), .platform = Platform{"linux", "s390x", ""}});
    REQUIRE_FALSE(none);
    CHECK(none.error().message.find("has no image for linux/s390x under 'multi:1' (it has: linux/arm64/v8, "
                                    "linux/amd64)") != std::string::npos);
}

TEST_CASE_FIXTURE(StoreFixture, "an image for another platform is refused")
{
    Layout layout(dir.path() + "/arm");
    Json d = layout.add_image("arm64", {"l"});
    d["annotations"] = {{"org.opencontainers.image.ref.name", "armonly:1"}};
    layout.write_index(Json::array({d}));
    CHECK(import(layout.dir(), std::nullopt, Platform{"linux", "arm64", "v8"}).size() == 1);
#if defined(__x86_64__)
    CHECK(import_error(layout.dir()).find("has no image for linux/amd64 under 'armonly:1' (it has: linux/arm64)") !=
          std::string::npos);
    // The index claims amd64, the config says arm64: the config wins.
    d["platform"] = {{"os", "linux"}, {"architecture", "amd64"}};
    layout.write_index(Json::array({d}));
    CHECK(import_error(layout.dir()).find("is for linux/arm64, not linux/amd64") != std::string::npos);
#endif
}

TEST_CASE_FIXTURE(StoreFixture, "a tampered blob in the source is refused naming its digest; nothing is recorded")
{
    Layout layout(dir.path() + "/tampered");
    layout.single("t:1");
    const std::string layer = digest_of("layer two");
    write_text(layout.blob_path(layer), "layer 2wo");  // same size, other bytes
    const std::string message = import_error(layout.dir());
    CHECK(message.find("Blob " + layer) == 0);
    CHECK(message.find("is corrupt: its content hashes to " + digest_of("layer 2wo")) != std::string::npos);
    CHECK(store->list()->empty());

    // A tampered manifest or config is caught before any layer is copied.
    Layout meta(dir.path() + "/meta");
    meta.single("m:1");
    const Json index = Json::parse(read_text(meta.dir() + "/index.json"));
    const std::string manifest_digest = index["manifests"][0]["digest"];
    std::string text = read_text(meta.blob_path(manifest_digest));
    text.back() = ' ';
    write_text(meta.blob_path(manifest_digest), text);
    CHECK(import_error(meta.dir()).find("Blob " + manifest_digest) == 0);
}

TEST_CASE_FIXTURE(StoreFixture, "a layout symlink out of the directory is refused")
{
    Layout layout(dir.path() + "/escape");
    layout.single("e:1");
    const std::string layer = digest_of("layer one");
    write_text(dir.path() + "/outside", "layer one");
    fs::remove(layout.blob_path(layer));
    fs::create_symlink(dir.path() + "/outside", layout.blob_path(layer));
    CHECK(import_error(layout.dir()).find("leads outside the image directory") != std::string::npos);
}

TEST_CASE_FIXTURE(StoreFixture, "an oci-archive tar imports like its directory")
{
    Layout layout(dir.path() + "/layout");
    layout.single("archived:1");
    make_tar(layout.dir(), dir.path() + "/image.tar");
    const auto imported = import(dir.path() + "/image.tar");
    REQUIRE(imported.size() == 1);
    CHECK(imported[0].name == "archived:1");
    CHECK(store->resolve("archived:1")->layers.size() == 2);

    write_text(dir.path() + "/junk.tar", "this is not a tar archive at all, just text that goes on and on");
    CHECK(import_error(dir.path() + "/junk.tar").find("is neither an image directory nor a tar archive") !=
          std::string::npos);
    CHECK(import_error(dir.path() + "/missing.tar").find("Failed to import") == 0);
}

TEST_CASE_FIXTURE(StoreFixture, "a docker-archive gets an OCI manifest; its uncompressed layers are checked against diff_ids")
{
    const std::string archive_dir = dir.path() + "/docker";
    docker_archive_dir(archive_dir, {"base layer", "top layer"}, {"busybox:da", "busybox:latest"});
    // docker save links duplicate layers: layer1 is a link to layer0's file.
    make_tar(archive_dir, dir.path() + "/docker.tar");
    const auto imported = import(dir.path() + "/docker.tar");
    REQUIRE(imported.size() == 2);
    CHECK(imported[0].name == "busybox:da");
    CHECK(imported[1].name == "busybox:latest");
    CHECK(imported[0].manifest_digest == imported[1].manifest_digest);
    auto image = store->resolve("busybox:da");
    REQUIRE(image);
    REQUIRE(image->layers.size() == 2);
    CHECK(image->layers[1].digest == digest_of("top layer"));
    CHECK(image->layers[1].diff_id == digest_of("top layer"));
    CHECK(image->layers[1].media_type == media_type::kOciLayerTar);
    CHECK(image->config.cmd == std::vector<std::string>{"-c", "echo hi"});

    // Tampered layer: refused by the diff_id it must hash to.
    const std::string other = dir.path() + "/docker-other";
    docker_archive_dir(other, {"other base", "other top"}, {"other:1"});
    write_text(other + "/layer1/layer.tar", "other t0p");
    const std::string message = import_error(other);
    CHECK(message.find("Blob " + digest_of("other top")) == 0);
    CHECK(message.find("is corrupt: its content hashes to " + digest_of("other t0p")) != std::string::npos);
    CHECK_FALSE(store->resolve("other:1"));

    // Tampered config: its file name is its digest.
    const std::string config_name = docker_archive_dir(dir.path() + "/docker2", {"x"}, nullptr);
    write_text(dir.path() + "/docker2/" + config_name, read_text(dir.path() + "/docker2/" + config_name) + " ");
    CHECK(import_error(dir.path() + "/docker2", "x:1").find("is corrupt: its content hashes to") != std::string::npos);
}

TEST_CASE_FIXTURE(StoreFixture, "docker-archive links and compressed layers")
{
    const std::string d = dir.path() + "/links";
    docker_archive_dir(d, {"same", "same"}, {"dup:1"});
    fs::remove(d + "/layer1/layer.tar");
    fs::create_symlink("../layer0/layer.tar", d + "/layer1/layer.tar");
    make_tar(d, dir.path() + "/links.tar");
    auto image_list = import(dir.path() + "/links.tar");
    REQUIRE(image_list.size() == 1);
    auto image = store->resolve("dup:1");
    REQUIRE(image);
    CHECK(image->layers[0].digest == image->layers[1].digest);

    // A gzip-compressed layer keeps its bytes and gets the gzip type; its
    // diff_id is checked by the unpacker, not here.
    const std::string g = dir.path() + "/gz";
    docker_archive_dir(g, {"plain"}, {"gz:1"});
    const std::string gz_bytes = std::string("\x1f\x8b\x08\x00", 4) + "not really deflate";
    write_text(g + "/layer0/layer.tar", gz_bytes);
    import(g);
    auto gz = store->resolve("gz:1");
    REQUIRE(gz);
    CHECK(gz->layers[0].media_type == media_type::kOciLayerGzip);
    CHECK(gz->layers[0].digest == digest_of(gz_bytes));
    CHECK(gz->layers[0].diff_id == digest_of("plain"));

    const std::string unnamed = dir.path() + "/unnamed";
    docker_archive_dir(unnamed, {"u"}, nullptr);
    CHECK(import_error(unnamed).find("does not name its image (no RepoTags)") != std::string::npos);
    CHECK(import_error(dir.path() + "/state").find("neither an OCI image layout") != std::string::npos);
}

TEST_CASE_FIXTURE(StoreFixture, "re-importing dedupes blobs, moves names and repairs a damaged store blob")
{
    Layout v1(dir.path() + "/v1");
    v1.single("app:1", {"shared base", "v1 top"});
    Layout v2(dir.path() + "/v2");
    v2.single("app:1", {"shared base", "v2 top"});
    const auto first = import(v1.dir());
    CHECK(blob_files() == 4);
    const auto second = import(v2.dir());
    CHECK(blob_files() == 7);  // the shared base is stored once
    REQUIRE(second[0].replaced);
    CHECK(*second[0].replaced == first[0].manifest_digest);

    // Damage a stored blob: the next import of an image using it replaces it.
    const std::string base = digest_of("shared base");
    BlobStore blobs = BlobStore::open(store->layout().blobs_dir()).value();
    write_text(blobs.path(base), "damaged!!!!");
    CHECK_FALSE(blobs.verify(base));
    import(v2.dir());
    CHECK(blobs.verify(base));
}

TEST_CASE_FIXTURE(StoreFixture, "rm removes a name and exactly the content no one else uses")
{
    Layout a(dir.path() + "/a");
    a.single("a:1", {"shared base", "a top"});
    Layout b(dir.path() + "/b");
    b.single("b:1", {"shared base", "b top"});
    import(a.dir());
    import(b.dir());
    import(a.dir(), "a:alias");
    make_layer_dir(digest_of("shared base"));
    const std::string a_top_dir = make_layer_dir(digest_of("a top"));
    CHECK(blob_files() == 7);

    auto r = store->remove({"a:1"});
    REQUIRE(r);
    CHECK(r->untagged == std::vector<std::string>{"a:1"});
    CHECK(r->removed_manifests.empty());  // a:alias still names it
    CHECK(blob_files() == 7);

    r = store->remove({"a:alias"});
    REQUIRE(r);
    CHECK(r->removed_manifests.size() == 1);
    CHECK(r->removed_blobs.size() == 3);  // manifest, config, "a top"; the shared base stays
    CHECK(r->removed_layers == std::vector<std::string>{digest_of("a top")});
    CHECK_FALSE(fs::exists(a_top_dir));
    CHECK(fs::exists(store->layout().layer_dir(digest_of("shared base"))));
    CHECK(blob_files() == 4);
    CHECK(store->resolve("b:1"));
    CHECK(fs::is_empty(store->layout().trash_dir()));

    auto unknown = store->remove({"b:1", "nope:1"});
    REQUIRE_FALSE(unknown);
    CHECK(unknown.error().message.find("No image named 'nope:1'") != std::string::npos);
    CHECK(store->resolve("b:1"));  // nothing was removed

    // By digest: all its names go.
    const std::string digest = store->resolve("b:1")->manifest_digest;
    import(b.dir(), "b:2");
    r = store->remove({digest});
    REQUIRE(r);
    CHECK(r->untagged == std::vector<std::string>{"b:1", "b:2"});
    CHECK(blob_files() == 0);
    CHECK(store->list()->empty());
}

TEST_CASE_FIXTURE(StoreFixture, "reference counts count names through manifests, and pins")
{
    Layout a(dir.path() + "/a");
    a.single("a:1", {"shared", "a"});
    Layout b(dir.path() + "/b");
    b.single("b:1", {"shared", "b"});
    import(a.dir());
    import(a.dir(), "a:2");
    import(b.dir());
    auto pin = store->pin("b:1", "test");
    REQUIRE(pin);
    std::map<std::string, BlobUsage> by_digest;
    const auto usage = store->blobs();
    REQUIRE(usage);
    for (const auto& u : *usage)
        by_digest[u.digest] = u;
    CHECK(by_digest.at(digest_of("shared")).refs == 3);
    CHECK(by_digest.at(digest_of("shared")).pins == 1);
    CHECK(by_digest.at(digest_of("a")).refs == 2);
    CHECK(by_digest.at(digest_of("a")).pins == 0);
    CHECK(by_digest.at(digest_of("b")).kind == "layer");
    CHECK(by_digest.at(digest_of("b")).present);
}

TEST_CASE_FIXTURE(StoreFixture, "a pinned image survives rm and gc until the pin is dropped")
{
    Layout layout(dir.path() + "/p");
    layout.single("p:1", {"pinned base"});
    import(layout.dir());
    const std::string layer_dir = make_layer_dir(digest_of("pinned base"));
    clock.advance_ms(61'000);
    auto pinned = store->pin("p:1", "worker w-1");
    REQUIRE(pinned);
    CHECK(pinned->image.layers.size() == 1);
    CHECK(pinned->pin.manifest_digest() == pinned->image.manifest_digest);
    CHECK(read_text(pinned->pin.path()).find("worker w-1") != std::string::npos);
    CHECK(store->list()->at(0).pins == 1);
    CHECK(store->list()->at(0).last_used_at_ms == clock.now_ms());
    {
        // The use time has a minute's resolution: a pin within it writes nothing.
        const std::int64_t used = clock.now_ms();
        clock.advance_ms(30'000);
        CHECK(store->pin("p:1", "worker w-2"));
        CHECK(store->list()->at(0).last_used_at_ms == used);
        clock.advance_ms(30'000);
        CHECK(store->pin("p:1", "worker w-3"));
        CHECK(store->list()->at(0).last_used_at_ms == clock.now_ms());
    }

    auto r = store->remove({"p:1"});
    REQUIRE(r);
    CHECK(r->removed_manifests.empty());
    CHECK(r->kept_pinned == std::vector<std::string>{pinned->image.manifest_digest});
    auto g = store->gc({});
    REQUIRE(g);
    CHECK(g->removed_manifests.empty());
    CHECK(g->kept_pinned.size() == 1);
    CHECK(fs::exists(layer_dir));
    CHECK(blob_files() == 3);
    CHECK(store->resolve(pinned->image.manifest_digest));  // still resolvable by digest
    REQUIRE(store->list()->size() == 1);
    CHECK(store->list()->at(0).name.empty());

    { auto drop = std::move(*pinned); }
    g = store->gc({});
    REQUIRE(g);
    CHECK(g->removed_manifests.size() == 1);
    CHECK(g->removed_layers.size() == 1);
    CHECK_FALSE(fs::exists(layer_dir));
    CHECK(blob_files() == 0);
}

TEST_CASE_FIXTURE(StoreFixture, "pins of dead holders are stale; unknown names cannot be pinned")
{
    Layout layout(dir.path() + "/s");
    layout.single("s:1");
    import(layout.dir());
    CHECK_FALSE(store->pin("nope:1", "x"));
    // A pin file nobody holds a lock on: what a crashed runner leaves.
    const std::string digest = store->resolve("s:1")->manifest_digest;
    write_text(store->layout().pins_dir() + "/dead.pin", digest + "\nold runner\n");
    CHECK(store->list()->at(0).pins == 0);
    store->remove({"s:1"}).value();
    CHECK(store->list()->empty());
    CHECK_FALSE(fs::exists(store->layout().pins_dir() + "/dead.pin"));
}

TEST_CASE_FIXTURE(StoreFixture, "gc removes orphans: unrecorded blobs, dead writers' temp files, stray layer dirs")
{
    Layout layout(dir.path() + "/g");
    layout.single("g:1", {"kept"});
    import(layout.dir());
    BlobStore blobs = BlobStore::open(store->layout().blobs_dir()).value();
    const std::string orphan = *blobs.put("written by an import that died", {});
    write_text(store->layout().blobs_dir() + "/.tmp-abcdef", "half");
    const std::string stray = make_layer_dir(digest_of("nobody's layer"));
    const std::string kept = make_layer_dir(digest_of("kept"));
    write_text(store->layout().layers_dir() + "/.unpacking-123/x", "not ours");

    auto g = store->gc({});
    REQUIRE(g);
    CHECK(g->removed_blobs == std::vector<std::string>{orphan});
    CHECK(g->temp_files == 1);
    CHECK(g->removed_layers == std::vector<std::string>{digest_of("nobody's layer")});
    CHECK(g->freed_bytes > 0);
    CHECK(g->usage_bytes > 0);
    CHECK_FALSE(g->over_threshold);
    CHECK_FALSE(fs::exists(stray));
    CHECK(fs::exists(kept));
    CHECK(fs::exists(store->layout().layers_dir() + "/.unpacking-123/x"));
    CHECK(store->resolve("g:1"));
}

TEST_CASE_FIXTURE(StoreFixture, "over the threshold gc evicts unpacked layers not in use, least recently used first")
{
    Layout old_layout(dir.path() + "/old");
    old_layout.single("old:1", {"old layer"});
    Layout new_layout(dir.path() + "/new");
    new_layout.single("new:1", {"new layer"});
    Layout busy_layout(dir.path() + "/busy");
    busy_layout.single("busy:1", {"busy layer"});
    import(old_layout.dir());
    import(new_layout.dir());
    import(busy_layout.dir());
    const std::string old_dir = make_layer_dir(digest_of("old layer"), 200000);
    const std::string new_dir = make_layer_dir(digest_of("new layer"), 200000);
    const std::string busy_dir = make_layer_dir(digest_of("busy layer"), 200000);
    // (Use times have a minute's resolution.)
    clock.advance_ms(61'000);
    { auto used = store->pin("old:1", "earlier run").value(); }
    clock.advance_ms(61'000);
    { auto used = store->pin("new:1", "later run").value(); }
    auto busy = store->pin("busy:1", "running").value();

    // Room for roughly two of the three layer dirs: the older one goes.
    const std::uint64_t usage = store->gc({}).value().usage_bytes;
    auto g = store->gc({.max_bytes = usage - 100000});
    REQUIRE(g);
    CHECK(g->evicted_layers == std::vector<std::string>{digest_of("old layer")});
    CHECK_FALSE(g->over_threshold);
    CHECK_FALSE(fs::exists(old_dir));
    CHECK(fs::exists(new_dir));
    CHECK(fs::exists(busy_dir));
    CHECK(blob_files() == 9);  // blobs are never evicted

    // An impossible threshold: everything not in use goes, the rest stays and gc says so.
    g = store->gc({.max_bytes = 1});
    REQUIRE(g);
    CHECK(g->evicted_layers == std::vector<std::string>{digest_of("new layer")});
    CHECK(g->over_threshold);
    CHECK(fs::exists(busy_dir));
    CHECK(store->resolve("old:1"));

    // The filesystem threshold: 1% is always exceeded here.
    make_layer_dir(digest_of("new layer"));
    g = store->gc({.max_disk_percent = 1});
    REQUIRE(g);
    CHECK(g->evicted_layers.size() == 1);
    CHECK(g->over_threshold);
}

TEST_CASE_FIXTURE(StoreFixture, "the store's tables come from schema migration 2 of runner.db")
{
    CHECK(fs::exists(state + "/runner.db"));
    auto again = ImageStore::open({.state_dir = state, .clock = &clock});
    REQUIRE(again);
    Layout layout(dir.path() + "/x");
    layout.single("x:1");
    REQUIRE((*again)->import({.path = layout.dir()}));
    CHECK(store->resolve("x:1"));  // another connection sees it
}
