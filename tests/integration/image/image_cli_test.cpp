// SPDX-License-Identifier: Apache-2.0
// `nps-runner image import|ls|inspect|rm|gc` on real images from umoci and
// skopeo, against a state directory per test; pins are taken through the
// library from this process (and from a child that is killed), as the
// worker side will.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "nps/base/clock.hpp"
#include "nps/image/image_store.hpp"
#include "nps/spawn/spec_ref.hpp"
#include "nps/store/store.hpp"
#include "runner_process.hpp"
#include "test_images.hpp"

using nps::test::run_command;
using nps::test::TempDir;
using Json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

struct StateFixture {
    TempDir dir{"nps-image-state"};
    std::string state = dir.path() + "/state";
    std::string config = dir.path() + "/config.toml";
    const image_it::TestImages& images = image_it::test_images();

    StateFixture() { nps::test::write_file(config, "[images]\ngc_max_disk_percent = 100\n"); }

    nps::test::CommandResult image(std::vector<std::string> args)
    {
        args.insert(args.begin(), "image");
        args.insert(args.end(), {"--state-dir", state, "--config", config});
        return run_command(args);
    }
    // Runs and requires success; returns stdout.
    std::string ok(std::vector<std::string> args)
    {
        auto r = image(args);
        INFO("stderr: " << r.err);
        REQUIRE(r.exit_status == 0);
        return r.out;
    }
    Json json(std::vector<std::string> args)
    {
        args.push_back("--json");
        return Json::parse(ok(args));
    }
    Json inspect(const std::string& ref) { return Json::parse(ok({"inspect", ref})); }
    std::size_t blob_files() const
    {
        std::size_t n = 0;
        for (const auto& e : fs::directory_iterator(state + "/images/blobs/sha256"))
            n += e.path().filename().string().size() == 64;
        return n;
    }
};

