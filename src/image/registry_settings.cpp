// SPDX-License-Identifier: Apache-2.0
#include "nps/image/registry_settings.hpp"

namespace nps::image {

RegistrySettings registry_settings(const config::Config& config)
{
    RegistrySettings settings{.default_registry = config.images_default_registry,
                              .insecure_registries = config.images_insecure_registries,
                              .ca_file = config.images_ca_file};
    for (const auto& [registry, auth] : config.images_auth)
        settings.credentials[registry] = {.username = auth.username,
                                          .password = auth.password,
                                          .password_file = auth.password_file};
    return settings;
}

}  // namespace nps::image
