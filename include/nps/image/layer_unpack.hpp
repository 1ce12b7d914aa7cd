// SPDX-License-Identifier: Apache-2.0
// unpack_layer(): one image layer blob (plain, gzip or zstd tar) into a new
// directory, in the form overlayfs takes as a read-only lower layer.
//
// Contract (docs/layers.md has the rules and the reasons):
// - The diff_id ("sha256:<hex>", the digest of the *uncompressed* tar
//   stream, every byte up to the end of the blob) is computed while
//   unpacking; a mismatch fails the call.
// - Every filesystem operation is confined to target_dir: parents are
//   resolved with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS), entries are
//   made with *at() calls that never follow a symlink. A layer with an
//   absolute path, a ".." component, an entry beneath a symlink or a
//   non-directory, a hard link to a path outside the layer (or not yet in
//   it), or more bytes or entries than the limits is refused.
// - Whiteouts become overlay whiteouts: ".wh.<name>" a 0/0 character device
//   <name>, ".wh..wh..opq" the xattr trusted.overlay.opaque=y on its
//   directory. trusted.overlay.* xattrs carried by the archive are dropped.
// - Regular files (sparse ones stay sparse), directories, symlinks, hard
//   links within the layer and fifos keep mode, owner, mtime (and atime when
//   the archive has one) and xattrs; an xattr the kernel or filesystem
//   refuses (ENOTSUP, EPERM, EINVAL, E2BIG) is skipped and counted. POSIX
//   ACLs and file flags are not applied. Device nodes follow DeviceNodes.
// - target_dir must not exist; it is created (mode 0755, owned by the
//   caller; the archive's root entry, if any, then sets both). On any error
//   it is removed again with everything in it, so a failed call leaves
//   nothing behind. The caller owns the parent directory and guarantees no
//   one else writes beneath target_dir meanwhile.
// - Ownership, device nodes, whiteouts and trusted.* xattrs need root
//   (CAP_CHOWN, CAP_MKNOD, CAP_SYS_ADMIN).
// - Durability::sync flushes the layer's filesystem (syncfs) before
//   returning, so a caller that then renames target_dir into place publishes
//   only complete data.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "nps/base/limits.hpp"
#include "nps/base/result.hpp"
#include "nps/image/media_types.hpp"

namespace nps::image {

struct UnpackLimits {
    std::uint64_t max_bytes = limits::kLayerDefaultMaxBytes;      // uncompressed tar stream
    std::uint64_t max_entries = limits::kLayerDefaultMaxEntries;  // tar entries
};

// Character and block devices carried by a layer (whiteouts are not
// devices here). The sandbox mounts its own /dev, so an image never needs
// them, and a device node in the host's layer cache is a risk.
enum class DeviceNodes {
    skip,    // not created; counted in UnpackStats::devices_skipped
    refuse,  // the layer is refused
};

enum class Durability {
    sync,  // syncfs() once the layer is complete
    none,  // leave flushing to the kernel (tests, benchmarks of the copy alone)
};

struct LayerUnpackRequest {
    std::string blob_path;   // the (compressed) blob as stored
    std::string media_type;  // see compression_for_media_type()
    std::string diff_id;     // "sha256:<64 lowercase hex>"
    std::string target_dir;  // must not exist
    UnpackLimits limits;
    DeviceNodes device_nodes = DeviceNodes::skip;
    Durability durability = Durability::sync;
};

struct UnpackStats {
    std::uint64_t entries = 0;           // tar entries read
    std::uint64_t tar_bytes = 0;         // uncompressed stream length
    std::uint64_t regular_files = 0;
    std::uint64_t directories = 0;
    std::uint64_t symlinks = 0;
    std::uint64_t hard_links = 0;
    std::uint64_t fifos = 0;
    std::uint64_t whiteouts = 0;         // ".wh.<name>" entries
    std::uint64_t opaque_dirs = 0;       // ".wh..wh..opq" entries
    std::uint64_t devices_skipped = 0;
    std::uint64_t xattrs_skipped = 0;    // refused by the kernel, or trusted.overlay.*
};

using Compression = media_type::Compression;

// The compression a layer media type implies (media_type::layer_compression:
// application/vnd.oci.image.layer.v1.tar[+gzip|+zstd] and Docker's
// application/vnd.docker.image.rootfs.diff.tar[.gzip]). Any other type,
// non-distributable layers among them, is an error naming it.
Result<Compression> compression_for_media_type(std::string_view media_type);

Result<UnpackStats> unpack_layer(const LayerUnpackRequest& request);

}  // namespace nps::image