bool contains(const std::string& text, const std::string& part)
{
    return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE_FIXTURE(StateFixture, "each format imports, lists and keeps the image config")
{
    CHECK(contains(ok({"import", images.oci_dir, "--name", "busybox:oci"}),
                   "Imported busybox:oci " + images.manifest_digest + " (linux/amd64"));
    CHECK(contains(ok({"import", images.oci_archive}), "Imported busybox:oa " + images.manifest_digest));
    // A docker-archive's RepoTags name Docker Hub in full; the store keeps Docker's short form.
    CHECK(contains(ok({"import", images.docker_archive}), "Imported busybox:da sha256:"));
    CHECK(contains(ok({"import", images.zstd_dir, "--name", "busybox:zstd"}), "Imported busybox:zstd sha256:"));

    const std::string table = ok({"ls"});
    for (const char* name : {"busybox:oci", "busybox:oa", "busybox:da", "busybox:zstd"})
        CHECK_MESSAGE(contains(table, name), table);
    CHECK_FALSE(contains(table, "docker.io"));
    const Json list = json({"ls"});
    REQUIRE(list.size() == 4);
    for (const auto& entry : list) {
        CHECK(entry["platform"] == "linux/amd64");
        CHECK(entry["layers"] == 1);
        CHECK(entry["pins"] == 0);
    }

    // The image config, as umoci set it, whatever the format. Docker Hub's
    // spellings of a name find the same image.
    for (const char* name : {"busybox:oci", "busybox:oa", "docker.io/library/busybox:da", "library/busybox:da",
                             "busybox:da", "index.docker.io/library/busybox:da", "busybox:zstd"}) {
        const Json c = inspect(name)["config"];
        CHECK(c["entrypoint"] == Json::array({"/bin/sh"}));
        CHECK(c["cmd"] == Json::array({"-c", "echo hello from the image"}));
        CHECK(c["working_dir"] == "/tmp");
        CHECK(c["user"] == "1000:1000");
        CHECK(std::find(c["env"].begin(), c["env"].end(), "GREETING=hello") != c["env"].end());
    }

    // The same layer, in three representations: gzip (OCI), plain tar
    // (docker-archive: its digest is its diff_id) and zstd.
    const Json oci = inspect("busybox:oci");
    CHECK(oci["layers"][0]["media_type"] == "application/vnd.oci.image.layer.v1.tar+gzip");
    CHECK(oci["layers"][0]["digest"] == images.layer_digest);
    const Json docker = inspect("docker.io/library/busybox:da");
    CHECK(docker["layers"][0]["media_type"] == "application/vnd.oci.image.layer.v1.tar");
    CHECK(docker["layers"][0]["digest"] == images.diff_id);
    const Json zstd = inspect("busybox:zstd");
    CHECK(zstd["layers"][0]["media_type"] == "application/vnd.oci.image.layer.v1.tar+zstd");
    for (const Json* image : {&oci, &docker, &zstd})
        CHECK((*image)["layers"][0]["diff_id"] == images.diff_id);
    CHECK(inspect("busybox:oa")["manifest_digest"] == images.manifest_digest);

    // Reference counts: the config is shared by all four names, the gzip layer by two.
    const Json blobs = json({"ls", "--blobs"});
    for (const auto& b : blobs) {
        if (b["digest"] == images.layer_digest)
            CHECK(b["refs"] == 2);
        if (b["kind"] == "config")
            CHECK(b["refs"] == 4);
        CHECK(b["present"] == true);
    }
    CHECK(blob_files() == 7);  // 3 manifests, 1 config, 3 layers
}

TEST_CASE_FIXTURE(StateFixture, "a multi-platform index gives the host's manifest, or --platform's")
{
    const std::string out = ok({"import", images.multiarch_dir});
#if defined(__x86_64__)
    CHECK(contains(out, "Imported busybox:multi " + images.manifest_digest + " (linux/amd64"));
#endif
    CHECK(contains(ok({"import", images.multiarch_dir, "--platform", "linux/arm64", "--name", "busybox:arm64"}),
                   "Imported busybox:arm64 " + images.arm64_manifest_digest + " (linux/arm64/v8"));
    const auto r = image({"import", images.multiarch_dir, "--platform", "linux/riscv64"});
    CHECK(r.exit_status == 1);
    CHECK(contains(r.err, "has no image for linux/riscv64"));
    CHECK(image({"import", images.multiarch_dir, "--platform", "linux"}).exit_status == 2);
}

TEST_CASE_FIXTURE(StateFixture, "tampered blobs are refused with an error naming the digest")
{
    // A flipped byte in the gzip layer of an OCI layout.
    const std::string layout = dir.path() + "/tampered";
    image_it::shell("cp -a " + images.oci_dir + " " + layout);
    const std::string layer = layout + "/blobs/sha256/" + images.layer_digest.substr(7);
    fs::permissions(layer, fs::perms::owner_write, fs::perm_options::add);
    image_it::shell("printf X | dd of=" + layer + " bs=1 seek=4096 conv=notrunc status=none");
    auto r = image({"import", layout, "--name", "bad:1"});
    CHECK(r.exit_status == 1);
    CHECK_MESSAGE(contains(r.err, "Blob " + images.layer_digest), r.err);
    CHECK(contains(r.err, "is corrupt: its content hashes to sha256:"));

    // A docker-archive whose layer.tar changed: it no longer hashes to its diff_id.
    const std::string unpacked = dir.path() + "/docker";
    image_it::shell("mkdir " + unpacked + " && tar -C " + unpacked + " -xf " + images.docker_archive +
                    " && f=$(ls " + unpacked + "/*.tar | head -1) && chmod u+w $f && printf X | dd of=$f bs=1 "
                    "seek=600 conv=notrunc status=none && tar -C " + unpacked + " -cf " + dir.path() +
                    "/docker-bad.tar .");
    r = image({"import", dir.path() + "/docker-bad.tar"});
    CHECK(r.exit_status == 1);
    CHECK_MESSAGE(contains(r.err, "Blob " + images.diff_id), r.err);
    CHECK(contains(r.err, "is corrupt"));

    CHECK(json({"ls"}).empty());
    CHECK(blob_files() == 0);  // nothing half-imported stays
}

TEST_CASE_FIXTURE(StateFixture, "rm and gc remove what is unreferenced and keep what is referenced or pinned")
{
    ok({"import", images.oci_dir, "--name", "busybox:a"});
    ok({"import", images.oci_dir, "--name", "busybox:b"});
    ok({"import", images.zstd_dir, "--name", "busybox:zstd"});
    const std::string diff_hex = images.diff_id.substr(7);
    fs::create_directories(state + "/images/layers/" + diff_hex + "/bin");  // as the unpacker would leave it
    CHECK(blob_files() == 5);

    // One of two names: nothing but the name goes.
    std::string out = ok({"rm", "busybox:a"});
    CHECK(contains(out, "Untagged busybox:a"));
    CHECK(contains(out, "Removed 0 blobs"));
    CHECK(blob_files() == 5);

    // A worker (here: this process) pins busybox:b; rm and gc keep its content.
    auto store = nps::image::ImageStore::open({.state_dir = state});
    REQUIRE(store);
    auto pinned = (*store)->pin("busybox:b", "integration test");
    REQUIRE(pinned);
    out = ok({"rm", "busybox:b"});
    CHECK(contains(out, "Untagged busybox:b"));
    CHECK(contains(out, "Kept image " + images.manifest_digest + ": in use by a running worker"));
    CHECK(contains(ok({"gc"}), "Kept image " + images.manifest_digest));
    CHECK(blob_files() == 5);
    CHECK(fs::exists(state + "/images/layers/" + diff_hex));
    CHECK(contains(ok({"ls"}), "<none>"));
    CHECK(contains(ok({"ls"}), "(in use: 1)"));
    CHECK(inspect(images.manifest_digest)["layers"][0]["digest"] == images.layer_digest);

    // Unpinned: gc removes its manifest and gzip layer; the zstd image shares
    // the config and the diff_id, so those stay.
    { auto drop = std::move(*pinned); }
    out = ok({"gc"});
    CHECK(contains(out, "Deleted image " + images.manifest_digest));
    CHECK(contains(out, "Removed 2 blobs, 0 unpacked layers"));
    CHECK(blob_files() == 3);
    CHECK(fs::exists(state + "/images/layers/" + diff_hex));
    CHECK(json({"ls"}).size() == 1);

    // The last name: everything goes, the unpacked layer too.
    out = ok({"rm", "busybox:zstd"});
    CHECK(contains(out, "Removed 3 blobs, 1 unpacked layer"));
    CHECK(blob_files() == 0);
    CHECK_FALSE(fs::exists(state + "/images/layers/" + diff_hex));
    CHECK(image({"rm", "busybox:zstd"}).exit_status == 1);
}

TEST_CASE_FIXTURE(StateFixture, "a pin held by a process that died does not keep anything")
{
    ok({"import", images.oci_dir, "--name", "busybox:pinned"});
    int ready[2];
    REQUIRE(::pipe2(ready, O_CLOEXEC) == 0);
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        auto store = nps::image::ImageStore::open({.state_dir = state});
        auto pinned = store ? (*store)->pin("busybox:pinned", "doomed worker") : nps::Result<nps::image::PinnedImage>(
                                                                                     nps::internal_error("open"));
        const char byte = pinned ? '1' : '0';
        (void)::write(ready[1], &byte, 1);
        ::pause();
        ::_exit(0);
    }
    ::close(ready[1]);
    char byte = 0;
    REQUIRE(::read(ready[0], &byte, 1) == 1);
    ::close(ready[0]);
    CHECK(byte == '1');
    ok({"rm", "busybox:pinned"});
    CHECK(json({"ls"}).at(0)["pins"] == 1);
    CHECK(blob_files() == 3);

    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
    const std::string out = ok({"gc"});
    CHECK(contains(out, "1 stale pin"));
    CHECK(contains(out, "Deleted image " + images.manifest_digest));
    CHECK(blob_files() == 0);
}

