// SPDX-License-Identifier: Apache-2.0
// Runner configuration: a TOML file (default /etc/nps-runner/config.toml),
// then command-line flags on top (flags win). Unknown keys and wrong types
// are errors that name the key, so a typo never silently falls back to a
// default. docs/configuration.md lists every key.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "nps/base/limits.hpp"
#include "nps/base/result.hpp"
#include "nps/executor/executor_options.hpp"
#include "nps/image/registry.hpp"
#include "nps/proto/announce.hpp"
#include "nps/proto/destination_policy.hpp"
#include "nps/sandbox/userns.hpp"
#include "nps/spawn/resolver.hpp"
#include "nps/store/store.hpp"

namespace nps::config {

inline constexpr const char* kDefaultConfigPath = "/etc/nps-runner/config.toml";
inline constexpr const char* kDefaultStateDir = "/var/lib/nps-runner";
inline constexpr const char* kDefaultListen = "127.0.0.1:17437";  // the NOP port
inline constexpr const char* kDefaultSocket = "/run/nps-runner/api.sock";
// The system group whose members may use the API socket and read the
// generated api.token (created by the packages; optional: without it both
// stay root's alone). docs/api.md "Access".
inline constexpr const char* kRunnerGroup = "nps-runner";
// The bearer token `serve` generates in the state directory when
// api.require_token holds and no api.token/api.token_file is set.
inline constexpr const char* kGeneratedTokenFile = "api.token";

// [store] pooler: what a PostgreSQL store's url leads to (docs/scale-out.md
// "Poolers"). A pooler in session mode is a direct connection to us.
enum class StorePooler { none, transaction };
std::string_view to_string(StorePooler pooler);

// [report] (docs/reporting.md): where node states, task callbacks and
// completion messages go,
// and how hard the durable outbox tries.
struct ReportPolicy {
    std::optional<std::string> task_store_url;   // PATCH {url}/{task_id}/nodes/{node_id}; none: the own store is the task store
    std::optional<std::string> task_store_token; // bearer token (task_store_token or task_store_token_file)
    std::optional<std::string> npsd_url;         // completion messages: POST {url}/v1/inbox/{reply_to}; none: our own inbox
    std::optional<std::string> npsd_token;       // bearer token (npsd_token or npsd_token_file)
    std::optional<std::string> ca_file;          // PEM CAs trusted besides the system store (task store and callbacks)
    std::uint32_t timeout_seconds = limits::kDefaultReportTimeoutSeconds;     // one delivery attempt
    std::uint32_t retry_initial_ms = limits::kDefaultReportRetryInitialMs;    // first backoff, doubled per failure
    std::uint32_t retry_max_ms = limits::kDefaultReportRetryMaxMs;            // backoff ceiling
    std::int64_t max_age_seconds = limits::kDefaultReportMaxAgeSeconds;       // a node report older than this is given up
    std::vector<proto::DestinationAllowEntry> callback_allow_destinations;  // private callback destinations allowed (IP, CIDR, host name)
};

// [upstream] (docs/upstream.md): take the TaskFrames of an inbox on a
// remote npsd (or any server of the npsd inbox API) into ours.
struct UpstreamPolicy {
    std::optional<std::string> npsd_url;  // "https://npsd.example:8443" (the API root); unset: no upstream
    std::string inbox;                    // the NID pulled; "": the first of [runner] inboxes
    std::optional<std::string> token;     // sent as a bearer token
    std::uint32_t wait_seconds = 20;      // long-poll wait per peek (1..30, npsd's cap)
    std::uint32_t batch = 16;             // messages per peek (1..256)
};

struct Config {
    // [runner]
    std::string state_dir = kDefaultStateDir;
    std::string runner_nid;             // default: urn:nps:node:<hostname>:nps-runner
    std::vector<std::string> inboxes;   // NIDs this runner claims from
    executor::ClaimPolicy executor;
    bool log_json = false;              // log_format = "json": one JSON object per log line

    // [api]
    std::string listen = kDefaultListen;  // "" disables the TCP listener
    std::string socket = kDefaultSocket;  // "" disables the unix socket
    mode_t socket_mode = 0660;
    std::optional<std::string> token;     // bearer token (api.token or api.token_file; else serve's generated one)
    bool require_token = true;            // TCP requests need the token; false (explicit) opens TCP when no token is set
    std::vector<std::string> allowed_nids;  // empty: the API hosts an inbox for any NID
    std::string task_inbox;                 // the SDK routes' inbox (POST /task); "": the first of `inboxes`

