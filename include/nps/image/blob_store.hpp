// SPDX-License-Identifier: Apache-2.0
// The content-addressed blob store: <images>/blobs/sha256/<hex>.
//
// Contract:
//  - A blob file only ever holds bytes whose sha256 is its name: a writer
//    streams into a temp file in the same directory while hashing, and on
//    commit() checks the digest (and size) it was told to expect, fsyncs the
//    file, renames it into place and fsyncs the directory. A mismatch is an
//    error naming the expected digest and what the bytes hash to, and leaves
//    nothing behind.
//  - Readers verify before use: open_verified() hashes the open file and
//    returns the very descriptor it hashed (a later rename cannot swap it).
//  - Several processes may write the same blob at once: each renames a
//    complete, verified file over the name, so any reader sees one of them.
//  - Callers that write (import, pull) or delete (gc) hold the store lock
//    (store_lock.hpp): writers shared, gc exclusive, so gc never deletes a
//    blob an unfinished import has written but not yet recorded, and every
//    temp file gc sees belongs to a dead writer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nps/base/result.hpp"
#include "nps/base/unique_fd.hpp"
#include "nps/image/sha256_stream.hpp"

namespace nps::image {

struct BlobWriteOptions {
    std::optional<std::string> expected_digest;  // verified at commit; absent: the digest is computed
    std::optional<std::uint64_t> expected_size;  // verified while writing and at commit
    std::uint64_t max_bytes = 0;                 // 0: limits::kMaxImageBlobBytes
    std::string source;                          // names the origin in errors ("'/x.tar' entry blobs/sha256/…")
};

// One blob being written. Move-only; destroying it uncommitted removes the
// temp file.
class BlobWriter {
public:
    BlobWriter(BlobWriter&& other) noexcept;
    BlobWriter& operator=(BlobWriter&&) = delete;
    BlobWriter(const BlobWriter&) = delete;
    ~BlobWriter();

    Result<void> write(const void* data, std::size_t size);
    // Verifies, syncs and renames into place; returns the digest.
    Result<std::string> commit();
    std::uint64_t bytes_written() const { return written_; }

private:
    friend class BlobStore;
    BlobWriter(int dir_fd, std::string dir, std::string temp_name, UniqueFd fd, BlobWriteOptions options);
    void discard() noexcept;

    int dir_fd_;  // the store's, not owned
    std::string dir_;
    std::string temp_name_;
    UniqueFd fd_;
    BlobWriteOptions options_;
    Sha256Stream hash_;
    std::uint64_t written_ = 0;
    bool done_ = false;
};

struct VerifiedBlob {
    UniqueFd fd;          // positioned at offset 0
    std::uint64_t size = 0;
    std::string path;
};

struct BlobFile {
    std::string digest;
    std::uint64_t size = 0;        // apparent size
    std::uint64_t disk_bytes = 0;  // st_blocks × 512
};

class BlobStore {
public:
    // Opens (creating with mode 0700 when missing) the blob directory.
    static Result<BlobStore> open(const std::string& blobs_dir);

    BlobStore(BlobStore&&) noexcept = default;
    BlobStore& operator=(BlobStore&&) noexcept = default;

    const std::string& dir() const { return dir_; }
    std::string path(std::string_view digest) const;

    Result<BlobWriter> writer(BlobWriteOptions options) const;
    // Writes a whole in-memory blob (manifests, configs).
    Result<std::string> put(std::string_view data, BlobWriteOptions options) const;

    // Size of a stored blob; nullopt when absent. Does not verify.
    Result<std::optional<std::uint64_t>> stat(std::string_view digest) const;
    // Hashes the stored blob; an error names the digest when the content does
    // not match it ("Blob sha256:… in the image store is corrupt: …").
    Result<VerifiedBlob> open_verified(std::string_view digest) const;
    Result<void> verify(std::string_view digest) const;
    // A small blob's verified content (at most max_bytes).
    Result<std::string> read_verified(std::string_view digest, std::size_t max_bytes) const;

    // Every blob file (names that are sha256 hex), in no particular order.
    Result<std::vector<BlobFile>> list() const;
    // Temp files of writers (.tmp-*); only meaningful under the exclusive lock.
    Result<std::vector<std::string>> temp_files() const;
    // Removes a blob (absent is fine); returns the disk bytes freed.
    Result<std::uint64_t> remove(std::string_view digest) const;
    Result<void> remove_temp(const std::string& name) const;

private:
    BlobStore(std::string dir, UniqueFd dir_fd) : dir_(std::move(dir)), dir_fd_(std::move(dir_fd)) {}

    std::string dir_;
    UniqueFd dir_fd_;
};

}  // namespace nps::image
