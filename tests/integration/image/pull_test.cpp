// SPDX-License-Identifier: Apache-2.0
// `nps-runner image pull` against Debian's docker-registry on loopback —
// plain http, TLS from a test CA, htpasswd and token authentication — with
// images pushed by skopeo, and through a faulty proxy for retries and
// verification failures.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "nps/base/digest.hpp"
#include "registry_fixture.hpp"
#include "runner_process.hpp"
#include "test_images.hpp"

using image_it::capture;
using image_it::Helper;
using image_it::Registry;
using image_it::RegistryOptions;
using image_it::shell;
using nps::test::run_command;
using nps::test::TempDir;
using Json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

bool contains(const std::string& text, const std::string& part)
{
    return text.find(part) != std::string::npos;
}

struct PullFixture {
    TempDir dir{"nps-pull-state"};
    std::string state = dir.path() + "/state";
    std::string config = dir.path() + "/config.toml";
    const image_it::TestImages& images = image_it::test_images();

    // [images] settings besides gc_max_disk_percent.
    void configure(const std::string& images_keys, const std::string& more_tables = "")
    {
        nps::test::write_file(config, "[images]\ngc_max_disk_percent = 100\n" + images_keys + more_tables);
    }
    nps::test::CommandResult image(std::vector<std::string> args)
    {
        args.insert(args.begin(), "image");
        args.insert(args.end(), {"--state-dir", state, "--config", config});
        return run_command(args);
    }
    nps::test::CommandResult pull(std::vector<std::string> args)
    {
        args.insert(args.begin(), "pull");
        return image(args);
    }
    std::string ok(std::vector<std::string> args)
    {
        auto r = image(args);
        INFO("stderr: " << r.err);
        REQUIRE(r.exit_status == 0);
        return r.out;
    }
    Json ls() { return Json::parse(ok({"ls", "--json"})); }
    // The digest `name` has in the store ("" when absent).
    std::string digest_of(const std::string& name)
    {
        for (const auto& i : ls())
            if (i["name"].is_string() && i["name"] == name)
                return i["digest"];
        return "";
    }
    std::string blobs_dir() const { return state + "/images/blobs/sha256"; }
    std::size_t temp_files() const
    {
        std::size_t n = 0;
        if (fs::exists(blobs_dir()))
            for (const auto& e : fs::directory_iterator(blobs_dir()))
                n += e.path().filename().string().rfind(".tmp-", 0) == 0;
        return n;
    }
    ino_t inode(const std::string& digest) const
    {
        struct stat st {};
        REQUIRE(::stat((blobs_dir() + "/" + digest.substr(7)).c_str(), &st) == 0);
        return st.st_ino;
    }
};

void push(const std::string& source, const std::string& destination, const std::string& extra = "")
{
    shell("skopeo copy --quiet --dest-tls-verify=false " + extra + " " + source + " docker://" + destination);
}

std::string skopeo_digest(const std::string& reference, const std::string& extra = "")
{
    return Json::parse(capture("skopeo inspect --tls-verify=false " + extra + " docker://" + reference))["Digest"];
}

// An OCI layout whose index.json names one image index ("multi") listing
// the amd64 and the arm64 manifest of the test image.
std::string index_layout(const image_it::TestImages& images, const TempDir& dir)
{
    const std::string layout = dir.path() + "/index-layout";
    shell("cp -a " + images.multiarch_dir + " " + layout);
    Json top = Json::parse(nps::test::read_file(layout + "/index.json"));
    Json entries = Json::array();
    for (auto entry : top["manifests"]) {
        entry.erase("annotations");
        entries.push_back(entry);
    }
    const std::string index = Json{{"schemaVersion", 2},
                                   {"mediaType", "application/vnd.oci.image.index.v1+json"},
                                   {"manifests", entries}}.dump();
    const std::string digest = "sha256:" + nps::sha256_hex(index);
    nps::test::write_file(layout + "/blobs/sha256/" + digest.substr(7), index);
    nps::test::write_file(
        layout + "/index.json",
        Json{{"schemaVersion", 2},
             {"manifests",
              {{{"mediaType", "application/vnd.oci.image.index.v1+json"},
                {"digest", digest},
                {"size", index.size()},
                {"annotations", {{"org.opencontainers.image.ref.name", "multi"}}}}}}}.dump());
    return layout;
}

}  // namespace

