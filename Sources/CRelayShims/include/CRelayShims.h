#ifndef CRELAYSHIMS_H
#define CRELAYSHIMS_H

// Each function here wraps one call or macro the Swift importer cannot see on Glibc:
// the _GNU_SOURCE-only system calls (splice, pipe2, accept4) and flag macros.
// They are named crelay_<what they wrap> and do nothing else.

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/socket.h>

/// accept4(2) with SOCK_NONBLOCK|SOCK_CLOEXEC: one call instead of accept+2×fcntl.
int crelay_accept4_nonblocking(int fd, struct sockaddr *addr, socklen_t *len);

/// socket(2) with SOCK_NONBLOCK|SOCK_CLOEXEC (SOCK_* flags are an enum on Glibc).
int crelay_socket_stream_nonblocking(int domain);

/// pipe2(2) with O_NONBLOCK|O_CLOEXEC.
int crelay_pipe2_nonblocking(int fds[2]);

/// splice(2) with SPLICE_F_MOVE|SPLICE_F_NONBLOCK; no offsets (both ends are sockets or pipes).
ssize_t crelay_splice(int fd_in, int fd_out, size_t len, int more);

/// fcntl(F_SETPIPE_SZ).
int crelay_set_pipe_size(int fd, int size);

/// send(2) with MSG_NOSIGNAL so a peer's reset is an error, never SIGPIPE.
ssize_t crelay_send_nosignal(int fd, const void *buf, size_t len);

/// epoll_create1(EPOLL_CLOEXEC).
int crelay_epoll_create(void);

/// epoll_ctl with a 64-bit token in epoll_data and an events mask (EPOLLIN/EPOLLOUT bits
/// are passed as the crelay_EV_* values below so Swift need not see the packed struct).
int crelay_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t token);

/// epoll_wait filling parallel arrays (the packed epoll_event does not import cleanly).
int crelay_epoll_wait(int epfd, uint64_t *tokens, uint32_t *events, int max, int timeout_ms);

/// eventfd(0, EFD_NONBLOCK|EFD_CLOEXEC): how other threads wake a loop.
int crelay_eventfd(void);

/// socketpair(AF_UNIX, SOCK_STREAM|SOCK_CLOEXEC): a helper's stdin and stdout, as Squid
/// connects its helpers (a socket lets us write with MSG_NOSIGNAL, so a dead helper is EPIPE,
/// never SIGPIPE). Both ends blocking: the child must see an ordinary blocking stdin.
int crelay_socketpair_cloexec(int fds[2]);

/// pidfd_open(2) (Linux 5.3+, no libc wrapper in glibc 2.36): readable once `pid` exits, so
/// an event loop learns of a helper's death even if a grandchild keeps its stdout open.
/// -1 with errno ENOSYS on older kernels.
int crelay_pidfd_open(pid_t pid);

enum {
    crelay_EV_IN = 0x001,
    crelay_EV_OUT = 0x004,
    crelay_EV_ERR = 0x008,
    crelay_EV_HUP = 0x010,
    crelay_EV_RDHUP = 0x2000,
    /// EPOLLONESHOT: report one event, then keep the entry but disable it until re-armed.
    crelay_EV_ONESHOT = 0x40000000,
    /// EPOLLEXCLUSIVE: of the loops watching one listener, wake one idle loop, not all.
    crelay_EV_EXCLUSIVE = 0x10000000,
    /// EPOLLET: report a change once. On an eventfd every write is a change, so a loop's
    /// wake-up descriptor never needs reading.
    crelay_EV_ET = (int)0x80000000u,
    crelay_CTL_ADD = 1,
    crelay_CTL_DEL = 2,
    crelay_CTL_MOD = 3,
};

#endif
