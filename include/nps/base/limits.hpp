// SPDX-License-Identifier: Apache-2.0
// Every size or count a user can influence has a named limit here, in one
// place. Spec limits cite their section; the rest are our choices
// (docs/limits.md explains them).
#pragma once

#include <cstddef>
#include <cstdint>

namespace nps::limits {

// --- NOP TaskFrame (NPS-5 §3.1, §9.2) ---
inline constexpr std::size_t kMaxDagNodes = 32;                // §9.2 → NOP-TASK-DAG-TOO-LARGE
inline constexpr std::size_t kMaxDelegationChain = 3;          // §9.2 entities
inline constexpr std::size_t kMaxConditionChars = 512;         // §9.2
inline constexpr std::size_t kMaxMappingPathSegments = 8;      // §9.2
inline constexpr std::uint32_t kMaxTaskTimeoutMs = 3'600'000;  // §3.1
inline constexpr std::uint32_t kDefaultTaskTimeoutMs = 30'000; // §3.1
inline constexpr std::size_t kMaxEdges = 32 * 31 / 2;          // a DAG of 32 nodes has at most n(n-1)/2 edges
inline constexpr std::size_t kMaxIdChars = 128;                // task_id, node ids (ours)
inline constexpr std::size_t kMaxNidChars = 256;               // NIDs (ours)
inline constexpr std::size_t kMaxUrlChars = 2048;              // action, callback_url (ours)
inline constexpr std::size_t kMaxJsonDepth = 32;               // nesting of any accepted JSON (ours)
inline constexpr std::size_t kMaxRetryOnCodes = 64;            // retry_policy.retry_on entries (ours)

// --- NCP frames (NPS-1 §3, §8; docs/ncp-frames.md) ---
inline constexpr std::uint32_t kNcpMaxDefaultPayloadBytes = 65'535;   // §3.1: the 2-byte length of the 4-byte header
// A frame we accept, whatever its header can express (EXT=1 allows 4 GiB):
// one HTTP body (kMaxBodyBytes) less the 8-byte extended header.
inline constexpr std::size_t kMaxNcpFramePayloadBytes = (1 << 20) - 8;
// Tier-2 MsgPack → JSON (ours): nesting, one string or map key, entries of
// one array or map, and the JSON text produced (escapes can grow it ~6×).
inline constexpr std::size_t kMaxMsgpackDepth = 32;                   // as kMaxJsonDepth
inline constexpr std::size_t kMaxMsgpackStringBytes = 256 * 1024;     // as kMaxNodeResultBytes
inline constexpr std::size_t kMaxMsgpackContainerEntries = 65'536;
inline constexpr std::size_t kMaxMsgpackJsonBytes = 4 << 20;

// --- NDP registry model and NIP signatures (NPS-4 §7.3-§7.5; NPS-3 §5.1) ---
inline constexpr std::int64_t kNdpReplayWindowSeconds = 300;          // §7.3: org-private, public-federated
inline constexpr std::uint32_t kNdpDefaultHeartbeatIntervalMs = 60'000;  // §3.1, signed when absent (§7.4)
inline constexpr std::size_t kMaxNdpRegistryEntries = 100'000;        // NIDs one registry model tracks (ours)
inline constexpr std::size_t kMaxNdpRolesOrProtocols = 64;            // node_roles, bridge_*protocols entries (ours)
inline constexpr std::size_t kMaxNdpTrustedKeys = 1024;               // trusted announce keys (ours)

// --- Leases (NPS-5 §8.1 / CR-0007 §4.1) ---
inline constexpr std::uint32_t kMinLeaseSeconds = 10;
inline constexpr std::uint32_t kMaxLeaseSeconds = 600;

// --- Inbox (npsd-compatible, DESIGN §3.2) ---
inline constexpr std::size_t kMaxBodyBytes = 1 << 20;          // any HTTP request body
inline constexpr std::size_t kDefaultMaxMessageBytes = 256 * 1024;  // a deposited TaskFrame
inline constexpr std::int64_t kDefaultInboxTtlSeconds = 3600;
inline constexpr std::int64_t kMaxInboxTtlSeconds = 7 * 24 * 3600;
// task prune --older-than and [store] task_retention_hours: at most 100 years.
inline constexpr std::int64_t kMaxRetentionSeconds = std::int64_t{100} * 365 * 24 * 3600;
inline constexpr std::int64_t kDefaultMaxInboxDepth = 10'000;
// An Idempotency-Key naming a completion message deposited into an inbox.
inline constexpr std::size_t kMaxIdempotencyKeyBytes = 256;
inline constexpr int kMinInboxPriority = -1000;
inline constexpr int kMaxInboxPriority = 1000;
inline constexpr std::uint32_t kMaxPeekWaitSeconds = 30;       // npsd NPSD_MAX_INBOX_WAIT_SECONDS
inline constexpr std::uint32_t kDefaultPeekBatch = 16;
inline constexpr std::uint32_t kMaxPeekBatch = 256;
inline constexpr std::uint32_t kMaxClaimBatch = 256;
inline constexpr std::uint32_t kMaxTaskListLimit = 1000;
inline constexpr std::uint32_t kDefaultTaskListLimit = 100;

// --- Node results and announces ---
inline constexpr std::size_t kMaxNodeResultBytes = 256 * 1024;
inline constexpr std::size_t kMaxSpawnSpecRefChars = 64 * 1024;

// --- SpawnSpec resolution (ours; docs/spawnspec.md) ---
// The JSON of one SpawnSpec, inline or fetched (the reference runner's 64 KiB).
// An inline ref is also bounded by kMaxSpawnSpecRefChars, i.e. ~48 KiB of JSON.
inline constexpr std::size_t kDefaultSpawnSpecBytes = 64 * 1024;   // [spawn] max_spec_bytes default
inline constexpr std::size_t kMaxSpawnSpecBytes = 1 << 20;         // [spawn] max_spec_bytes ceiling
inline constexpr std::size_t kMaxSpawnSpecJsonDepth = 16;          // nesting of a SpawnSpec document
inline constexpr std::size_t kMaxSpawnSpecArgs = 1024;             // command entries
inline constexpr std::size_t kMaxSpawnSpecEnv = 1024;              // env entries
inline constexpr std::size_t kMaxSpawnSpecEnvNameChars = 256;      // one env variable name
inline constexpr std::size_t kMaxSpawnSpecExtensions = 64;         // "x-…" members kept
inline constexpr std::uint32_t kDefaultSpawnFetchTimeoutSeconds = 30;  // one resolution, DNS and redirects included
inline constexpr std::uint32_t kMaxSpawnFetchTimeoutSeconds = 300;
inline constexpr unsigned kDefaultSpawnRedirects = 5;              // the reference runner's limit
inline constexpr unsigned kMaxSpawnRedirects = 10;
inline constexpr std::size_t kMaxSpawnAllowDestinations = 256;     // [spawn] allow_destinations entries
inline constexpr std::size_t kMaxNdpRegistryAnswerBytes = 64 * 1024;  // an NDP registry's resolve answer
inline constexpr std::size_t kMaxSpawnCaFileBytes = 4 << 20;       // spawn.ca_file (and the system bundle)
inline constexpr std::int64_t kDefaultSpawnCacheMaxAgeSeconds = 3600;  // cap on a response's max-age
inline constexpr std::int64_t kMaxSpawnCacheMaxAgeSeconds = 86'400;
inline constexpr std::size_t kDefaultSpawnCacheEntries = 256;
inline constexpr std::size_t kMaxSpawnCacheEntries = 100'000;
inline constexpr std::size_t kMaxHttpValidatorChars = 1024;        // an ETag or Last-Modified kept for revalidation

// --- HTTP server ---
// docs/api.md "Limits and timeouts". Per listener (TCP, unix socket): at the
// cap a new connection evicts the oldest one still without a complete request
// head, so half-open connections cannot lock a well-behaved client out.
inline constexpr unsigned kMaxHttpConnections = 512;
// Accepted above the cap while evicted connections are being closed (MHD
// accepts at most 10 connections per run).
inline constexpr unsigned kHttpConnectionEvictionSlack = 32;
// Per non-loopback peer address (loopback peers share 127.0.0.1 with the
// daemon's own clients: only the listener cap and the head deadline bound them).
inline constexpr unsigned kMaxHttpConnectionsPerPeer = 64;
// A streamed response (event feed, followed log): bytes waiting for a slow
// client before it is dropped (it resumes with Last-Event-ID).
inline constexpr std::size_t kMaxHttpStreamBufferBytes = 1 << 20;
// Live feeds (event streams and followed logs) the API serves at once.
inline constexpr std::size_t kMaxLiveFeeds = 64;
// How often live feeds look for what other connections and processes wrote
// (this process's own writes wake them at once), and the keep-alive comment
// a quiet Server-Sent Events stream sends so dead peers and proxies notice.
inline constexpr unsigned kLiveFeedPollMs = 250;
inline constexpr unsigned kLiveFeedKeepaliveSeconds = 15;
// The largest Last-Event-ID / ?after= cursor accepted (an event seq or pos).
inline constexpr std::int64_t kMaxEventCursor = std::int64_t{1} << 53;
// Events one poll sends a feed at most (a resume far back continues next poll).
inline constexpr std::size_t kLiveFeedBatchEvents = 500;
// Idle time (no byte in or out) after which MHD closes a connection; a parked
// long-poll (suspended) is not idle.
inline constexpr unsigned kHttpConnectionTimeoutSeconds = 60;
// From accept (or the end of the previous response on a kept-alive
// connection) to the end of the request head; a client dripping the head
// byte by byte is closed at this deadline (slowloris).
inline constexpr unsigned kHttpRequestHeadTimeoutSeconds = 5;
// Memory per connection for the request head and MHD's buffers; a longer head
// gets 431 (or 414 for the request line) from MHD.
inline constexpr std::size_t kHttpConnectionMemoryBytes = 32 * 1024;

// --- Worker cgroups (ours; docs/cgroups.md) ---
inline constexpr std::int64_t kMinCpuMillicores = 10;              // the kernel's 1 ms quota per 100 ms period
inline constexpr std::int64_t kMaxCpuMillicores = 1'000'000'000;   // keeps quota arithmetic far from overflow
inline constexpr std::int64_t kMinMemoryBytes = 1 << 20;           // below this nothing starts; refuse early

// --- Workers and `run` (ours) ---
inline constexpr std::uint32_t kMaxRunSeconds = 7 * 24 * 3600;     // --max-runtime, --idle-timeout

// --- Workers: supervision and the ndjson-v1 protocol (ours; docs/worker-protocol.md, docs/supervisor.md) ---
// A stdout line that may be a frame (it starts with '{') is buffered up to
// this size; a longer one is never parsed (NCP-FRAME-PAYLOAD-TOO-LARGE).
// Log lines are streamed to the log and never buffered.
inline constexpr std::size_t kMaxWorkerLineBytes = 512 * 1024;
// All frames one worker may send, summed (a worker streaming progress
// forever cannot make the runner parse without bound).
inline constexpr std::uint64_t kMaxWorkerFrameBytesTotal = 64ull << 20;
// A final frame's `data` (canonical JSON) is a node result: kMaxNodeResultBytes.
inline constexpr std::size_t kMaxWorkerErrorCodeChars = 64;        // error.code of a final frame
inline constexpr std::size_t kMaxWorkerErrorMessageBytes = 4096;   // error.message, truncated beyond
inline constexpr std::size_t kMaxDelegateFrameBytes = 1 << 20;     // the DelegateFrame line written to stdin
inline constexpr std::size_t kMaxConcurrentWorkers = 4096;         // [workers] max_concurrent
inline constexpr std::size_t kMaxQueuedWorkers = 65'536;           // workers waiting for a slot
inline constexpr std::size_t kDefaultNodeLogTailBytes = 64 * 1024;  // GET …/nodes/{id}/log
inline constexpr std::size_t kMaxNodeLogTailBytes = 1 << 20;
inline constexpr std::size_t kMaxRunnerTasks = 4096;               // [runner] max_tasks: tasks one serve executes at once
inline constexpr std::uint32_t kMaxStopGraceSeconds = 3600;        // [workers] stop_grace_seconds
inline constexpr std::uint64_t kMinWorkerLogBytes = 4096;          // [workers] log_max_bytes
inline constexpr std::uint64_t kMaxWorkerLogBytes = 1ull << 30;
inline constexpr std::uint32_t kMaxWorkerLogKeep = 100;            // [workers] log_keep (rotated files)
inline constexpr std::int64_t kMaxWorkerLogRetentionHours = 24 * 366;  // [workers] log_retention_hours
// Worker log directories one pruning round deletes at most (it runs on a pool thread).
inline constexpr std::size_t kWorkerLogPruneBatch = 1000;
inline constexpr std::size_t kWorkerOutcomeTailBytes = 4096;       // stderr tail carried by an outcome

// --- Images (ours; docs/images.md) ---
// JSON documents read from an image: sizes are checked before parsing.
inline constexpr std::size_t kMaxImageManifestBytes = 4 << 20;      // an image manifest (the distribution spec's 4 MiB)
inline constexpr std::size_t kMaxImageIndexBytes = 4 << 20;         // an image index / manifest list, index.json
inline constexpr std::size_t kMaxImageConfigBytes = 8 << 20;        // an image config (long histories)
inline constexpr std::size_t kMaxDockerManifestBytes = 4 << 20;     // a docker-archive's manifest.json
inline constexpr std::size_t kMaxImageJsonDepth = 16;               // nesting of any of them
inline constexpr std::size_t kMaxImageLayers = 128;                 // layers of one image (overlay lowerdirs)
inline constexpr std::size_t kMaxIndexManifests = 1024;             // entries of one index
inline constexpr std::size_t kMaxIndexNesting = 4;                  // index → index → … → manifest
inline constexpr std::size_t kMaxImageConfigArgs = 4096;            // Entrypoint + Cmd entries
inline constexpr std::size_t kMaxImageConfigEnv = 4096;             // Env entries
inline constexpr std::size_t kMaxImageConfigStringBytes = 64 * 1024;  // any one string we hand to the sandbox
inline constexpr std::size_t kMaxImageNames = 256;                  // names (RepoTags, ref annotations) per import
inline constexpr std::size_t kMaxImageRefChars = 255 + 1 + 128;     // repository (255) ':' tag (128)
inline constexpr std::uint64_t kMaxImageBlobBytes = 64ull << 30;    // one blob (a layer) as written to the store
inline constexpr std::size_t kMaxImportArchiveEntries = 100'000;    // entries of an imported tar archive
inline constexpr std::size_t kMaxImportMetadataBytes = 64 << 20;    // JSON files an archive import holds in memory
inline constexpr std::size_t kMaxImportSymlinkHops = 8;             // links followed inside an imported archive

// --- Registry pull (ours; docs/images.md "Pull") ---
inline constexpr std::size_t kMaxRegistryTokenResponseBytes = 1 << 20;  // a token endpoint's JSON answer
inline constexpr std::size_t kMaxRegistryTokenBytes = 64 * 1024;        // the bearer token itself
inline constexpr std::size_t kMaxRegistryErrorBodyBytes = 64 * 1024;    // an error body kept for the message
inline constexpr std::size_t kMaxAuthChallengeChars = 16 * 1024;        // one WWW-Authenticate value (all challenges)
inline constexpr std::size_t kMaxAuthChallenges = 16;                   // challenges in it
inline constexpr std::size_t kMaxAuthParams = 32;                       // parameters of one challenge
inline constexpr long kMaxRegistryRedirects = 5;                        // followed per request (blob CDNs redirect)
inline constexpr int kRegistryAttempts = 4;                             // tries of a request with transient failures
inline constexpr long kRegistryFirstBackoffMs = 500;                    // doubled after each failed try
inline constexpr long kMaxRegistryBackoffMs = 60'000;                   // also caps Retry-After
inline constexpr long kRegistryConnectTimeoutMs = 30'000;               // TCP + TLS handshake
inline constexpr long kRegistryRequestTimeoutMs = 120'000;              // a whole manifest, config or token request
inline constexpr long kRegistryStallSeconds = 60;                       // a blob download below 1 KiB/s this long fails
inline constexpr std::size_t kMaxRegistryCaFileBytes = 4 << 20;         // images.ca_file (and the system bundle)
inline constexpr std::size_t kMaxRegistryPasswordFileBytes = 64 * 1024; // a password_file

// --- Images: layer unpack and overlay rootfs (ours; docs/layers.md) ---
// A layer is refused once its uncompressed tar stream exceeds this many bytes
// (headers, padding and file data alike, so a decompression bomb stops here).
inline constexpr std::uint64_t kLayerDefaultMaxBytes = 16ULL << 30;
// ... or holds more entries (tar headers, whiteouts included).
inline constexpr std::uint64_t kLayerDefaultMaxEntries = 1'000'000;
// An entry's path inside the layer, and a hard or symbolic link's target (PATH_MAX).
inline constexpr std::size_t kLayerMaxPathBytes = 4096;
// Extended attributes carried by one entry: count, and bytes of names plus values.
inline constexpr std::size_t kLayerMaxXattrsPerEntry = 128;
inline constexpr std::size_t kLayerMaxXattrBytesPerEntry = 256 * 1024;
// Lower layers in one overlay mount: overlayfs's own stack limit (OVL_MAX_STACK).
inline constexpr std::size_t kLayerMaxChainDepth = 500;

// --- NOP DAG engine (ours; docs/dag-engine.md) ---
// Nesting of '(', '[' and '!' in one condition: a 512-character condition
// cannot make the recursive-descent parser or the evaluator recurse deeply.
inline constexpr std::size_t kMaxConditionNesting = 32;

// --- Reporting: the outbox, result PATCHes and task callbacks (ours; docs/reporting.md) ---
inline constexpr std::uint32_t kDefaultReportTimeoutSeconds = 10;       // [report] timeout_seconds: one attempt
inline constexpr std::uint32_t kMaxReportTimeoutSeconds = 300;
inline constexpr std::uint32_t kDefaultReportRetryInitialMs = 1000;     // [report] retry_initial_ms
inline constexpr std::uint32_t kDefaultReportRetryMaxMs = 300'000;      // [report] retry_max_ms (5 min)
inline constexpr std::uint32_t kMinReportRetryMs = 10;
inline constexpr std::uint32_t kMaxReportRetryMs = 3'600'000;           // 1 h
inline constexpr std::int64_t kDefaultReportMaxAgeSeconds = 86'400;     // [report] max_age_seconds (24 h)
inline constexpr std::int64_t kMaxReportMaxAgeSeconds = 30 * 86'400;
inline constexpr std::int64_t kMaxReportRetryAfterSeconds = 3600;       // a Retry-After beyond this is capped
inline constexpr std::size_t kMaxReportTokenChars = 4096;               // task_store_token
inline constexpr std::size_t kMaxReportAllowDestinations = 256;         // callback_allow_destinations entries
inline constexpr std::size_t kMaxReportResponseBytes = 64 * 1024;       // a task store's or callback's answer, kept for the log
inline constexpr std::uint32_t kReportClaimBatch = 16;                  // rows one deliverer leases at a time
inline constexpr std::int64_t kReportPollMs = 1000;                     // look for rows of other processes this often
inline constexpr unsigned kCallbackAttempts = 3;                        // NPS-5 §9.4: then abandon
inline constexpr unsigned kMaxCallbackRedirects = 3;                    // 307/308 followed per attempt

// --- Sandbox spawn pool (ours; docs/sandbox.md) ---
// The shared page area a pooled spawn's plan (rootfs path, argv, environment,
// rlimits, seccomp program) must fit in, per parked child.
inline constexpr std::size_t kSpawnPoolPlanBytes = 1 << 20;
// Parked children a SpawnPool keeps at most.
inline constexpr std::size_t kSpawnPoolMaxSize = 64;

// --- Sandbox children held before their execve (ours; docs/sandbox.md) ---
// [workers] warm_seconds at most: a worker kept for the next task holds a
// rootfs, an image pin, a network namespace and a process meanwhile, and
// its SpawnSpec could change under it.
inline constexpr std::int64_t kMaxWarmSeconds = 60;
// What Child::release() may append to a held child's environment: entries,
// and bytes as "K=V\0" each.
inline constexpr std::size_t kMaxReleaseEnvEntries = 64;
inline constexpr std::size_t kMaxReleaseEnvBytes = 16 * 1024;
// A held child's whole environment, its own entries and the release's: the
// array it builds on its stack before its execve.
inline constexpr std::size_t kMaxHeldEnvEntries = kMaxImageConfigEnv + kMaxSpawnSpecEnv + kMaxReleaseEnvEntries;

// --- A worker's writable space (ours; docs/sandbox.md "Disk") ---
// Overlay upper, /tmp and /dev/shm share one tmpfs of the worker's disk
// limit. The default stays below the default memory limit (512 MiB), as
// tmpfs pages count as the worker's memory: a full disk is ENOSPC, not OOM.
inline constexpr std::uint64_t kDefaultWorkerDiskBytes = 256ull << 20;  // [workers] default_disk
inline constexpr std::uint64_t kDefaultMaxWorkerDiskBytes = 1ull << 30; // [workers] max_disk
inline constexpr std::uint64_t kMinWorkerDiskBytes = 1ull << 20;        // any disk limit, at least
inline constexpr std::uint64_t kMaxWorkerDiskBytes = 1ull << 40;        // any disk limit, at most
// One tmpfs inode per this many bytes of the limit (a non-empty file takes
// a page anyway), so empty files cannot pin unbounded kernel memory.
inline constexpr std::uint64_t kWorkerDiskBytesPerInode = 4096;
inline constexpr std::uint64_t kMinWorkerDiskInodes = 1024;

// --- Sandbox namespaces (ours; docs/sandbox.md "users", "network") ---
// Worker slots, each with a host id range of its own (sandbox.userns_id_count
// ids from sandbox.userns_first_host_id + slot * count): at most this many
// user-namespaced workers (of the daemon and of `run`) at once.
inline constexpr std::uint32_t kUsernsMaxSlots = 1024;
// Loopback-only network namespaces the daemon keeps made ahead of tasks.
inline constexpr std::size_t kNetnsPoolSize = 4;

}  // namespace nps::limits
