// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include "nps/config/config.hpp"

using nps::config::parse_config;

TEST_CASE("api.require_token = false is read")
{
    auto c = parse_config("[api]\nrequire_token = false\n", "test.toml");
    REQUIRE(c);
    CHECK_FALSE(c->require_token);
}

TEST_CASE("[store] url selects PostgreSQL; its password is never shown")
{
    auto c = parse_config("[store]\nurl = \"postgresql://nps:s3cret@db.example/nps?sslmode=verify-full\"\n"
                          "notify = false\n",
                          "test.toml");
    REQUIRE(c);
    CHECK(c->store_url == "postgresql://nps:s3cret@db.example/nps?sslmode=verify-full");
    CHECK_FALSE(c->store_notify);
    const auto options = c->store_options(nps::store::Synchronous::full);
    CHECK(options.url == c->store_url);
    CHECK(nps::store::redact_store_url(c->store_url) == "postgresql://nps:***@db.example/nps?sslmode=verify-full");
    CHECK(nps::store::redact_store_url("postgresql:///nps?host=/run/postgresql&password=pw&user=u") ==
          "postgresql:///nps?host=/run/postgresql&password=***&user=u");
    // libpq ends a URI's password at '@' or '/' only.
    CHECK(nps::store::redact_store_url("postgresql://u:s3c?ret@/nps?host=/run/postgresql") ==
          "postgresql://u:***@/nps?host=/run/postgresql");
    CHECK(nps::store::redact_store_url("postgresql://db.example:5432/nps?x=a@b") ==
          "postgresql://db.example:5432/nps?x=a@b");
    auto bad = parse_config("[store]\nurl = \"mysql://u:pw@db/x\"\n", "test.toml");
    REQUIRE_FALSE(bad);
    CHECK(bad.error().describe().find("pw") == std::string::npos);  // not even in the refusal

    auto none = parse_config("", "test.toml");
    REQUIRE(none);
    CHECK(none->store_url.empty());
    CHECK(none->store_notify);
    CHECK(none->store_options(nps::store::Synchronous::full).path == none->database_path());
    CHECK(none->store_pooler == nps::config::StorePooler::none);
    CHECK_FALSE(none->store_options(nps::store::Synchronous::full).transaction_pooler);
}

TEST_CASE("[store] pooler = \"transaction\": no per-session state, and no LISTEN")
{
    auto c = parse_config("[store]\nurl = \"postgresql:///nps?host=/run/pgbouncer&port=6432\"\npooler = \"transaction\"\n",
                          "test.toml");
    REQUIRE(c);
    CHECK(c->store_pooler == nps::config::StorePooler::transaction);
    CHECK(c->store_options(nps::store::Synchronous::full).transaction_pooler);
    CHECK_FALSE(c->store_notify);  // implied
    auto quiet = parse_config("[store]\npooler = \"transaction\"\nnotify = false\n", "test.toml");
    REQUIRE(quiet);
    CHECK_FALSE(quiet->store_notify);
    // A pooler in session mode is a direct connection.
    auto session = parse_config("[store]\npooler = \"session\"\n", "test.toml");
    REQUIRE(session);
    CHECK(session->store_pooler == nps::config::StorePooler::none);
    CHECK(session->store_notify);
    CHECK_FALSE(session->store_options(nps::store::Synchronous::full).transaction_pooler);
}

TEST_CASE("an empty config gives the documented defaults")
{
    auto c = parse_config("", "test.toml");
    REQUIRE(c);
    CHECK(c->state_dir == "/var/lib/nps-runner");
    CHECK(c->listen == "127.0.0.1:17437");
    CHECK(c->socket == "/run/nps-runner/api.sock");
    CHECK(c->socket_mode == 0660);
    CHECK_FALSE(c->token);
    CHECK(c->require_token);
    CHECK(c->generated_token_path() == "/var/lib/nps-runner/api.token");
    CHECK(c->default_ttl_seconds == 3600);
    CHECK(c->synchronous == nps::store::Synchronous::full);
    CHECK(c->images_gc_max_bytes == 0);
    CHECK(c->images_gc_max_disk_percent == 90);
    CHECK(c->runner_nid.rfind("urn:nps:node:", 0) == 0);
    CHECK(c->database_path() == "/var/lib/nps-runner/runner.db");
}

