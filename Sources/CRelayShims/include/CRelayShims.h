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

#endif
