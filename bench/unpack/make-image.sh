#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the benchmark's OCI image with umoci: one gzip layer holding copies
# of host trees (default /usr/include and /usr/share/man, ~230 MB, ~40k files).
#
#   bench/unpack/make-image.sh DIR [SOURCE_DIR...]
#
# Leaves DIR/oci (the OCI layout, tag "bench"); DIR is replaced.
set -euo pipefail

dir=${1:?usage: make-image.sh DIR [SOURCE_DIR...]}
shift
sources=("$@")
((${#sources[@]})) || sources=(/usr/include /usr/share/man)

rm -rf "$dir"
mkdir -p "$dir"
umoci init --layout "$dir/oci"
umoci new --image "$dir/oci:bench"
umoci unpack --image "$dir/oci:bench" "$dir/bundle"
for src in "${sources[@]}"; do
  mkdir -p "$dir/bundle/rootfs$(dirname "$src")"
  cp -a "$src" "$dir/bundle/rootfs$src"
done
umoci repack --image "$dir/oci:bench" "$dir/bundle"
rm -rf "$dir/bundle"
umoci gc --layout "$dir/oci"
du -sh "$dir/oci"
