#define _GNU_SOURCE
#include "CRelayShims.h"
#include <fcntl.h>
#include <unistd.h>

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
