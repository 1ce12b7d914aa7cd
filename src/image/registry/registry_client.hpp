// SPDX-License-Identifier: Apache-2.0
// Internal to image/: the distribution API of one repository on one
// registry — manifests and blobs, authentication on demand (bearer token
// or basic, from the 401 challenge), transient failures retried with
// backoff. Every error names the registry, the repository and what was
// being fetched.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "nps/base/result.hpp"
#include "nps/image/registry.hpp"
#include "registry_http.hpp"

namespace nps::image::detail {

struct FetchedManifest {
    std::string bytes;       // exactly as received
    std::string media_type;  // the Content-Type without parameters ("" when absent)
    std::string digest;      // sha256 of bytes
};

class RegistryClient {
public:
    // Reads images.ca_file (with the system bundle) now; credentials only
    // when a registry asks for them.
    static Result<RegistryClient> open(const RegistryEndpoint& endpoint, const RegistrySettings& settings,
                                       NoticeFn notice);

    const RegistryEndpoint& endpoint() const { return endpoint_; }
    // "repository busybox on registry 127.0.0.1:5000"
    std::string describe() const;

    // GET /v2/<repository>/manifests/<reference> asking for OCI and Docker
    // v2 manifests and indexes. A digest reference must be what the bytes
    // hash to, and so must a Docker-Content-Digest header when present.
    Result<FetchedManifest> manifest(const std::string& reference, std::size_t max_bytes);

    // A small blob (the config), checked against its digest and size.
    Result<std::string> small_blob(const std::string& digest, std::int64_t size, std::size_t max_bytes);

    // Streams a blob to `sink`; `restart` is called before every try, since
    // a retried download starts again from the first byte. The caller's sink
    // verifies (BlobWriter); its error ends the download without a retry.
    Result<void> blob(const std::string& digest, const std::function<Result<void>()>& restart, const BodySink& sink);

private:
    RegistryClient(RegistryEndpoint endpoint, RegistrySettings settings, NoticeFn notice, HttpSession session)
        : endpoint_(std::move(endpoint)), settings_(std::move(settings)), notice_(std::move(notice)),
          session_(std::move(session)) {}

    struct Get {
        std::string what;                        // "manifest 'latest'", "blob sha256:…"
        std::string url;
        std::vector<std::string> headers;
        std::size_t max_body_bytes = 0;
        long timeout_ms = 0;
        std::function<Result<void>()> restart;
        BodySink sink;
        bool authenticate = true;                // false for the token service itself
    };
    // The request with retries and, on 401, one authentication round; any
    // final HTTP status is returned.
    Result<HttpAnswer> send(const Get& get);
    // Sets authorization_ from a 401 answer's challenge.
    Result<void> authenticate(const HttpAnswer& unauthorized, const std::string& what);
    Result<void> fetch_token(const std::map<std::string, std::string>& params, const std::string& what);
    const RegistryCredentials* configured() const;
    // The configured credentials of this registry ("user:password"), if any.
    Result<std::optional<std::string>> credentials();
    // An error for a final non-2xx answer.
    Error http_failure(const std::string& what, const HttpAnswer& answer) const;
    Error failure(const std::string& what, const std::string& detail) const;

    RegistryEndpoint endpoint_;
    RegistrySettings settings_;
    NoticeFn notice_;
    HttpSession session_;
    std::string authorization_;  // "Bearer …" / "Basic …" once a challenge was answered
};

}  // namespace nps::image::detail
