/* The floor under an idle client holding many WebSocket connections over loopback TCP: the
 * smallest program that keeps N connections alive with a 6-byte masked ping every P seconds
 * each (N/P pings per second in all) and reads the 2-byte pongs, and what that costs in CPU.
 *
 *   cc -O2 -o idle-ping-floor Benchmarks/floor/idle-ping-floor.c
 *   ./idle-ping-floor 15000 40 20 grid even grid+send grid+nagle grid+lazy grid+level grid+uring
 *
 * Arguments: N connections (15000), H seconds held (40), P seconds between pings (20), then
 * variants (grid even). Per variant it forks a server (epoll; one pong per 6 bytes read),
 * opens N non-blocking connections to 127.0.0.1 (at most 200 connects in flight), waits
 * until the server has accepted all of them, then holds them H seconds. Schedules: "grid"
 * sends N/P pings at once every second, "even" sends N/P/100 every 10 ms (a timerfd either
 * way). Modifiers: "send" uses send(MSG_DONTWAIT) instead of write, "nagle" leaves
 * TCP_NODELAY off, "level" reads pongs level-triggered instead of edge-triggered (one recv
 * per ready socket either way), "lazy" does not watch for pongs at all but reads the last
 * one just before the next ping, "uring" is lazy with each tick's recvs and sends queued on
 * an io_uring and submitted in one system call. CPU is getrusage user+sys over the hold only,
 * client and server each their own, in % of one core (the user/sys split is tick-sampled and
 * unreliable this small); send_us is the client's thread CPU time inside the ping loops per
 * ping; "machine" is all CPUs' non-idle time from /proc/stat over the hold (tick-sampled,
 * includes anything else running). Wakeups count epoll_wait returns. One JSON line each. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/io_uring.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double cpu_s(struct rusage *u) {
	return u->ru_utime.tv_sec + u->ru_utime.tv_usec / 1e6 + u->ru_stime.tv_sec + u->ru_stime.tv_usec / 1e6;
}

static double clock_s(clockid_t clock) {
	struct timespec t;
	clock_gettime(clock, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static long long machine_busy(void) { /* non-idle jiffies of all CPUs */
	long long v[10] = { 0 }, busy = 0;
	FILE *f = fopen("/proc/stat", "r");
	if (!f || fscanf(f, "cpu %lld %lld %lld %lld %lld %lld %lld %lld", v, v + 1, v + 2, v + 3, v + 4, v + 5, v + 6, v + 7) != 8) exit(1);
	fclose(f);
	for (int k = 0; k < 7; k++) if (k != 3 && k != 4) busy += v[k]; /* not idle, iowait, steal */
	return busy;
}

/* A bare io_uring (no liburing): queue a recv of the last pong and a send of the ping for
 * each connection of a tick, then submit them all with one io_uring_enter. */
static struct { int fd; unsigned *sq_tail, *sq_mask, *sq_array, *cq_head, *cq_tail, *cq_mask, queued; struct io_uring_sqe *sqes; struct io_uring_cqe *cqes; } ring;

static void ring_setup(void) {
	struct io_uring_params p = { .flags = IORING_SETUP_CQSIZE | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN, .cq_entries = 8192 };
	ring.fd = (int)syscall(__NR_io_uring_setup, 4096, &p);
	if (ring.fd < 0) { perror("io_uring_setup"); exit(1); }
	size_t size = p.sq_off.array + p.sq_entries * sizeof(unsigned);
	if (p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe) > size) size = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	char *sq = mmap(0, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring.fd, IORING_OFF_SQ_RING); /* FEAT_SINGLE_MMAP */
	ring.sqes = mmap(0, p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring.fd, IORING_OFF_SQES);
	if (sq == MAP_FAILED || ring.sqes == MAP_FAILED) { perror("mmap"); exit(1); }
	ring.sq_tail = (unsigned *)(sq + p.sq_off.tail), ring.sq_mask = (unsigned *)(sq + p.sq_off.ring_mask), ring.sq_array = (unsigned *)(sq + p.sq_off.array);
	ring.cq_head = (unsigned *)(sq + p.cq_off.head), ring.cq_tail = (unsigned *)(sq + p.cq_off.tail), ring.cq_mask = (unsigned *)(sq + p.cq_off.ring_mask);
	ring.cqes = (struct io_uring_cqe *)(sq + p.cq_off.cqes);
}

