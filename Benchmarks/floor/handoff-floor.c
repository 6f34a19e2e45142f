/*
 * handoff-floor: what a W1 round trip costs when the client's reading thread is not the thread
 * that answers, measured with nothing but threads, a loopback TCP socket and the kernel's
 * primitives, so the gap between ours on the default executor and raw C can be split into
 * what the wake-ups cost (anyone's) and what our code costs (ours).
 *
 * An echo thread stands in for the server (it blocks in recv() and sends back what came).
 * The client is one of:
 *   direct    one thread: send(), then block in recv() until the echo is in (raw lws C's shape:
 *             one wake-up per round trip on the client).
 *   handoff   an I/O thread blocks in epoll_wait() (the Swift floor: poll()) and reads the echo, then hands the 32 bytes
 *             to a consumer thread that sleeps on a condition variable (a futex: what a
 *             continuation resumed onto Swift's default executor wakes), which sends the next
 *             message itself (our direct write) and sleeps again: two wake-ups per round trip
 *             (ours on the default executor).
 *   spin      handoff, the consumer spinning (for at most SPIN_US) on the hand-off before it
 *             sleeps, and the I/O thread polling epoll with a zero timeout for at most SPIN_US
 *             before it blocks (the latency mode on the default executor).
 *   poll      direct, the thread polling recv() with MSG_DONTWAIT for at most SPIN_US before it
 *             blocks (the latency mode on the loop executor: one thread that reads and answers).
 *
 *   cc -O2 -pthread -o handoff-floor Benchmarks/floor/handoff-floor.c
 *   [BUSY_POLL_US=N] handoff-floor MODE [COUNT] [SPIN_US]   (one JSON line: rtt_per_s, p50_us, p99_us)
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define SIZE 32

static double now_us(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int compare(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void *echo(void *arg) {
	int fd = *(int *)arg;
	char buffer[SIZE];
	for (;;) {
		int got = 0;
		while (got < SIZE) {
			ssize_t n = recv(fd, buffer + got, SIZE - got, 0);
			if (n <= 0) return NULL;
			got += (int)n;
		}
		send(fd, buffer, SIZE, 0);
	}
}

static int count = 20000;
static double spin_us = 50;
static int client_fd;

/* The hand-off between the I/O thread and the consumer: a sequence number and a condition variable. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ready = PTHREAD_COND_INITIALIZER;
static atomic_long delivered;
static int consumer_sleeping;

static void read_all(int fd, char *buffer, int polling) {
	int got = 0;
	double deadline = polling ? now_us() + spin_us : 0;
	while (got < SIZE) {
		ssize_t n = recv(fd, buffer + got, SIZE - got, polling ? MSG_DONTWAIT : 0);
		if (n > 0) { got += (int)n; deadline = now_us() + spin_us; continue; }
		if (n < 0 && errno == EAGAIN) {
			if (now_us() >= deadline) polling = 0;
			continue;
		}
		fprintf(stderr, "handoff-floor: connection lost\n");
		exit(1);
	}
}

static void *io_thread(void *arg) {
	int polling = *(int *)arg;
	int ep = epoll_create1(0);
	struct epoll_event event = { .events = EPOLLIN, .data.fd = client_fd };
	epoll_ctl(ep, EPOLL_CTL_ADD, client_fd, &event);
	char buffer[SIZE];
	for (long i = 0; i < count; i++) {
		double deadline = now_us() + spin_us;
		for (;;) {
			int timeout = polling && now_us() < deadline ? 0 : -1;
			if (epoll_wait(ep, &event, 1, timeout) == 1) break;
		}
		read_all(client_fd, buffer, 0);
		pthread_mutex_lock(&lock);
		atomic_store(&delivered, i + 1);
		int wake = consumer_sleeping;
		pthread_mutex_unlock(&lock);
		if (wake) pthread_cond_signal(&ready);
	}
	return NULL;
}

int main(int argc, char **argv) {
	const char *mode = argc > 1 ? argv[1] : "direct";
	if (argc > 2) count = atoi(argv[2]);
	if (argc > 3) spin_us = atof(argv[3]);
	int handoff = !strcmp(mode, "handoff") || !strcmp(mode, "spin");
	int polling = !strcmp(mode, "spin") || !strcmp(mode, "poll");
	if (!handoff && strcmp(mode, "direct") && strcmp(mode, "poll")) {
		fprintf(stderr, "usage: handoff-floor direct|handoff|spin|poll [COUNT] [SPIN_US]\n");
		return 2;
	}
	int listener = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	struct sockaddr_in address = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t length = sizeof address;
	bind(listener, (struct sockaddr *)&address, sizeof address);
	listen(listener, 1);
	getsockname(listener, (struct sockaddr *)&address, &length);
	client_fd = socket(AF_INET, SOCK_STREAM, 0);
	connect(client_fd, (struct sockaddr *)&address, sizeof address);
	int server_fd = accept(listener, NULL, NULL);
	setsockopt(client_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	/* BUSY_POLL_US=N: SO_BUSY_POLL on the client socket (blocking reads poll the device queue
	 * for N µs first; needs CAP_NET_ADMIN above net.core.busy_read). Loopback has no NAPI
	 * context to poll, so on 127.0.0.1 it is expected to change nothing: this measures that. */
	if (getenv("BUSY_POLL_US")) {
		int busy = atoi(getenv("BUSY_POLL_US"));
		if (setsockopt(client_fd, SOL_SOCKET, SO_BUSY_POLL, &busy, sizeof busy) != 0) perror("SO_BUSY_POLL");
	}
	setsockopt(server_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	pthread_t server, io;
	pthread_create(&server, NULL, echo, &server_fd);

	char message[SIZE], buffer[SIZE];
	memset(message, 'x', SIZE);
	double *latencies = malloc(sizeof(double) * count);
	if (handoff) pthread_create(&io, NULL, io_thread, &polling);
	double started = now_us();
	for (long i = 0; i < count; i++) {
		double sent = now_us();
		send(client_fd, message, SIZE, 0);
		if (!handoff) {
			read_all(client_fd, buffer, polling);
		} else {
			double deadline = now_us() + spin_us;
			while (polling && atomic_load(&delivered) <= i && now_us() < deadline) {}
			pthread_mutex_lock(&lock);
			while (atomic_load(&delivered) <= i) {
				consumer_sleeping = 1;
				pthread_cond_wait(&ready, &lock);
				consumer_sleeping = 0;
			}
			pthread_mutex_unlock(&lock);
		}
		latencies[i] = now_us() - sent;
	}
	double elapsed = (now_us() - started) / 1e6;
	qsort(latencies, count, sizeof(double), compare);
	printf("{\"client\":\"handoff-floor-%s\",\"ok\":true,\"count\":%d,\"spin_us\":%.0f,\"elapsed_s\":%.6f,"
	       "\"rtt_per_s\":%.1f,\"p50_us\":%.3f,\"p99_us\":%.3f}\n", mode, count, polling ? spin_us : 0, elapsed,
	       count / elapsed, latencies[(count + 1) / 2 - 1], latencies[(int)(count * 0.99)]);
	return 0;
}