TEST_CASE_FIXTURE(StateFixture, "several runner processes import into one store at once")
{
    const std::string bin = nps::test::runner_binary();
    std::vector<pid_t> pids;
    const std::vector<std::vector<std::string>> jobs = {
        {"import", images.oci_dir, "--name", "busybox:p1"}, {"import", images.oci_archive, "--name", "busybox:p2"},
        {"import", images.docker_archive, "--name", "busybox:p3"}, {"import", images.zstd_dir, "--name", "busybox:p4"}};
    for (const auto& job : jobs) {
        const pid_t pid = ::fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            const int null = ::open("/dev/null", O_WRONLY);
            ::dup2(null, 1);
            std::vector<std::string> args = {bin, "image"};
            args.insert(args.end(), job.begin(), job.end());
            args.insert(args.end(), {"--state-dir", state, "--config", config});
            std::vector<char*> argv;
            for (auto& a : args)
                argv.push_back(a.data());
            argv.push_back(nullptr);
            ::execv(argv[0], argv.data());
            ::_exit(127);
        }
        pids.push_back(pid);
    }
    for (pid_t pid : pids) {
        int status = 0;
        REQUIRE(::waitpid(pid, &status, 0) == pid);
        CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    }
    CHECK(json({"ls"}).size() == 4);
    CHECK(blob_files() == 7);
    // Concurrent gc with imports: whatever interleaving, the store stays whole.
    ok({"gc"});
    for (const char* name : {"busybox:p1", "busybox:p2", "busybox:p3", "busybox:p4"})
        CHECK(inspect(name)["layers"].size() == 1);
}

