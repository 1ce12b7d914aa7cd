// SPDX-License-Identifier: Apache-2.0
#include "fd_message.hpp"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

namespace nps::sandbox::detail {

Result<SocketPair> seqpacket_pair(const char* what)
{
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) < 0)
        return system_error_errno(std::string("Failed to create ") + what);
    SocketPair sockets{UniqueFd(pair[0]), UniqueFd(pair[1])};
    if (sockets.far.get() < 3) {
        sockets.far = UniqueFd(::fcntl(sockets.far.get(), F_DUPFD_CLOEXEC, 3));
        if (!sockets.far)
            return system_error_errno(std::string("Failed to move ") + what);
    }
    return sockets;
}

int send_with_fds(int socket, const void* data, std::size_t size, const int* fds, std::size_t count)
{
    if (count > kMaxMessageFds)
        return -EINVAL;
    iovec iov{const_cast<void*>(data), size};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxMessageFds)] = {};
    msghdr message{};
    message.msg_iov = &iov;
    message.msg_iovlen = 1;
    if (count > 0) {
        message.msg_control = control;
        message.msg_controllen = CMSG_SPACE(sizeof(int) * count);
        cmsghdr* header = CMSG_FIRSTHDR(&message);
        header->cmsg_level = SOL_SOCKET;
        header->cmsg_type = SCM_RIGHTS;
        header->cmsg_len = CMSG_LEN(sizeof(int) * count);
        ::memcpy(CMSG_DATA(header), fds, sizeof(int) * count);
    }
    ssize_t n;
    do {
        n = ::sendmsg(socket, &message, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    return n < 0 ? -errno : 0;
}

ssize_t receive_with_fds(int socket, void* data, std::size_t size, int* fds, std::size_t* count)
{
    *count = 0;
    iovec iov{data, size};
    // Fds beyond kMaxMessageFds do not fit: the kernel closes them and sets
    // MSG_CTRUNC, which makes the message an error below.
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxMessageFds)];
    msghdr message{};
    message.msg_iov = &iov;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof control;
    ssize_t n;
    do {
        n = ::recvmsg(socket, &message, MSG_CMSG_CLOEXEC);
    } while (n < 0 && errno == EINTR);
    if (n < 0)
        return -errno;
    int error = 0;
    for (cmsghdr* header = CMSG_FIRSTHDR(&message); header; header = CMSG_NXTHDR(&message, header)) {
        if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) {
            error = EPROTO;
            continue;
        }
        std::size_t got = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        if (got > kMaxMessageFds - *count)
            got = kMaxMessageFds - *count;
        ::memcpy(fds + *count, CMSG_DATA(header), got * sizeof(int));
        *count += got;
    }
    if (message.msg_flags & (MSG_CTRUNC | MSG_TRUNC))
        error = EMSGSIZE;
    if (error) {
        close_fds(fds, *count);
        *count = 0;
        return -error;
    }
    return n;
}

void close_fds(const int* fds, std::size_t count)
{
    for (std::size_t i = 0; i < count; ++i)
        ::close(fds[i]);
}

}  // namespace nps::sandbox::detail
