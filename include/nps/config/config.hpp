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
#include "nps/proto/announce.hpp"
#include "nps/proto/destination_policy.hpp"
#include "nps/store/store.hpp"
#include "nps/supervisor/supervisor.hpp"

namespace nps::config {

enum class UserNamespaceMode { automatic, on, off };

// "auto", "on", "off".
const char* to_string(UserNamespaceMode mode);

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

// [images.auth."host:port"]: credentials for one registry.
struct RegistryAuth {
    std::string username;
    std::string password;       // exactly one of password and password_file
    std::string password_file;  // read (first line) when a pull needs it
};

// [workers]: the supervisor's policy (docs/configuration.md, docs/supervisor.md).
struct WorkerPolicy {
    // The defaults are the supervisor's own (supervisor/supervisor.hpp, worker_log.hpp).
    std::size_t max_concurrent = supervisor::kDefaultMaxConcurrent;  // running workers; more wait in a queue
    std::uint32_t default_idle_timeout_seconds = 0;    // when the SpawnSpec has none; 0: no idle limit
    std::uint32_t default_max_runtime_seconds =        // when the SpawnSpec has none; 0: no limit
        static_cast<std::uint32_t>(supervisor::kDefaultMaxRuntime.count());
    std::uint32_t stop_grace_seconds =                 // cancel frame → SIGTERM → SIGKILL, this apart
        static_cast<std::uint32_t>(supervisor::kDefaultStopGrace.count());
    std::uint64_t log_max_bytes = supervisor::LogLimits{}.max_bytes;  // per log file (stdout.log, stderr.log)
    std::uint32_t log_keep = supervisor::LogLimits{}.keep;            // rotated files kept per stream
    std::uint32_t log_retention_hours = 168;        // finished workers' logs are deleted after; 0: kept forever
    std::size_t spawn_pool = supervisor::kDefaultSpawnPool;  // parked sandbox children (docs/supervisor.md); 0: none
    // A worker's disk: its overlay upper, /tmp and /dev/shm together (docs/sandbox.md "Disk").
    std::uint64_t default_disk = limits::kDefaultWorkerDiskBytes;  // every worker's; `run` without --disk
    std::uint64_t max_disk = limits::kDefaultMaxWorkerDiskBytes;   // ceiling of default_disk and `run --disk`
    // Total of all workers' log directories: above it, finished workers'
    // logs go, oldest first; 0: no cap.
    std::uint64_t logs_max_bytes = std::uint64_t{1} << 30;
    // Limits of a worker whose SpawnSpec sets none (0: no limit of that
    // kind), and the ceilings of what a SpawnSpec may ask (0: no ceiling);
    // each ceiling is at least its default (docs/configuration.md "Limits"
    // says why these values).
    std::int64_t default_memory_bytes = std::int64_t{512} << 20;  // 512Mi
    std::int64_t default_cpu_millicores = 1000;                 // 1 CPU
    std::int64_t default_pids = 256;
    std::int64_t max_memory_bytes = std::int64_t{4} << 30;      // 4Gi
    std::int64_t max_cpu_millicores = default_max_cpu_millicores();
    std::int64_t max_pids = 4096;
    std::uint32_t max_runtime_seconds_ceiling = 24 * 3600;

    // max_cpu's default: 4 CPUs, or all of this host's online CPUs if it has more.
    static std::int64_t default_max_cpu_millicores();
};

// [runner]: how `serve` claims and executes tasks (docs/executor.md).
struct ExecutorPolicy {
    std::uint32_t lease_seconds = 60;        // asked for each claim; renewed every third of it
    std::uint32_t claim_interval_ms = 500;   // look for claimable tasks (other processes' deposits, expired leases)
    std::size_t max_tasks = 0;               // tasks executed at once; 0: workers.max_concurrent
    bool conformance = false;                // one attempt at a time in portable order (execution = "conformance")
    std::uint32_t shutdown_grace_seconds = 30;  // SIGTERM: running tasks may finish this long, then are stopped
};

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
    ExecutorPolicy executor;
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
    UserNamespaceMode user_namespace = UserNamespaceMode::automatic;
    // Worker slot i maps ids 0..count-1 onto first + i*count.. (docs/sandbox.md):
    // 0x70000000, above systemd's container and dynamic ranges and any /etc/subuid
    // range an installer hands out (checked at start).
    std::int64_t userns_first_host_id = 0x7000'0000;
    std::int64_t userns_id_count = 65'536;        // ids mapped per slot

    // [images] (docs/images.md): thresholds above which `image gc` evicts
    // unpacked layers of images not in use. 0 / 100 disable.
    std::uint64_t images_gc_max_bytes = 0;         // images/ (blobs + unpacked layers)
    unsigned images_gc_max_disk_percent = 90;      // fullness of the filesystem holding images/
    // [images] registry pulls (docs/images.md "Pull").
    std::string images_default_registry;                   // "host[:port]" for references naming none
    std::vector<std::string> images_insecure_registries;   // "host[:port]" reached over plain http
    std::string images_ca_file;                            // PEM trusted besides the system CAs
    std::map<std::string, RegistryAuth> images_auth;       // by "host[:port]"

    WorkerPolicy workers;

    // [spawn] (docs/spawnspec.md): SpawnSpec resolution.
    std::vector<proto::DestinationAllowEntry> spawn_allow_destinations;  // private destinations allowed (IP, CIDR, host name)
    std::optional<std::string> spawn_ca_file;            // PEM CAs trusted besides the system store
    std::optional<std::string> spawn_registry_url;       // remote NDP registry for NIDs not announced locally
    std::optional<std::string> spawn_nwp_resolver_url;   // nps-registry resolving nwp:// targets
    std::uint32_t spawn_fetch_timeout_seconds = limits::kDefaultSpawnFetchTimeoutSeconds;
    std::size_t spawn_max_spec_bytes = limits::kDefaultSpawnSpecBytes;
    unsigned spawn_max_redirects = limits::kDefaultSpawnRedirects;
    std::int64_t spawn_cache_max_age_seconds = limits::kDefaultSpawnCacheMaxAgeSeconds;
    std::size_t spawn_cache_entries = limits::kDefaultSpawnCacheEntries;

    ReportPolicy report;
    UpstreamPolicy upstream;

    // [ndp] (docs/api.md "Signed announces"): require_signed and the trusted
    // publisher keys, by NID (raw 32-byte Ed25519 keys).
    proto::ndp::AnnounceTrust announce_trust;

    std::string database_path() const { return state_dir + "/runner.db"; }
    // How to open the task store: store_url, else runner.db.
    store::OpenOptions store_options(store::Synchronous sync) const
    {
        return {.path = database_path(), .url = store_url, .synchronous = sync};
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