TEST_CASE_FIXTURE(StateFixture, "import progress shows on a terminal only")
{
    auto r = image({"import", images.oci_dir, "--name", "busybox:quiet"});
    CHECK(r.exit_status == 0);
    CHECK(r.err.empty());  // stderr is a file here: no progress

    // Under script(1) stderr is a pseudo-terminal.
    const std::string log = dir.path() + "/tty.log";
    const auto on_tty = [&](const std::string& args) {
        image_it::shell("script -qec '" + nps::test::runner_binary() + " image import " + args + " --state-dir " +
                        state + " --config " + config + "' " + log);
        return nps::test::read_file(log);
    };
    std::string tty = on_tty(images.zstd_dir + " --name busybox:tty");
    CHECK_MESSAGE(contains(tty, "Stored    sha256:"), tty);  // the new zstd layer
    CHECK(contains(tty, "\r\033[K"));
    CHECK(contains(tty, "Imported busybox:tty"));
    tty = on_tty(images.oci_dir + " --name busybox:again");
    CHECK_MESSAGE(contains(tty, "Present   sha256:" + images.layer_digest.substr(7, 12)), tty);  // verified, not copied

    image_it::shell("script -qec '" + nps::test::runner_binary() + " image import --quiet " + images.oci_dir +
                    " --name busybox:q2 --state-dir " + state + " --config " + config + "' " + log);
    CHECK_FALSE(contains(nps::test::read_file(log), "\033[K"));
}

TEST_CASE_FIXTURE(StateFixture, "gc evicts unpacked layers of idle images above the configured threshold")
{
    ok({"import", images.oci_dir, "--name", "busybox:t"});
    const std::string layer_dir = state + "/images/layers/" + images.diff_id.substr(7);
    fs::create_directories(layer_dir + "/bin");
    nps::test::write_file(layer_dir + "/bin/data", std::string(100000, 'x'));
    nps::test::write_file(config, "[images]\ngc_max_bytes = \"1Ki\"\ngc_max_disk_percent = 100\n");
    auto r = image({"gc"});
    CHECK(r.exit_status == 0);
    CHECK(contains(r.out, "evicted 1 unpacked layer"));
    CHECK(contains(r.err, "still above its thresholds"));
    CHECK_FALSE(fs::exists(layer_dir));
    CHECK(blob_files() == 3);  // named: never removed by gc
    CHECK(json({"ls"}).size() == 1);

    nps::test::write_file(config, "[images]\ngc_max_bytes = \"lots\"\n");
    r = image({"gc"});
    CHECK(r.exit_status == 1);
    CHECK(contains(r.err, "images.gc_max_bytes"));
}

