/*
 * w1-floor: the least a WebSocket client can do per W1 round trip on this machine, to know
 * how far any client (ours, raw lws C, a peer) can get ahead of another against the same
 * server. One blocking TCP socket, no event loop, no poll: per round trip one send() of a
 * pre-masked 32-byte text frame and recv() until the 34-byte echo is in. Everything else
 * a real client does (polling, parsing, masking, queues) only adds to this.
 *
 *   cc -O2 -o w1-floor w1-floor.c
 *   w1-floor HOST PORT PATH [COUNT] [SIZE]    (prints JSON like wsbench: rtt_per_s, p50_us)
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now_us(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int compare(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
	if (argc < 4) { fprintf(stderr, "usage: w1-floor HOST PORT PATH [COUNT] [SIZE]\n"); return 2; }
	int count = argc > 4 ? atoi(argv[4]) : 100000, size = argc > 5 ? atoi(argv[5]) : 32;
	if (size < 1 || size > 125 || count < 1) { fprintf(stderr, "w1-floor: SIZE 1...125, COUNT > 0\n"); return 2; }
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	struct sockaddr_in address = { .sin_family = AF_INET, .sin_port = htons(atoi(argv[2])) };
	inet_pton(AF_INET, argv[1], &address.sin_addr);
	if (connect(fd, (struct sockaddr *)&address, sizeof address) != 0) { perror("connect"); return 1; }
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);

	char request[512], head[4096];
	int length = snprintf(request, sizeof request,
		"GET %s HTTP/1.1\r\nHost: %s:%s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n", argv[3], argv[1], argv[2]);
	send(fd, request, length, 0);
	int have = 0;
	while (have < (int)sizeof head - 1) {
		int n = recv(fd, head + have, sizeof head - 1 - have, 0);
		if (n <= 0) { fprintf(stderr, "w1-floor: no answer to the upgrade\n"); return 1; }
		have += n;
		head[have] = 0;
		if (strstr(head, "\r\n\r\n")) break;
	}
	if (strncmp(head, "HTTP/1.1 101", 12) != 0) { fprintf(stderr, "w1-floor: %.40s\n", head); return 1; }

	/* A masked text frame whose key is 0: masking is then the identity, and legal. */
	unsigned char frame[6 + 125], echo[2 + 125];
	frame[0] = 0x81; frame[1] = 0x80 | size;
	memset(frame + 2, 0, 4);
	memset(frame + 6, 'x', size);
	double *latencies = malloc(sizeof(double) * count);
	double started = now_us();
	for (int i = 0; i < count; i++) {
		double sent = now_us();
		send(fd, frame, 6 + size, 0);
		int got = 0;
		while (got < 2 + size) {
			int n = recv(fd, echo + got, 2 + size - got, 0);
			if (n <= 0) { fprintf(stderr, "w1-floor: connection lost\n"); return 1; }
			got += n;
		}
		latencies[i] = now_us() - sent;
	}
	double elapsed = (now_us() - started) / 1e6;
	qsort(latencies, count, sizeof(double), compare);
	printf("{\"client\":\"w1-floor\",\"workload\":\"W1\",\"ok\":true,\"count\":%d,\"elapsed_s\":%.6f,"
	       "\"rtt_per_s\":%.1f,\"p50_us\":%.3f}\n", count, elapsed, count / elapsed, latencies[(count + 1) / 2 - 1]);
	close(fd);
	return 0;
}