TEST_CASE_FIXTURE(PullFixture, "a plain-http registry: by tag, by digest, the digest skopeo reports, blobs reused")
{
    Registry registry;
    const std::string host = registry.host();
    push("oci:" + images.oci_dir + ":latest", host + "/tools/busybox:1");
    const std::string digest = skopeo_digest(host + "/tools/busybox:1");
    configure("insecure_registries = [\"" + host + "\"]\n");

    auto r = pull({host + "/tools/busybox:1"});
    INFO("stderr: " << r.err);
    REQUIRE(r.exit_status == 0);
    CHECK(contains(r.out, "Pulled " + host + "/tools/busybox:1 " + digest + " (linux/amd64, "));
    CHECK(r.err.empty());  // not a terminal: no progress
    CHECK(digest_of(host + "/tools/busybox:1") == digest);
    CHECK(digest == images.manifest_digest);  // skopeo pushed the manifest unchanged

    const Json inspected = Json::parse(ok({"inspect", host + "/tools/busybox:1"}));
    CHECK(inspected["config"]["entrypoint"] == Json::array({"/bin/sh"}));
    CHECK(inspected["config"]["user"] == "1000:1000");
    CHECK(inspected["layers"][0]["digest"] == images.layer_digest);
    CHECK(inspected["layers"][0]["diff_id"] == images.diff_id);
    const ino_t layer_inode = inode(images.layer_digest);

    // Again: the same manifest, the stored layer verified and kept (not written again).
    r = pull({host + "/tools/busybox:1"});
    REQUIRE(r.exit_status == 0);
    CHECK_FALSE(contains(r.out, "replacing"));
    CHECK(inode(images.layer_digest) == layer_inode);

    // By digest: checked against the manifest; recorded as repository:sha256-HEX unless --name.
    r = pull({host + "/tools/busybox@" + digest});
    INFO("stderr: " << r.err);
    REQUIRE(r.exit_status == 0);
    CHECK(digest_of(host + "/tools/busybox:sha256-" + digest.substr(7)) == digest);
    r = pull({host + "/tools/busybox:1@" + digest, "--name", "busybox:pinned"});
    REQUIRE(r.exit_status == 0);
    CHECK(digest_of("busybox:pinned") == digest);

    // A digest the registry does not have.
    const std::string wrong = "sha256:" + std::string(64, '0');
    r = pull({host + "/tools/busybox@" + wrong});
    CHECK(r.exit_status == 1);
    CHECK(contains(r.err, "Failed to fetch manifest '" + wrong + "' of repository tools/busybox on registry " + host));
    CHECK(contains(r.err, "HTTP 404 Not Found (MANIFEST_UNKNOWN"));
    // An unknown tag or repository.
    r = pull({host + "/tools/nothing:1"});
    CHECK(r.exit_status == 1);
    CHECK(contains(r.err, "HTTP 404"));
    CHECK(contains(r.err, "(MANIFEST_UNKNOWN: manifest unknown)"));
    CHECK(ls().size() == 3);
}

TEST_CASE_FIXTURE(PullFixture, "the registry comes from the reference or images.default_registry; https unless listed")
{
    Registry registry;
    const std::string host = registry.host();
    push("oci:" + images.oci_dir + ":latest", host + "/busybox:1");

    configure("insecure_registries = [\"" + host + "\"]\n");
    auto r = pull({"busybox:1"});
    CHECK(r.exit_status == 1);
    CHECK(contains(r.err, "names no registry"));
    CHECK(contains(r.err, "images.default_registry"));

    configure("insecure_registries = [\"" + host + "\"]\ndefault_registry = \"" + host + "\"\n");
    r = pull({"busybox:1"});
    INFO("stderr: " << r.err);
    REQUIRE(r.exit_status == 0);
    CHECK(contains(r.out, "Pulled busybox:1 " + images.manifest_digest));  // recorded as written

    // Not listed: https, which a plain-http registry cannot speak.
    configure("");
    r = pull({host + "/busybox:1", "--name", "busybox:https"});
    CHECK(r.exit_status == 1);
    CHECK(contains(r.err, "Failed to fetch manifest '1' of repository busybox on registry " + host));
    CHECK(contains(r.err, "SSL"));
    CHECK(digest_of("busybox:https").empty());

    // Nothing listens: retried, then a clear error.
    configure("insecure_registries = [\"127.0.0.1:1\"]\n");
    r = pull({"127.0.0.1:1/busybox:1"});
    CHECK(r.exit_status == 1);
    CHECK(contains(r.err, "Retrying manifest '1' of repository busybox on registry 127.0.0.1:1"));
    CHECK(contains(r.err, "gave up after 4 attempts"));
}

