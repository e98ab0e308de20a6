#define _GNU_SOURCE
#include "CRelayShims.h"
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>

int crelay_accept4_nonblocking(int fd, struct sockaddr *addr, socklen_t *len) {
    return accept4(fd, addr, len, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

int crelay_socket_stream_nonblocking(int domain) {
    return socket(domain, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
}

int crelay_pipe2_nonblocking(int fds[2]) {
    return pipe2(fds, O_NONBLOCK | O_CLOEXEC);
}

ssize_t crelay_splice(int fd_in, int fd_out, size_t len, int more) {
    unsigned int flags = SPLICE_F_MOVE | SPLICE_F_NONBLOCK;
    if (more) flags |= SPLICE_F_MORE;
    return splice(fd_in, NULL, fd_out, NULL, len, flags);
}

int crelay_set_pipe_size(int fd, int size) {
    return fcntl(fd, F_SETPIPE_SZ, size);
}

ssize_t crelay_send_nosignal(int fd, const void *buf, size_t len) {
    return send(fd, buf, len, MSG_NOSIGNAL);
}

int crelay_epoll_create(void) {
    return epoll_create1(EPOLL_CLOEXEC);
}

int crelay_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t token) {
    struct epoll_event event;
    event.events = events;
    event.data.u64 = token;
    return epoll_ctl(epfd, op, fd, &event);
}

int crelay_epoll_wait(int epfd, uint64_t *tokens, uint32_t *events, int max, int timeout_ms) {
    struct epoll_event batch[256];
    if (max > 256) max = 256;
    int count = epoll_wait(epfd, batch, max, timeout_ms);
    for (int i = 0; i < count; i++) {
        tokens[i] = batch[i].data.u64;
        events[i] = batch[i].events;
    }
    return count;
}

int crelay_eventfd(void) {
    return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}

int crelay_socketpair_cloexec(int fds[2]) {
    return socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds);
}

int crelay_pidfd_open(pid_t pid) {
#ifdef SYS_pidfd_open
    return (int)syscall(SYS_pidfd_open, pid, 0);
#else
    errno = ENOSYS;
    return -1;
#endif
}