TEST_CASE_FIXTURE(StateFixture, "rm refuses an image an announced agent uses, unless --force")
{
    ok({"import", images.oci_dir, "--name", "busybox:used"});
    ok({"import", images.oci_dir, "--name", "busybox:alias"});
    ok({"import", images.zstd_dir, "--name", "busybox:free"});
    {
        auto store = nps::store::Store::open({.path = state + "/runner.db"}, nps::SystemClock::instance());
        REQUIRE(store);
        nps::store::Announce announce;
        announce.nid = "urn:nps:agent:example.test:user";
        announce.activation_mode = "ephemeral";
        announce.spawn_spec_ref = nps::spawn::encode_spawnspec_uri(R"({"image":"busybox:used"})");
        announce.body_json = "{}";
        REQUIRE((*store)->put_announce(announce));
    }
    // The name the SpawnSpec uses, and the digest of its manifest: refused, nothing removed.
    for (const std::string& ref : {std::string("busybox:used"), images.manifest_digest}) {
        CAPTURE(ref);
        auto refused = image({"rm", ref});
        CHECK(refused.exit_status == 1);
        CHECK(contains(refused.err, "is used by agent urn:nps:agent:example.test:user (SpawnSpec image 'busybox:used')"));
        CHECK(contains(refused.err, "nothing removed"));
        CHECK(json({"ls"}).size() == 3);  // every name still there
    }
    // Another name of the same manifest, and an unused image: removed.
    CHECK(contains(ok({"rm", "busybox:alias"}), "Untagged busybox:alias"));
    CHECK(contains(ok({"rm", "busybox:free"}), "Untagged busybox:free"));
    // --force removes the used one.
    CHECK(contains(ok({"rm", "--force", "busybox:used"}), "Untagged busybox:used"));
}

TEST_CASE_FIXTURE(StateFixture, "import, rm and gc take --json")
{
    const Json imported = json({"import", images.oci_dir, "--name", "busybox:j"});
    CHECK(json({"inspect", "busybox:j"})["manifest_digest"] == images.manifest_digest);  // JSON already
    REQUIRE(imported.size() == 1);
    CHECK(imported[0]["name"] == "busybox:j");
    CHECK(imported[0]["manifest_digest"] == images.manifest_digest);
    CHECK(imported[0]["platform"] == "linux/amd64");
    const Json removed = json({"rm", "busybox:j"});
    CHECK(removed["untagged"] == Json::array({"busybox:j"}));
    CHECK(removed["removed_manifests"] == Json::array({images.manifest_digest}));
    CHECK(removed["freed_bytes"].get<std::uint64_t>() > 0);
    const Json collected = json({"gc"});
    CHECK(collected["removed_manifests"].empty());
    CHECK(collected.contains("usage_bytes"));
}

// libcrypto is opened on first use (nps/lazy/crypto.hpp, docs/startup.md):
// the dynamic loader's own account (LD_DEBUG=files lists every object it
// loads, dlopen included) shows `ls` running without it and `import`, which
// hashes every blob, loading it.
TEST_CASE_FIXTURE(StateFixture, "libcrypto is loaded by a verb that hashes, not by one that does not")
{
    ok({"ls"});  // the store exists: `ls` below only reads it
    REQUIRE(::setenv("LD_DEBUG", "files", 1) == 0);
    const auto listed = image({"ls"});
    const auto imported = image({"import", images.oci_dir, "--name", "busybox:oci"});
    const auto version = run_command({"version"});
    ::unsetenv("LD_DEBUG");
    REQUIRE(listed.exit_status == 0);
    REQUIRE(imported.exit_status == 0);
    REQUIRE(version.exit_status == 0);
    INFO("import's loader trace: " << imported.err.substr(0, 4000));
    CHECK(contains(imported.err, "libcrypto.so"));
    CHECK_FALSE(contains(listed.err, "libcrypto.so"));
    CHECK_FALSE(contains(version.err, "libcrypto.so"));
    // The hashes are the right ones: the imported image verifies and lists.
    CHECK(contains(ok({"ls"}), "busybox:oci"));
    CHECK(inspect("busybox:oci")["manifest_digest"] == images.manifest_digest);
}
