/* The floor under an idle event loop with many sockets: what one wait costs when nothing
 * (or one socket) is ready, with poll() over every socket (libwebsockets 4.1's default
 * backend) against epoll (what an event-library backend or a loop of our own would use).
 *
 *   cc -O2 -o poll-floor Benchmarks/floor/poll-floor.c && ./poll-floor 15000
 *
 * Makes N/2 socket pairs (N descriptors), marks one socket readable, and times 2,000
 * waits of each kind with a zero timeout. Prints microseconds per wait. */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now_us(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

int main(int argc, char **argv) {
	int n = argc > 1 ? atoi(argv[1]) : 15000;
	struct rlimit limit;
	getrlimit(RLIMIT_NOFILE, &limit);
	limit.rlim_cur = limit.rlim_max;
	setrlimit(RLIMIT_NOFILE, &limit);
	struct pollfd *fds = calloc((size_t)n, sizeof *fds);
	int epoll = epoll_create1(0);
	int made = 0;
	for (; made + 1 < n; made += 2) {
		int pair[2];
		if (socketpair(AF_UNIX, SOCK_STREAM, 0, pair) != 0) break;
		for (int k = 0; k < 2; k++) {
			fds[made + k].fd = pair[k];
			fds[made + k].events = POLLIN;
			struct epoll_event event = { .events = EPOLLIN, .data.fd = pair[k] };
			epoll_ctl(epoll, EPOLL_CTL_ADD, pair[k], &event);
		}
	}
	(void)!write(fds[0].fd, "x", 1); /* one socket (its peer) readable, as a pong would make it */
	int rounds = 2000;
	double start = now_us();
	int ready = 0;
	for (int r = 0; r < rounds; r++) ready += poll(fds, (nfds_t)made, 0);
	double poll_us = (now_us() - start) / rounds;
	struct epoll_event events[64];
	start = now_us();
	int ready_e = 0;
	for (int r = 0; r < rounds; r++) ready_e += epoll_wait(epoll, events, 64, 0);
	double epoll_us = (now_us() - start) / rounds;
	printf("{\"descriptors\":%d,\"poll_us_per_wait\":%.2f,\"epoll_us_per_wait\":%.3f,\"ready\":%d,\"ready_epoll\":%d}\n",
	       made, poll_us, epoll_us, ready / rounds, ready_e / rounds);
	return 0;
}
