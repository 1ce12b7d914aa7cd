// SPDX-License-Identifier: Apache-2.0
// What each area's options are under a configuration. config/ sits above the
// areas it configures (docs/architecture.md): they declare their option
// structs and know nothing of the TOML file; these functions fill them.
#pragma once

#include "nps/base/result.hpp"
#include "nps/config/config.hpp"
#include "nps/image/registry.hpp"
#include "nps/report/deliverer.hpp"
#include "nps/spawn/resolver.hpp"
#include "nps/spawn/spawn_ceilings.hpp"
#include "nps/supervisor/supervisor.hpp"

namespace nps::config {

// [workers], as the supervisor's options (log_root and cgroup_base are the
// caller's).
supervisor::SupervisorOptions supervisor_options(const Config& config);

// The ceilings of a [workers] policy on what a SpawnSpec may ask.
spawn::SpawnCeilings spawn_ceilings(const WorkerPolicy& policy);

// [spawn], as the SpawnSpec resolver's options.
spawn::ResolverOptions resolver_options(const Config& config);

// [report] (and [store], [runner]), as the deliverer's options.
report::DelivererOptions deliverer_options(const Config& config);

// The [images] registry keys, as pull settings.
image::RegistrySettings registry_settings(const Config& config);

}  // namespace nps::config
