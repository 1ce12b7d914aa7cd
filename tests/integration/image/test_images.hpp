// SPDX-License-Identifier: Apache-2.0
// Real images for the image integration suite, built once per run: a
// busybox rootfs packed by umoci into an OCI layout (with an image config
// setting Entrypoint, Cmd, Env, WorkingDir and User), converted by skopeo
// to an oci-archive, a docker-archive and a zstd-compressed layout, plus a
// layout whose index.json lists an amd64 and a hand-made arm64 manifest.
#pragma once

#include <string>

namespace image_it {

struct TestImages {
    std::string root;            // everything lives here
    std::string oci_dir;         // umoci's layout; ref.name "latest" only
    std::string oci_archive;     // skopeo oci-archive, ref.name "busybox:oa"
    std::string docker_archive;  // skopeo docker-archive, RepoTags ["docker.io/library/busybox:da"]
    std::string zstd_dir;        // skopeo oci layout with tar+zstd layers, ref.name "latest"
    std::string multiarch_dir;   // index.json: amd64 + arm64 manifests, ref.name "busybox:multi"
    std::string manifest_digest;  // of the umoci image
    std::string arm64_manifest_digest;
    std::string layer_digest;    // the gzip layer of the umoci image
    std::string diff_id;
};

// Why the suite cannot run here ("" when it can).
std::string missing_tools();
// Builds on first use (throws std::runtime_error with the tool's output on failure).
const TestImages& test_images();

// Runs a shell command; throws with its output when it fails.
void shell(const std::string& command);

}  // namespace image_it
