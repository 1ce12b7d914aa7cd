// SPDX-License-Identifier: Apache-2.0
// One SOCK_SEQPACKET message with fds attached (SCM_RIGHTS), sent or
// received without allocating: the spawn pool's parked children and the
// spawn server use these in processes that must not allocate. Internal to
// src/sandbox.
#pragma once

#include <sys/types.h>

#include <cstddef>

#include "nps/base/result.hpp"
#include "nps/base/unique_fd.hpp"

namespace nps::sandbox::detail {

// A close-on-exec SOCK_SEQPACKET pair whose `far` end, the one a child
// keeps, is numbered 3 or above (children keep 0..2 and close the rest).
struct SocketPair {
    UniqueFd near;
    UniqueFd far;
};
// Errors read "Failed to create `what`" or "Failed to move `what`".
Result<SocketPair> seqpacket_pair(const char* what);

// Up to this many fds travel with one message.
inline constexpr std::size_t kMaxMessageFds = 16;

// Sends `size` bytes of `data` and `count` fds (not consumed). 0, or -errno.
int send_with_fds(int socket, const void* data, std::size_t size, const int* fds, std::size_t count);

// Receives one message into `data` (at most `size` bytes) and its fds into
// `fds` (at most kMaxMessageFds, made CLOEXEC; *count says how many).
// Returns the bytes received (0: the peer closed the socket), or -errno;
// retries EINTR. A message with more fds than fit, or fds of another kind,
// is an error (-EMSGSIZE, -EPROTO) whose fds are closed.
ssize_t receive_with_fds(int socket, void* data, std::size_t size, int* fds, std::size_t* count);

// Closes fds[0..count).
void close_fds(const int* fds, std::size_t count);

}  // namespace nps::sandbox::detail