TEST_CASE_FIXTURE(PullFixture, "an image index: this host's platform, or --platform")
{
    Registry registry;
    const std::string host = registry.host();
    push("oci:" + index_layout(images, dir) + ":multi", host + "/busybox:multi", "--all");
    configure("insecure_registries = [\"" + host + "\"]\n");

    auto r = pull({host + "/busybox:multi"});
    INFO("stderr: " << r.err);
    REQUIRE(r.exit_status == 0);
    CHECK(contains(r.out, "Pulled " + host + "/busybox:multi " + images.manifest_digest + " (linux/amd64"));
    r = pull({host + "/busybox:multi", "--platform", "linux/arm64", "--name", "busybox:arm"});
    REQUIRE(r.exit_status == 0);
    CHECK(contains(r.out, "Pulled busybox:arm " + images.arm64_manifest_digest + " (linux/arm64/v8"));
    r = pull({host + "/busybox:multi", "--platform", "linux/s390x", "--name", "busybox:s390x"});
    CHECK(r.exit_status == 1);
    CHECK(contains(r.err, "has no image for linux/s390x"));
    CHECK(contains(r.err, "linux/amd64"));
    CHECK(contains(r.err, "linux/arm64/v8"));
}

TEST_CASE_FIXTURE(PullFixture, "TLS: images.ca_file is trusted besides the system CAs; without it the certificate is refused")
{
    Registry registry({.tls = true});
    const std::string host = registry.host();
    push("oci:" + images.oci_dir + ":latest", host + "/busybox:tls");

    configure("");
    auto r = pull({host + "/busybox:tls"});
    CHECK(r.exit_status == 1);
    CHECK(contains(r.err, "Failed to fetch manifest 'tls' of repository busybox on registry " + host));
    CHECK(contains(r.err, "certificate"));
    CHECK_FALSE(contains(r.err, "Retrying"));  // a certificate problem is not transient

    configure("ca_file = \"" + image_it::test_pki().ca_cert + "\"\n");
    r = pull({host + "/busybox:tls"});
    INFO("stderr: " << r.err);
    REQUIRE(r.exit_status == 0);
    CHECK(contains(r.out, "Pulled " + host + "/busybox:tls " + images.manifest_digest));

    // The name must match the certificate: localhost is in it, so it works too.
    r = pull({"localhost:" + std::to_string(registry.port()) + "/busybox:tls", "--name", "busybox:localhost"});
    INFO("stderr: " << r.err);
    CHECK(r.exit_status == 0);

    configure("ca_file = \"" + dir.path() + "/missing.pem\"\n");
    r = pull({host + "/busybox:tls"});
    CHECK(r.exit_status == 1);
    CHECK(contains(r.err, "Failed to read images.ca_file"));
}

TEST_CASE_FIXTURE(PullFixture, "basic authentication: configured credentials are used, missing or wrong ones say so")
{
    const std::string htpasswd = dir.path() + "/htpasswd";
    nps::test::write_file(htpasswd, image_it::htpasswd_line("puller", "s3cret"));
    Registry registry({.htpasswd = htpasswd});
    const std::string host = registry.host();
    push("oci:" + images.oci_dir + ":latest", host + "/busybox:auth", "--dest-creds puller:s3cret");
    const std::string listed = "insecure_registries = [\"" + host + "\"]\n";

    configure(listed);
    auto r = pull({host + "/busybox:auth"});
    CHECK(r.exit_status == 1);
    CHECK(contains(r.err, "Failed to fetch manifest 'auth' of repository busybox on registry " + host));
    CHECK(contains(r.err, "no credentials are configured for '" + host + "'"));

    configure(listed, "[images.auth.\"" + host + "\"]\nusername = \"puller\"\npassword = \"wrong\"\n");
    r = pull({host + "/busybox:auth"});
    CHECK(r.exit_status == 1);
    CHECK(contains(r.err, "refused the credentials configured for '" + host + "'"));

    configure(listed, "[images.auth.\"" + host + "\"]\nusername = \"puller\"\npassword = \"s3cret\"\n");
    r = pull({host + "/busybox:auth"});
    INFO("stderr: " << r.err);
    REQUIRE(r.exit_status == 0);
    CHECK(digest_of(host + "/busybox:auth") == skopeo_digest(host + "/busybox:auth", "--creds puller:s3cret"));

    nps::test::write_file(dir.path() + "/password", "s3cret\n");
    configure(listed, "[images.auth.\"" + host + "\"]\nusername = \"puller\"\npassword_file = \"" + dir.path() +
                          "/password\"\n");
    r = pull({host + "/busybox:auth", "--name", "busybox:file"});
    INFO("stderr: " << r.err);
    CHECK(r.exit_status == 0);
}

