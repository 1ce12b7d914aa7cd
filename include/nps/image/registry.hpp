// SPDX-License-Identifier: Apache-2.0
// Pulling images from an OCI distribution registry (docs/images.md "Pull"):
// what the operator configures, and where a reference is fetched from.
//
// Contract:
//  - https with certificate verification always, against the system CAs
//    plus `ca_file`; plain http only to registries listed in
//    `insecure_registries` (exact "host[:port]" as written in references).
//  - Credentials (basic, or basic to a token service) are never sent over
//    plain http to a host:port not listed in `insecure_registries`; a token
//    realm over plain http to an unlisted host is refused outright.
//  - No implicit registry: a reference without one uses `default_registry`,
//    and without that it is an error (air-gapped hosts have no Docker Hub).
//    "docker.io" is reached at registry-1.docker.io with "library/" in front
//    of one-component repositories, as Docker does.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "nps/base/result.hpp"
#include "nps/image/platform.hpp"
#include "nps/image/reference.hpp"

namespace nps::image {

struct RegistryCredentials {
    std::string username;
    std::string password;       // either this…
    std::string password_file;  // …or the first line of this file, read when needed
};

struct RegistrySettings {
    std::string default_registry;                           // "host[:port]"; empty: references must name one
    std::vector<std::string> insecure_registries;           // "host[:port]" reached over plain http
    std::string ca_file;                                    // PEM bundle trusted besides the system CAs
    std::map<std::string, RegistryCredentials> credentials;  // by "host[:port]" as written in references
    // Transient failures (connection errors, 408, 429, 5xx) are tried this
    // many times in all, waiting first_backoff_ms, then twice as long each
    // time (or what Retry-After says), capped at limits::kMaxRegistryBackoffMs.
    int attempts = 0;             // 0: limits::kRegistryAttempts
    long first_backoff_ms = -1;   // < 0: limits::kRegistryFirstBackoffMs
};

// Where a reference is fetched from.
struct RegistryEndpoint {
    std::string registry;    // "host[:port]", lowercased: the key of insecure_registries and credentials
    std::string base_url;    // "https://host[:port]" (or http for an insecure registry)
    std::string repository;  // as in /v2/<repository>/… ("library/" added on Docker Hub)
    bool plain_http = false;
};

Result<RegistryEndpoint> resolve_endpoint(const ImageReference& reference, const RegistrySettings& settings);

// True when `host_port` is listed (case-insensitively) in insecure_registries.
bool is_insecure_registry(const RegistrySettings& settings, const std::string& host_port);

// Messages about retries ("Retrying … in 2.0 s (attempt 2 of 4): HTTP 503")
// for the operator; the CLI prints them on stderr.
using NoticeFn = std::function<void(const std::string&)>;

struct PullRequest {
    std::string reference;             // [registry[:port]/]repository[:tag][@sha256:hex]
    std::optional<std::string> name;   // the name to record instead of the reference's default_name()
    std::optional<Platform> platform;  // default host_platform()
    RegistrySettings settings;
    NoticeFn notice;                   // may be empty
};

}  // namespace nps::image