TEST_CASE("every key is read")
{
    auto c = parse_config(R"(
[runner]
state_dir = "/srv/nps"
nid = "urn:nps:node:edge:r1"
inboxes = ["urn:nps:agent:a:b", "urn:nps:agent:a:c"]
[api]
listen = "0.0.0.0:9000"
socket = ""
socket_mode = "0600"
token = "0123456789abcdef"
allowed_nids = ["urn:nps:agent:a:b"]
[inbox]
default_ttl_seconds = 60
max_depth = 5
max_message_bytes = 4096
[store]
synchronous = "normal"
[images]
gc_max_bytes = "20Gi"
gc_max_disk_percent = 75
)",
                          "test.toml");
    REQUIRE_MESSAGE(c.has_value(), (c ? std::string() : c.error().describe()));
    CHECK(c->state_dir == "/srv/nps");
    CHECK(c->runner_nid == "urn:nps:node:edge:r1");
    CHECK(c->inboxes.size() == 2);
    CHECK(c->listen == "0.0.0.0:9000");
    CHECK(c->socket.empty());
    CHECK(c->socket_mode == 0600);
    CHECK(c->token.value() == "0123456789abcdef");
    CHECK(c->allowed_nids == std::vector<std::string>{"urn:nps:agent:a:b"});
    CHECK(c->default_ttl_seconds == 60);
    CHECK(c->max_depth == 5);
    CHECK(c->max_message_bytes == 4096);
    CHECK(c->synchronous == nps::store::Synchronous::normal);
    CHECK(c->images_gc_max_bytes == 20ull << 30);
    CHECK(c->images_gc_max_disk_percent == 75);
}

TEST_CASE("mistakes are errors that name the key")
{
    struct Case {
        const char* toml;
        const char* expect;
    } cases[] = {
        {"[inbox]\nmax_dept = 5\n", "inbox.max_dept: unknown key"},
        {"[nonsense]\n", "unknown section [nonsense]"},
        {"[inbox]\ndefault_ttl_seconds = \"60\"\n", "inbox.default_ttl_seconds: expected an integer"},
        {"[inbox]\ndefault_ttl_seconds = 0\n", "inbox.default_ttl_seconds: must be between 1 and 604800"},
        {"[api]\ntoken = \"short\"\n", "api.token: must be at least 16 characters"},
        {"[api]\nsocket_mode = \"rw\"\n", "api.socket_mode: 'rw' is not an octal mode"},
        {"[api]\nrequire_token = \"no\"\n", "api.require_token: expected true or false"},
        {"[runner]\ninboxes = [\"worker\"]\n", "runner.inboxes: 'worker' is not a NID"},
        {"[store]\nsynchronous = \"off\"\n", "store.synchronous: must be \"full\" or \"normal\""},
        {"[store]\nurl = \"mysql://u:pw@db/x\"\n", "store.url: must be a postgresql:// URL"},
        {"[store]\nnotify = \"yes\"\n", "store.notify: expected true or false"},
        {"[store]\npooler = \"statement\"\n", "store.pooler: must be \"none\", \"session\" or \"transaction\""},
        {"[store]\npooler = \"transaction\"\nnotify = true\n", "store.notify: cannot be true with pooler = \"transaction\""},
        {"[api]\ntoken_file = \"/nonexistent/token\"\n", "Failed to read api.token_file '/nonexistent/token'"},
        {"[inbox\n", "Failed to parse configuration 'test.toml' at line 1"},
        {"[images]\ngc_max_bytes = \"lots\"\n", "images.gc_max_bytes: 'lots' is not a size"},
        {"[images]\ngc_max_bytes = 1024\n", "images.gc_max_bytes: expected a string"},
        {"[images]\ngc_max_disk_percent = 0\n", "images.gc_max_disk_percent: must be between 1 and 100"},
        {"[images]\ngc_threshold = 5\n", "images.gc_threshold: unknown key"},
    };
    for (const auto& c : cases) {
        auto r = parse_config(c.toml, "test.toml");
        REQUIRE_FALSE(r);
        INFO(r.error().describe());
        CHECK(r.error().describe().find(c.expect) != std::string::npos);
    }
}

TEST_CASE("a missing default file means defaults; a named one must exist")
{
    CHECK(nps::config::load_config("/nonexistent/config.toml", false));
    auto required = nps::config::load_config("/nonexistent/config.toml", true);
    REQUIRE_FALSE(required);
    CHECK(required.error().describe().find("No such file") != std::string::npos);
}