static void ring_queue(int op, int fd, const void *data, unsigned len, unsigned flags, unsigned long long tag) {
	unsigned tail = *ring.sq_tail, index = tail & *ring.sq_mask;
	struct io_uring_sqe *sqe = &ring.sqes[index];
	memset(sqe, 0, sizeof *sqe);
	sqe->opcode = (unsigned char)op, sqe->fd = fd, sqe->addr = (unsigned long long)(uintptr_t)data, sqe->len = len;
	sqe->msg_flags = flags, sqe->user_data = tag;
	ring.sq_array[index] = index;
	__atomic_store_n(ring.sq_tail, tail + 1, __ATOMIC_RELEASE);
	ring.queued++;
}

static void ring_submit(long long *pings, long long *failed, long long *pong_bytes) { /* tag 1: send, 2: recv */
	if (ring.queued && syscall(__NR_io_uring_enter, ring.fd, ring.queued, 0, 0, NULL, 0) < 0) { perror("io_uring_enter"); exit(1); }
	ring.queued = 0;
	unsigned head = *ring.cq_head, tail = __atomic_load_n(ring.cq_tail, __ATOMIC_ACQUIRE);
	for (; head != tail; head++) {
		struct io_uring_cqe *cqe = &ring.cqes[head & *ring.cq_mask];
		if (cqe->user_data == 1) { if (cqe->res == 6) (*pings)++; else (*failed)++; }
		else if (cqe->res > 0) *pong_bytes += cqe->res;
	}
	__atomic_store_n(ring.cq_head, head, __ATOMIC_RELEASE);
}

struct report { double cpu; long long pings, pongs, waits; };

