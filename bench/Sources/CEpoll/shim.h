#include <sys/epoll.h>