TEST_CASE("[sandbox]: defaults fail closed; keys are checked")
{
    auto defaults = parse_config("", "test.toml");
    REQUIRE(defaults);
    CHECK_FALSE(defaults->allow_host_network);
    CHECK_FALSE(defaults->allow_unenforced_limits);
    CHECK(defaults->seccomp_allow.empty());

    auto set = parse_config("[sandbox]\nallow_host_network = true\nallow_unenforced_limits = true\n"
                            "seccomp_allow = [\"syslog\", \"acct\"]\n",
                            "test.toml");
    REQUIRE_MESSAGE(set.has_value(), (set ? std::string() : set.error().describe()));
    CHECK(set->allow_host_network);
    CHECK(set->allow_unenforced_limits);
    CHECK(set->seccomp_allow == std::vector<std::string>{"syslog", "acct"});

    struct Bad {
        const char* toml;
        const char* message;
    } cases[] = {
        {"[sandbox]\nallow_host_network = \"yes\"\n", "sandbox.allow_host_network: expected true or false"},
        {"[sandbox]\nseccomp_allow = [\"../x\"]\n", "sandbox.seccomp_allow: '../x' is not a system call name"},
        {"[sandbox]\nseccomp_allow = \"mount\"\n", "sandbox.seccomp_allow: expected an array of strings"},
        {"[sandbox]\nnetwork = \"host\"\n", "sandbox.network: unknown key"},
    };
    for (const auto& c : cases) {
        auto r = parse_config(c.toml, "test.toml");
        REQUIRE_FALSE(r);
        CHECK_MESSAGE(r.error().describe().find(c.message) != std::string::npos, r.error().describe());
    }
}

TEST_CASE("[images]: registry keys for image pull")
{
    auto defaults = parse_config("", "test.toml");
    REQUIRE(defaults);
    CHECK(defaults->registries.default_registry.empty());
    CHECK(defaults->registries.insecure_registries.empty());
    CHECK(defaults->registries.ca_file.empty());
    CHECK(defaults->registries.credentials.empty());

    auto c = parse_config(R"(
[images]
default_registry = "registry.example.com:5000"
insecure_registries = ["127.0.0.1:5000", "localhost"]
ca_file = "/etc/nps-runner/registry-ca.pem"
[images.auth."registry.example.com:5000"]
username = "puller"
password = "secret"
[images.auth."127.0.0.1:5000"]
username = "ci"
password_file = "/etc/nps-runner/registry-password"
)",
                          "test.toml");
    REQUIRE_MESSAGE(c.has_value(), (c ? std::string() : c.error().describe()));
    CHECK(c->registries.default_registry == "registry.example.com:5000");
    CHECK(c->registries.insecure_registries == std::vector<std::string>{"127.0.0.1:5000", "localhost"});
    CHECK(c->registries.ca_file == "/etc/nps-runner/registry-ca.pem");
    REQUIRE(c->registries.credentials.size() == 2);
    CHECK(c->registries.credentials.at("registry.example.com:5000").username == "puller");
    CHECK(c->registries.credentials.at("registry.example.com:5000").password == "secret");
    CHECK(c->registries.credentials.at("127.0.0.1:5000").password_file == "/etc/nps-runner/registry-password");

    struct Case {
        const char* toml;
        const char* expect;
    } cases[] = {
        {"[images]\ndefault_registry = \"https://reg\"\n", "images.default_registry: 'https://reg' is not a registry"},
        {"[images]\ninsecure_registries = [\"reg:port\"]\n", "images.insecure_registries: 'reg:port' is not a registry"},
        {"[images]\ninsecure_registries = \"reg\"\n", "images.insecure_registries: expected an array of strings"},
        {"[images]\nca_file = \"\"\n", "images.ca_file: must name a file"},
        {"[images]\nauth = 5\n", "images.auth must be a table"},
        {"[images.auth.\"reg/x\"]\nusername = \"u\"\npassword = \"p\"\n", "the key must be a registry HOST[:PORT]"},
        {"[images.auth.\"reg\"]\npassword = \"p\"\n", "images.auth.\"reg\".username: is required"},
        {"[images.auth.\"reg\"]\nusername = \"a:b\"\npassword = \"p\"\n", "images.auth.\"reg\".username: is required"},
        {"[images.auth.\"reg\"]\nusername = \"u\"\n", "set exactly one of password and password_file"},
        {"[images.auth.\"reg\"]\nusername = \"u\"\npassword = \"p\"\npassword_file = \"/f\"\n",
         "set exactly one of password and password_file"},
        {"[images.auth.\"reg\"]\nusername = \"u\"\npassword = \"p\"\ntoken = \"t\"\n", "images.auth.\"reg\".token: unknown key"},
        {"[images.auth.\"Reg\"]\nusername = \"u\"\npassword = \"p\"\n[images.auth.\"reg\"]\nusername = \"u\"\npassword = \"p\"\n",
         "configured twice"},
    };
    for (const auto& k : cases) {
        auto r = parse_config(k.toml, "test.toml");
        REQUIRE_MESSAGE(!r, k.toml);
        INFO(r.error().describe());
        CHECK(r.error().describe().find(k.expect) != std::string::npos);
    }
}