static void server(int n, int to_client, int from_client) {
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	int listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), one = 1;
	struct sockaddr_in addr = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof addr;
	setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(listener, (struct sockaddr *)&addr, len) || listen(listener, 8192)) exit(1);
	getsockname(listener, (struct sockaddr *)&addr, &len);
	int port = ntohs(addr.sin_port), ep = epoll_create1(0), accepted = 0;
	(void)!write(to_client, &port, sizeof port);
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = listener }, events[1024];
	epoll_ctl(ep, EPOLL_CTL_ADD, listener, &ev);
	ev.data.fd = from_client;
	epoll_ctl(ep, EPOLL_CTL_ADD, from_client, &ev);
	unsigned char *carry = calloc(65536, 1), buf[4096], pongs[4096];
	for (int k = 0; k < (int)sizeof pongs; k += 2) pongs[k] = 0x8A, pongs[k + 1] = 0x00;
	struct rusage start, end;
	struct report r = { 0 };
	for (;;) {
		int ready = epoll_wait(ep, events, 1024, -1);
		r.waits++;
		for (int e = 0; e < ready; e++) {
			int fd = events[e].data.fd;
			if (fd == listener) {
				int c;
				while ((c = accept4(listener, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
					setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
					struct epoll_event cev = { .events = EPOLLIN | EPOLLET, .data.fd = c };
					epoll_ctl(ep, EPOLL_CTL_ADD, c, &cev);
					if (++accepted == n) (void)!write(to_client, "A", 1);
				}
			} else if (fd == from_client) {
				char cmd;
				if (read(from_client, &cmd, 1) != 1) exit(0);
				if (cmd == 'S') getrusage(RUSAGE_SELF, &start), r.pings = r.pongs = r.waits = 0;
				if (cmd == 'E') {
					getrusage(RUSAGE_SELF, &end);
					r.cpu = cpu_s(&end) - cpu_s(&start);
					(void)!write(to_client, &r, sizeof r);
					exit(0);
				}
			} else {
				ssize_t got;
				while ((got = read(fd, buf, sizeof buf)) > 0) { /* one pong per 6 bytes */
					int bytes = carry[fd] + (int)got, count = bytes / 6;
					carry[fd] = (unsigned char)(bytes % 6);
					r.pings += count;
					if (count && write(fd, pongs, (size_t)count * 2) > 0) r.pongs += count;
					if (got < (ssize_t)sizeof buf) break; /* short read: drained */
				}
			}
		}
	}
}

static void run(int n, int hold, int period, const char *variant) {
	int use_send = strstr(variant, "send") != NULL, nagle = strstr(variant, "nagle") != NULL;
	int uring = strstr(variant, "uring") != NULL, lazy = uring || strstr(variant, "lazy") != NULL, level = strstr(variant, "level") != NULL;
	int ticks_per_s = strncmp(variant, "even", 4) == 0 ? 100 : 1;
	int up[2], down[2];
	if (pipe(up) || pipe(down)) exit(1);
	pid_t child = fork();
	if (child == 0) { close(up[0]); close(down[1]); server(n, up[1], down[0]); }
	close(up[1]); close(down[0]);
	int port;
	if (read(up[0], &port, sizeof port) != sizeof port) exit(1);
	struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int *fds = calloc((size_t)n, sizeof *fds), ep = epoll_create1(0), one = 1, zero = 0;
	struct epoll_event events[1024];
	int opened = 0, connected = 0, in_flight = 0;
	while (connected < n) { /* connect phase: at most 200 in flight */
		while (opened < n && in_flight < 200) {
			int s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
			if (s < 0) { perror("socket"); exit(1); }
			setsockopt(s, IPPROTO_TCP, TCP_NODELAY, nagle ? &zero : &one, sizeof one);
			struct linger l = { 1, 0 }; /* close with RST: no TIME_WAIT between variants */
			setsockopt(s, SOL_SOCKET, SO_LINGER, &l, sizeof l);
			fds[opened] = s;
			if (connect(s, (struct sockaddr *)&addr, sizeof addr) == 0) { connected++; opened++; continue; }
			if (errno != EINPROGRESS) { perror("connect"); exit(1); }
			struct epoll_event ev = { .events = EPOLLOUT, .data.u32 = (unsigned)opened++ };
			epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev);
			in_flight++;
		}
		int ready = epoll_wait(ep, events, 1024, -1);
		for (int e = 0; e < ready; e++) {
			int s = fds[events[e].data.u32], err = 0;
			socklen_t len = sizeof err;
			getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len);
			if (err) { fprintf(stderr, "connect: %s\n", strerror(err)); exit(1); }
			epoll_ctl(ep, EPOLL_CTL_DEL, s, NULL);
			in_flight--, connected++;
		}
	}
	for (int i = 0; i < n && !lazy; i++) {
		struct epoll_event ev = { .events = EPOLLIN | (level ? 0 : EPOLLET), .data.u32 = (unsigned)i };
		epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &ev);
	}
	char a;
	if (read(up[0], &a, 1) != 1) exit(1); /* server accepted all */
	if (uring) ring_setup();
	int timer = timerfd_create(CLOCK_MONOTONIC, 0);
	struct epoll_event tev = { .events = EPOLLIN, .data.u32 = (unsigned)n };
	epoll_ctl(ep, EPOLL_CTL_ADD, timer, &tev);
	long interval_ns = 1000000000L / ticks_per_s;
	struct itimerspec spec = { .it_interval = { interval_ns / 1000000000L, interval_ns % 1000000000L }, .it_value = { 0, 1 } };
	static const unsigned char ping[6] = { 0x89, 0x80, 0x12, 0x34, 0x56, 0x78 };
	unsigned char buf[64];
	long long pings = 0, pong_bytes = 0, failed = 0, tick = 0, ticks = (long long)hold * ticks_per_s;
	long long per_period = (long long)period * ticks_per_s;
	long long waits = 0;
	double send_s = 0; /* CPU time inside the ping loops: the sends themselves */
	(void)!write(down[1], "S", 1);
	struct rusage start, end;
	long long busy0 = machine_busy();
	double wall0 = clock_s(CLOCK_MONOTONIC);
	getrusage(RUSAGE_SELF, &start);
	timerfd_settime(timer, 0, &spec, NULL);
	while (tick <= ticks) {
		int ready = epoll_wait(ep, events, 1024, -1);
		waits++;
		for (int e = 0; e < ready; e++) {
			unsigned id = events[e].data.u32;
			if (id < (unsigned)n) { /* a pong: one recv */
				ssize_t got = recv(fds[id], buf, sizeof buf, 0);
				if (got > 0) pong_bytes += got;
				continue;
			}
			unsigned long long expirations;
			if (read(timer, &expirations, sizeof expirations) != sizeof expirations) continue;
			for (; expirations > 0 && tick <= ticks; expirations--, tick++) {
				if (tick == ticks) continue; /* the end of the hold */
				long long from = tick * n / per_period, to = (tick + 1) * n / per_period;
				double sending = clock_s(CLOCK_THREAD_CPUTIME_ID);
				for (long long j = from; j < to; j++) {
					int s = fds[j % n];
					if (uring) {
						ring_queue(IORING_OP_RECV, s, buf, sizeof buf, MSG_DONTWAIT, 2);
						ring_queue(IORING_OP_SEND, s, ping, 6, MSG_DONTWAIT, 1);
						if (ring.queued >= 4000) ring_submit(&pings, &failed, &pong_bytes); /* SQ holds 4096 */
						continue;
					}
					if (lazy) {
						ssize_t got = recv(s, buf, sizeof buf, MSG_DONTWAIT);
						if (got > 0) pong_bytes += got;
					}
					ssize_t put = use_send ? send(s, ping, 6, MSG_DONTWAIT) : write(s, ping, 6);
					if (put == 6) pings++; else failed++;
				}
				if (uring) ring_submit(&pings, &failed, &pong_bytes);
				send_s += clock_s(CLOCK_THREAD_CPUTIME_ID) - sending;
			}
		}
	}
	getrusage(RUSAGE_SELF, &end);
	double wall = clock_s(CLOCK_MONOTONIC) - wall0;
	long long busy1 = machine_busy();
	(void)!write(down[1], "E", 1);
	struct report r;
	if (read(up[0], &r, sizeof r) != sizeof r) exit(1);
	waitpid(child, NULL, 0);
	if (lazy) { /* collect the pongs still unread, after the measurement */
		usleep(100000);
		for (int i = 0; i < n; i++) {
			ssize_t got = recv(fds[i], buf, sizeof buf, MSG_DONTWAIT);
			if (got > 0) pong_bytes += got;
		}
	}
	double user = end.ru_utime.tv_sec + end.ru_utime.tv_usec / 1e6 - start.ru_utime.tv_sec - start.ru_utime.tv_usec / 1e6;
	double client = cpu_s(&end) - cpu_s(&start);
	printf("{\"variant\":\"%s\",\"n\":%d,\"period_s\":%d,\"hold_s\":%d,\"pings\":%lld,\"failed\":%lld,\"server_pings\":%lld,"
	       "\"pongs\":%lld,\"client_cpu_pct\":%.3f,\"client_user_pct\":%.3f,\"send_us_per_ping\":%.2f,\"server_cpu_pct\":%.3f,\"machine_pct\":%.2f,"
	       "\"client_wakeups\":%lld,\"server_wakeups\":%lld}\n",
	       variant, n, period, hold, pings, failed, r.pings, pong_bytes / 2, client * 100 / wall, user * 100 / wall, send_s * 1e6 / pings,
	       r.cpu * 100 / wall, (busy1 - busy0) * 100.0 / sysconf(_SC_CLK_TCK) / wall,
	       waits, r.waits);
	fflush(stdout);
	for (int i = 0; i < n; i++) close(fds[i]);
	if (uring) close(ring.fd), ring.fd = -1;
	close(ep); close(timer); close(up[0]); close(down[1]); free(fds);
}

int main(int argc, char **argv) {
	int n = argc > 1 ? atoi(argv[1]) : 15000, hold = argc > 2 ? atoi(argv[2]) : 40, period = argc > 3 ? atoi(argv[3]) : 20;
	struct rlimit limit;
	getrlimit(RLIMIT_NOFILE, &limit);
	limit.rlim_cur = limit.rlim_max;
	setrlimit(RLIMIT_NOFILE, &limit);
	if (argc > 4) for (int v = 4; v < argc; v++) run(n, hold, period, argv[v]);
	else run(n, hold, period, "grid"), run(n, hold, period, "even");
	return 0;
}
