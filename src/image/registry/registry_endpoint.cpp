// SPDX-License-Identifier: Apache-2.0
// Where a reference is pulled from: the registry (explicit or configured
// default), the scheme (https unless listed insecure) and the repository
// path the registry expects.
#include <cctype>

#include "nps/base/ascii.hpp"
#include "nps/image/registry.hpp"

namespace nps::image {

namespace {

}  // namespace

bool is_insecure_registry(const RegistrySettings& settings, const std::string& host_port)
{
    for (const auto& entry : settings.insecure_registries)
        if (same_registry(entry, host_port))
            return true;
    return false;
}

Result<RegistryEndpoint> resolve_endpoint(const ImageReference& reference, const RegistrySettings& settings)
{
    RegistryEndpoint out;
    std::string registry = reference.registry;
    if (registry.empty()) {
        if (settings.default_registry.empty())
            return internal_error("The image reference '" + reference.default_name() +
                                  "' names no registry: write it as HOST[:PORT]/" + reference.repository +
                                  ", or set images.default_registry in the configuration");
        registry = settings.default_registry;
    }
    if (!is_valid_registry_host(registry))
        return internal_error("Invalid registry '" + registry + "': expected HOST[:PORT]");
    out.registry = ascii_lower(registry);
    out.repository = reference.repository;
    std::string host = out.registry;
    // Docker Hub: the name everyone writes is not where its API lives, and
    // official images live under library/.
    if (out.registry == "docker.io" || out.registry == "index.docker.io") {
        host = "registry-1.docker.io";
        if (out.repository.find('/') == std::string::npos)
            out.repository = "library/" + out.repository;
    }
    out.plain_http = is_insecure_registry(settings, out.registry);
    out.base_url = (out.plain_http ? "http://" : "https://") + host;
    return out;
}

}  // namespace nps::image