TEST_CASE_FIXTURE(PullFixture, "token authentication: a token from the realm, with the configured credentials")
{
    const auto& pki = image_it::test_pki();
    Helper tokens("token", {"--user", "puller", "--password", "s3cret", "--key", pki.token_key, "--cert", pki.token_cert});
    Registry registry({.token_realm = "http://" + tokens.host() + "/token"});
    const std::string host = registry.host();
    push("oci:" + images.oci_dir + ":latest", host + "/team/busybox:tok", "--dest-creds puller:s3cret");
    const std::string creds = "[images.auth.\"" + host + "\"]\nusername = \"puller\"\npassword = \"s3cret\"\n";

    // The realm is plain http: it must be listed too, or nothing is sent there.
    configure("insecure_registries = [\"" + host + "\"]\n", creds);
    auto r = pull({host + "/team/busybox:tok"});
    CHECK(r.exit_status == 1);
    CHECK(contains(r.err, "refusing the token realm 'http://" + tokens.host() + "/token'"));
    CHECK(contains(r.err, "not listed in images.insecure_registries"));

    const std::string listed = "insecure_registries = [\"" + host + "\", \"" + tokens.host() + "\"]\n";
    configure(listed);
    r = pull({host + "/team/busybox:tok"});
    CHECK(r.exit_status == 1);
    CHECK(contains(r.err, "the token service answered HTTP 401"));
    CHECK(contains(r.err, "none are configured for '" + host + "'"));

    configure(listed, creds);
    r = pull({host + "/team/busybox:tok"});
    INFO("stderr: " << r.err);
    REQUIRE(r.exit_status == 0);
    CHECK(contains(r.out, "Pulled " + host + "/team/busybox:tok " + images.manifest_digest));
    const std::string served = tokens.requests();
    CHECK(contains(served, "scope=repository%3Ateam%2Fbusybox%3Apull"));
    CHECK(contains(served, "service=nps-test-registry"));
    CHECK(contains(served, "account=puller"));
    CHECK(contains(served, "auth=Basic"));
}