    // [inbox]
    std::int64_t default_ttl_seconds = 3600;
    std::int64_t max_depth = 10'000;
    std::size_t max_message_bytes = 256 * 1024;
    std::int64_t max_inboxes = 1000;  // NIDs that may hold tasks at once (a deposit for one more is refused)

    // [store]
    // url (or `serve --store`): "postgresql://…" puts the tasks in that
    // PostgreSQL database, shared by runners on several hosts
    // (docs/scale-out.md); empty: the embedded <state_dir>/runner.db. Images
    // stay in runner.db either way (per host).
    std::string store_url;
    // notify: with a PostgreSQL store, wake claimers on every host at once
    // with LISTEN/NOTIFY; false for a pooler in transaction mode (which
    // cannot LISTEN): other hosts' deposits are then claimed at the next poll.
    bool store_notify = true;
    // pooler: what the url leads to. "none": PostgreSQL, or a pooler in
    // session mode (the same to us); "transaction": a pooler in transaction
    // mode (store::OpenOptions::transaction_pooler; notify is then false and
    // may not be set true).
    StorePooler store_pooler = StorePooler::none;
    store::Synchronous synchronous = store::Synchronous::full;           // deposits and the API's writes
    store::Synchronous progress_synchronous = store::Synchronous::normal;  // the executor's claims and node records
    // task_retention_hours (docs/retention.md): finished tasks older than this
    // are deleted; kept here in seconds (the key takes fractional hours).
    std::int64_t task_retention_seconds = 168 * 3600;
    // [sandbox]
    bool allow_host_network = false;        // may workers use the host's network
    bool allow_unenforced_limits = false;   // run with a limit the host cannot enforce (warned)
    std::vector<std::string> seccomp_allow; // system calls allowed beyond the default filter
    // Workers (and `run`) in a user namespace: auto (on where the kernel
    // allows it, probed at start), on ("true"), off ("false").
    sandbox::UsernsMode user_namespace = sandbox::UsernsMode::automatic;
    // The workers' host ids (sandbox/userns.hpp); int64 so that the file's
    // out-of-range values are refused, not wrapped.
    std::int64_t userns_first_host_id = sandbox::kDefaultUsernsFirstHostId;
    std::int64_t userns_id_count = sandbox::kDefaultUsernsIdCount;  // ids mapped per slot

    // [images] (docs/images.md): thresholds above which `image gc` evicts
    // unpacked layers of images not in use. 0 / 100 disable.
    std::uint64_t images_gc_max_bytes = 0;         // images/ (blobs + unpacked layers)
    unsigned images_gc_max_disk_percent = 90;      // fullness of the filesystem holding images/
    // [images] registry pulls (docs/images.md "Pull"): default_registry,
    // insecure_registries, ca_file and [images.auth."host:port"].
    image::RegistrySettings registries;

    executor::WorkerPolicy workers;

    // [spawn] (docs/spawnspec.md): SpawnSpec resolution.
    // allow_destinations, ca_file, registry_url, nwp_resolver_url,
    // fetch_timeout_seconds (fetch.timeout_ms), max_spec_bytes
    // (fetch.max_body_bytes), max_redirects, cache_max_age_seconds, cache_entries.
    spawn::ResolverOptions spawn;

    ReportPolicy report;
    UpstreamPolicy upstream;

    // [ndp] (docs/api.md "Signed announces"): require_signed and the trusted
    // publisher keys, by NID (raw 32-byte Ed25519 keys).
    proto::ndp::AnnounceTrust announce_trust;

    std::string database_path() const { return state_dir + "/runner.db"; }
    // How to open the task store: store_url, else runner.db.
    store::OpenOptions store_options(store::Synchronous sync) const
    {
        return {.path = database_path(),
                .url = store_url,
                .synchronous = sync,
                .transaction_pooler = store_pooler == StorePooler::transaction,
                .node_reports = report.task_store_url.has_value()};
    }
    std::string generated_token_path() const { return state_dir + "/" + kGeneratedTokenFile; }
};

// Reads `path`. A missing file is an error only when `required` (the user
// named it); otherwise defaults are returned.
Result<Config> load_config(const std::string& path, bool required);

// Parses TOML text (for tests); `origin` names the source in errors.
Result<Config> parse_config(const std::string& toml_text, const std::string& origin);

// An http(s) URL with a host and no user-info, query or fragment: what every
// service URL of the config (and serve --upstream-npsd) must be.
bool is_service_url(std::string_view url);

// The default runner NID for this host.
std::string default_runner_nid();

}  // namespace nps::config
