// SPDX-License-Identifier: Apache-2.0
// Internal to src/sandbox: the record of a passed idmap probe, so a process
// that decides on user namespaces (a daemon's start, every `nps-runner run`)
// does not repeat the probe's mount namespace, mounts and directories on a
// mount already found able (docs/security.md "User namespace by default").
//
// A record is a file `idmap-probe-<kind>-<mount>` in the user namespaces'
// lock directory, whose one line names this boot (kernel.random.boot_id),
// the scratch directory's mount (device, mount id, file-system type) and the
// rootfs kind the probe tried. It is trusted only when that line matches
// now, and when the file and its directory belong to this process's
// effective user and nobody else may write them. Only a passed probe is
// recorded: a failure is probed again each time.
//
// What a wrong record could do: turn `auto` on where the idmapped mounts
// would fail; the workers then fail to start with the kernel's reason. It
// cannot loosen a sandbox.
#pragma once

#include <string>

#include "nps/sandbox/userns.hpp"

namespace nps::sandbox::detail {

// Whether `record_dir` holds a valid record for `scratch_dir`'s mount and
// `rootfs` (see above). False on any doubt.
bool idmap_probe_recorded(const std::string& record_dir, const std::string& scratch_dir, RootfsKind rootfs);

// Records that the probe passed (written aside, then renamed into place).
// Best effort: a record that cannot be written costs the next process a
// probe, nothing else.
void record_idmap_probe(const std::string& record_dir, const std::string& scratch_dir, RootfsKind rootfs);

}  // namespace nps::sandbox::detail