TEST_CASE_FIXTURE(PullFixture, "transient failures are retried; content that fails verification leaves nothing")
{
    Registry registry;
    push("oci:" + images.oci_dir + ":latest", registry.host() + "/busybox:1");
    const std::string upstream = std::to_string(registry.port());

    SUBCASE("503 with Retry-After, then success")
    {
        Helper proxy("proxy", {"--upstream", upstream, "--fail-first", "2"});
        configure("insecure_registries = [\"" + proxy.host() + "\"]\n");
        auto r = pull({proxy.host() + "/busybox:1"});
        INFO("stderr: " << r.err);
        REQUIRE(r.exit_status == 0);
        CHECK(contains(r.err, "Retrying manifest '1' of repository busybox on registry " + proxy.host() +
                                  " in 0.0 s (attempt 2 of 4): HTTP 503"));
        CHECK(contains(r.err, "Retrying blob " + images.layer_digest));
        CHECK(digest_of(proxy.host() + "/busybox:1") == images.manifest_digest);
    }
    SUBCASE("503 every time: the error says so")
    {
        Helper proxy("proxy", {"--upstream", upstream, "--fail-first", "100"});
        configure("insecure_registries = [\"" + proxy.host() + "\"]\n");
        auto r = pull({proxy.host() + "/busybox:1", "--quiet"});
        CHECK(r.exit_status == 1);
        CHECK_FALSE(contains(r.err, "Retrying"));  // --quiet
        CHECK(contains(r.err, "Failed to fetch manifest '1' of repository busybox on registry " + proxy.host() +
                                  ": HTTP 503 Service Unavailable (UNAVAILABLE: try again) (gave up after 4 attempts)"));
    }
    SUBCASE("a blob cut short is fetched again from the start")
    {
        Helper proxy("proxy", {"--upstream", upstream, "--truncate-first"});
        configure("insecure_registries = [\"" + proxy.host() + "\"]\n");
        auto r = pull({proxy.host() + "/busybox:1"});
        INFO("stderr: " << r.err);
        REQUIRE(r.exit_status == 0);
        CHECK(contains(r.err, "Retrying blob " + images.layer_digest));
        CHECK(temp_files() == 0);
        CHECK(digest_of(proxy.host() + "/busybox:1") == images.manifest_digest);
    }
    SUBCASE("redirected blobs are followed")
    {
        Helper proxy("proxy", {"--upstream", upstream, "--redirect-blobs"});
        configure("insecure_registries = [\"" + proxy.host() + "\"]\n");
        auto r = pull({proxy.host() + "/busybox:1"});
        INFO("stderr: " << r.err);
        REQUIRE(r.exit_status == 0);
        CHECK(contains(proxy.requests(), "?redirected=1"));
    }
    SUBCASE("a corrupt layer is refused while it streams and nothing stays")
    {
        Helper proxy("proxy", {"--upstream", upstream, "--corrupt-layers"});
        configure("insecure_registries = [\"" + proxy.host() + "\"]\n");
        auto r = pull({proxy.host() + "/busybox:1"});
        CHECK(r.exit_status == 1);
        CHECK(contains(r.err, "Blob " + images.layer_digest + " from repository busybox on registry " + proxy.host() +
                                  " is corrupt: its content hashes to sha256:"));
        CHECK_FALSE(contains(r.err, "Retrying"));
        CHECK(ls().empty());
        CHECK(temp_files() == 0);
        CHECK_FALSE(fs::exists(blobs_dir() + "/" + images.layer_digest.substr(7)));
    }
    SUBCASE("a manifest that does not hash to its digest is refused")
    {
        Helper proxy("proxy", {"--upstream", upstream, "--corrupt-manifests"});
        configure("insecure_registries = [\"" + proxy.host() + "\"]\n");
        auto r = pull({proxy.host() + "/busybox:1"});
        CHECK(r.exit_status == 1);
        CHECK(contains(r.err, "(Docker-Content-Digest) but it hashes to"));
        r = pull({proxy.host() + "/busybox@" + images.manifest_digest});
        CHECK(r.exit_status == 1);
        CHECK(contains(r.err, "the registry's answer hashes to sha256:"));
        CHECK(contains(r.err, "not to the digest asked for"));
        CHECK(ls().empty());
    }
}

TEST_CASE_FIXTURE(PullFixture, "a damaged blob in the store is fetched again, not trusted")
{
    Registry registry;
    const std::string host = registry.host();
    push("oci:" + images.oci_dir + ":latest", host + "/busybox:1");
    configure("insecure_registries = [\"" + host + "\"]\n");
    REQUIRE(pull({host + "/busybox:1"}).exit_status == 0);
    const std::string layer = blobs_dir() + "/" + images.layer_digest.substr(7);
    ::chmod(layer.c_str(), 0644);
    nps::test::write_file(layer, "damaged");
    auto r = pull({host + "/busybox:1"});
    INFO("stderr: " << r.err);
    REQUIRE(r.exit_status == 0);
    CHECK(nps::sha256_hex(nps::test::read_file(layer)) == images.layer_digest.substr(7));
}

TEST_CASE_FIXTURE(PullFixture, "progress on a terminal: bytes per blob, then Stored or Present")
{
    Registry registry;
    const std::string host = registry.host();
    push("oci:" + images.oci_dir + ":latest", host + "/busybox:1");
    configure("insecure_registries = [\"" + host + "\"]\n");
    const std::string log = dir.path() + "/tty.log";
    const auto on_tty = [&](const std::string& args) {
        shell("script -qec '" + nps::test::runner_binary() + " image pull " + args + " --state-dir " + state +
              " --config " + config + "' " + log);
        return nps::test::read_file(log);
    };
    std::string tty = on_tty(host + "/busybox:1");
    CHECK_MESSAGE(contains(tty, "Stored    sha256:" + images.layer_digest.substr(7, 12)), tty);
    CHECK(contains(tty, "\r\033[K"));
    CHECK(contains(tty, "Pulled " + host + "/busybox:1"));
    tty = on_tty(host + "/busybox:1");
    CHECK_MESSAGE(contains(tty, "Present   sha256:" + images.layer_digest.substr(7, 12)), tty);
    tty = on_tty("--quiet " + host + "/busybox:1");
    CHECK_FALSE(contains(tty, "\033[K"));
}