TEST_CASE("[workers]: defaults, every key, and refusals")
{
    auto d = parse_config("", "test.toml");
    REQUIRE(d);
    CHECK(d->workers.max_concurrent == 8);
    CHECK(d->workers.default_idle_timeout_seconds == 0);
    CHECK(d->workers.default_max_runtime_seconds == 14'400);
    CHECK(d->workers.stop_grace_seconds == 5);
    CHECK(d->workers.log_max_bytes == 1024 * 1024);
    CHECK(d->workers.log_keep == 1);

    auto c = parse_config(R"(
[workers]
max_concurrent = 32
default_idle_timeout_seconds = 60
default_max_runtime_seconds = 600
stop_grace_seconds = 2
log_max_bytes = "4Mi"
log_keep = 3
)",
                          "test.toml");
    REQUIRE_MESSAGE(c.has_value(), (c ? std::string() : c.error().describe()));
    CHECK(c->workers.max_concurrent == 32);
    CHECK(c->workers.default_idle_timeout_seconds == 60);
    CHECK(c->workers.default_max_runtime_seconds == 600);
    CHECK(c->workers.stop_grace_seconds == 2);
    CHECK(c->workers.log_max_bytes == 4 * 1024 * 1024);
    CHECK(c->workers.log_keep == 3);

    auto integer = parse_config("[workers]\nlog_max_bytes = 65536\n", "test.toml");
    REQUIRE(integer);
    CHECK(integer->workers.log_max_bytes == 65536);

    for (const char* bad : {"[workers]\nmax_concurent = 3\n", "[workers]\nmax_concurrent = 0\n",
                            "[workers]\nmax_concurrent = 100000\n", "[workers]\nlog_max_bytes = 10\n",
                            "[workers]\nlog_max_bytes = \"lots\"\n", "[workers]\nlog_keep = -1\n",
                            "[workers]\nstop_grace_seconds = \"5\"\n",
                            "[workers]\ndefault_idle_timeout_seconds = 700\ndefault_max_runtime_seconds = 600\n"}) {
        CAPTURE(bad);
        auto r = parse_config(bad, "test.toml");
        REQUIRE_FALSE(r);
        CHECK(r.error().message.find("workers.") != std::string::npos);
    }
}

TEST_CASE("[workers] default_disk and max_disk: defaults, sizes, the ceiling")
{
    auto d = parse_config("", "test.toml");
    REQUIRE(d);
    CHECK(d->workers.default_disk == 256ull << 20);
    CHECK(d->workers.max_disk == 1ull << 30);
    auto c = parse_config("[workers]\ndefault_disk = \"64Mi\"\nmax_disk = \"2Gi\"\n", "test.toml");
    REQUIRE_MESSAGE(c.has_value(), (c ? std::string() : c.error().describe()));
    CHECK(c->workers.default_disk == 64ull << 20);
    CHECK(c->workers.max_disk == 2ull << 30);
    for (const char* bad : {"[workers]\ndefault_disk = \"2Gi\"\n",  // above the default max_disk
                            "[workers]\ndefault_disk = \"128Mi\"\nmax_disk = \"64Mi\"\n",
                            "[workers]\ndefault_disk = 4096\n", "[workers]\nmax_disk = \"lots\"\n",
                            "[workers]\nmax_disk = \"2Ti\"\n"}) {
        CAPTURE(bad);
        auto r = parse_config(bad, "test.toml");
        REQUIRE_FALSE(r);
        CHECK(r.error().message.find("workers.") != std::string::npos);
    }
}
