// SPDX-License-Identifier: Apache-2.0
// The [images] registry keys of the configuration as pull settings.
#pragma once

#include "nps/config/config.hpp"
#include "nps/image/registry.hpp"

namespace nps::image {

RegistrySettings registry_settings(const config::Config& config);

}  // namespace nps::image
