#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs bench-unpack on a fresh ext4 filesystem (a loop-mounted sparse file
# under /tmp) and on tmpfs.
#
#   bench/unpack/run.sh [BUILD_DIR] [ROUNDS]
#
# A fresh filesystem because ext4's inode allocator skips inodes deleted in
# the last minutes: on a disk where tens of thousands of files were just
# removed (a previous round, or other builds on a shared machine), creating
# files costs many times more system CPU, and that noise swamps the
# contenders. tmpfs shows the CPU cost alone (syncfs is a no-op there).
set -euo pipefail

build=${1:-build}
rounds=${2:-5}
image_dir=${NPS_BENCH_IMAGE_DIR:-/tmp/nps-bench-unpack}
here=$(cd "$(dirname "$0")" && pwd)

[[ -f $image_dir/oci/index.json ]] || "$here/make-image.sh" "$image_dir"

scratch=$(mktemp -d /tmp/nps-bench-unpack-fs.XXXXXX)
cleanup() {
  umount "$scratch/mnt" 2>/dev/null || true
  umount "$scratch/tmpfs" 2>/dev/null || true
  rm -rf "$scratch"
}
trap cleanup EXIT
truncate -s 12G "$scratch/ext4.img"
# Every round keeps its output until the end: room for ~20 copies of ~35k files.
mkfs.ext4 -q -F -i 4096 "$scratch/ext4.img"
mkdir "$scratch/mnt" "$scratch/tmpfs"
mount -o loop "$scratch/ext4.img" "$scratch/mnt"

echo "== fresh ext4 (loop on $(df --output=source /tmp | tail -1))"
"$build/bench/unpack/bench-unpack" --image "$image_dir/oci:bench" --rounds "$rounds" --work "$scratch/mnt/work"

mount -t tmpfs -o size=8G tmpfs "$scratch/tmpfs"
echo "== tmpfs"
"$build/bench/unpack/bench-unpack" --image "$image_dir/oci:bench" --rounds "$rounds" --work "$scratch/tmpfs/work"
umount "$scratch/tmpfs"
