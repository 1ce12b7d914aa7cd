// SPDX-License-Identifier: Apache-2.0
// Test support for the image area: layer tars crafted by make_layer.py
// (python's tarfile), and running external tools.
#pragma once

#include <string>
#include <vector>

namespace nps::test {

struct CraftedLayer {
    std::string blob_path;
    std::string diff_id;     // "sha256:<hex>" of the uncompressed tar
    std::string media_type;  // the OCI layer type for the compression
};

struct LayerRecipe {
    std::string scenario;             // a make_layer.py scenario
    std::string compression = "none"; // none | gzip | zstd
    std::string outside;              // a host directory hostile layers aim at
    long count = 0;                   // scenario-specific
};

// Writes the layer to `out`; a failure fails the calling test.
CraftedLayer make_layer(const LayerRecipe& recipe, const std::string& out);

// Runs argv (PATH lookup), stdout captured into *out when given; returns
// the exit status (128+signal when killed).
int run_program(const std::vector<std::string>& argv, std::string* out = nullptr);

// Reads a whole file; "" when missing.
std::string slurp(const std::string& path);
// Writes (replaces) a file; a failure fails the calling test.
void write_text(const std::string& path, const std::string& text);

}  // namespace nps::test
