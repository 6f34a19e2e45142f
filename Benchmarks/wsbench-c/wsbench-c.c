/*
 * wsbench-c: the raw libwebsockets client baseline for wsbench.
 *
 * The same workloads and command line as the Swift `wsbench`, written directly on
 * libwebsockets' client API with no layer in between, so a run of both in the same
 * session shows what WebSocketStreams adds on top of lws. Settings mirror the Swift
 * client's (receive buffer, send limit, several frames per writable callback while
 * nothing is buffered), so the comparison is of the layer, not of tuning.
 *
 *   wsbench-c --workload W1..W6 --url ws[s]://HOST[:PORT]/PATH [--count N] [--size BYTES]
 *             [--inflight K] [--connections C] [--time-limit S] [--ca-file PEM]
 *
 * wss:// verifies the server's certificate chain and host name (never skipped). Trust is
 * the system's CAs, which lws loads through OpenSSL's default verify paths, so
 * SSL_CERT_FILE / SSL_CERT_DIR name a private CA exactly as they do for wsbench;
 * --ca-file adds one PEM file on top. Ports default to 80 and 443.
 *
 * Build: cc -O2 -o wsbench-c wsbench-c.c $(pkg-config --cflags --libs libwebsockets) -lm
 * (`make bench` does).
 *
 * Prints one JSON line, like wsbench.
 */
#include <libwebsockets.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SEND_LIMIT (128 * 1024 + 64)

enum workload { W1 = 1, W2, W3, W4, W5, W6 };

static struct {
	enum workload workload;
	const char *url;
	long count, size, inflight, connections;
	double time_limit;
	char host[256], path[1024];
	int port;
	int secure;                  /* wss:// */
	const char *ca_file;         /* --ca-file: extra CA PEM for wss:// */
	/* progress */
	long sent, completed, open, failed, closed;
	double start, end;
	double *rtt_us;
	int interrupted;
	unsigned char *buffer;       /* LWS_PRE + payload */
	unsigned char *payload;      /* the message's bytes; lws masks `buffer` in place */
	struct lws_context *context;
} b;

struct per_connection {
	double sent_at;
	long outstanding;
	long received_bytes;         /* of the message being received */
};

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long rss_kb(void) {
	long pages = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (!f) return 0;
	if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
	fclose(f);
	return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

static int compare_double(const void *a, const void *b2) {
	double x = *(const double *)a, y = *(const double *)b2;
	return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of a sorted array: the value at rank ceil(p/100 * n), as in
 * wsbench (the epsilon keeps 7.000000000000001 at rank 7). */
static double percentile(double *sorted, long n, double p) {
	if (n <= 0) return 0;
	long rank = (long)ceil(p * (double)n / 100.0 - 1e-9);
	if (rank < 1) rank = 1;
	if (rank > n) rank = n;
	return sorted[rank - 1];
}

/* Copies the message into the send buffer (lws masks it in place, so every message needs a
 * fresh copy, exactly as any client whose caller keeps its bytes must do) and writes it. */
static int write_message(struct lws *wsi, int binary, long length) {
	memcpy(b.buffer + LWS_PRE, b.payload, (size_t)length);
	return lws_write(wsi, b.buffer + LWS_PRE, (size_t)length, binary ? LWS_WRITE_BINARY : LWS_WRITE_TEXT);
}

static int done(void) {
	switch (b.workload) {
	case W1: case W2: case W3: case W4: return b.completed >= b.count;
	case W5: return b.open + b.failed >= b.connections;
	case W6: return b.completed >= b.count * b.connections;
	}
	return 1;
}

static void finish_if_done(void) {
	if (!b.end && done()) {
		b.end = now();
		b.interrupted = 1;
		lws_cancel_service(b.context);
	}
}

static int callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len) {
	struct per_connection *pc = (struct per_connection *)user;
	switch (reason) {
	case LWS_CALLBACK_CLIENT_ESTABLISHED:
		b.open++;
		if (!b.start) b.start = now();
		if (b.workload == W1 || b.workload == W2 || b.workload == W3)
			lws_callback_on_writable(wsi);
		finish_if_done();
		break;
	case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
		b.failed++;
		fprintf(stderr, "connection error: %s\n", in ? (const char *)in : "?");
		finish_if_done();
		break;
	case LWS_CALLBACK_CLIENT_WRITEABLE:
		switch (b.workload) {
		case W1:
			if (b.sent < b.count && b.sent == b.completed) {
				pc->sent_at = now();
				if (write_message(wsi, 0, b.size) < 0) return -1;
				b.sent++;
			}
			break;
		case W2: {
			int wrote = 0;
			while (b.sent < b.count && pc->outstanding < b.inflight) {
				if (wrote && lws_partial_buffered(wsi)) { lws_callback_on_writable(wsi); break; }
				if (write_message(wsi, 1, b.size) < 0) return -1;
				wrote = 1;
				b.sent++;
				pc->outstanding++;
			}
			break;
		}
		case W3:
			if (b.sent < b.count && b.sent == b.completed) {
				if (write_message(wsi, 1, b.size) < 0) return -1;
				b.sent++;
			}
			break;
		default:
			break;
		}
		break;
	case LWS_CALLBACK_CLIENT_RECEIVE:
		pc->received_bytes += (long)len;
		if (!lws_is_final_fragment(wsi)) break;
		pc->received_bytes = 0;
		b.completed++;
		switch (b.workload) {
		case W1:
			if (b.rtt_us && b.completed <= b.count) b.rtt_us[b.completed - 1] = (now() - pc->sent_at) * 1e6;
			lws_callback_on_writable(wsi);
			break;
		case W2:
			pc->outstanding--;
			lws_callback_on_writable(wsi);
			break;
		case W3:
			lws_callback_on_writable(wsi);
			break;
		default:
			break;
		}
		finish_if_done();
		break;
	case LWS_CALLBACK_CLIENT_CLOSED:
		b.closed++;
		break;
	default:
		break;
	}
	return 0;
}

static struct lws_protocols protocols[] = {
	{ "wsbench-c", callback, sizeof(struct per_connection), 0, 0, NULL, SEND_LIMIT },
	{ NULL, NULL, 0, 0, 0, NULL, 0 }
};

/* The time limit: stop the service loop even when nothing arrives (lws_cancel_service
 * only writes to an eventfd, which is safe in a signal handler). */
static void time_limit_reached(int signal_number) {
	(void)signal_number;
	b.interrupted = 1;
	if (b.context) lws_cancel_service(b.context);
}

static void usage(void) {
	fprintf(stderr, "usage: wsbench-c --workload W1..W6 --url ws[s]://HOST[:PORT]/PATH [--count N] [--size BYTES]"
		" [--inflight K] [--connections C] [--time-limit S] [--ca-file PEM]\n");
	exit(2);
}

/* ws[s]://HOST[:PORT][/PATH]; HOST may be a bracketed IPv6 literal (kept without brackets,
 * as lws wants it for both the address and the certificate name check). */
static int parse_url(const char *url) {
	const char *p = url;
	if (!strncmp(p, "ws://", 5)) { b.secure = 0; p += 5; }
	else if (!strncmp(p, "wss://", 6)) { b.secure = 1; p += 6; }
	else return -1;
	const char *slash = strchr(p, '/');
	const char *authority_end = slash ? slash : p + strlen(p);
	const char *host_start = p, *host_end, *port_text = NULL;
	if (*p == '[') {
		const char *close = memchr(p, ']', (size_t)(authority_end - p));
		if (!close) return -1;
		host_start = p + 1;
		host_end = close;
		if (close + 1 < authority_end) {
			if (close[1] != ':') return -1;
			port_text = close + 2;
		}
	} else {
		const char *colon = memchr(p, ':', (size_t)(authority_end - p));
		host_end = colon ? colon : authority_end;
		if (colon) port_text = colon + 1;
	}
	if (host_end == host_start) return -1;
	snprintf(b.host, sizeof b.host, "%.*s", (int)(host_end - host_start), host_start);
	b.port = port_text ? atoi(port_text) : (b.secure ? 443 : 80);
	snprintf(b.path, sizeof b.path, "%s", slash ? slash : "/");
	return b.port > 0 && b.port < 65536 ? 0 : -1;
}

int main(int argc, char **argv) {
	const char *workload = NULL;
	b.count = -1; b.size = -1; b.inflight = 64; b.connections = -1; b.time_limit = 60;
	for (int i = 1; i < argc; i++) {
		if (i + 1 >= argc) usage();
		if (!strcmp(argv[i], "--workload")) workload = argv[++i];
		else if (!strcmp(argv[i], "--url")) b.url = argv[++i];
		else if (!strcmp(argv[i], "--count")) b.count = atol(argv[++i]);
		else if (!strcmp(argv[i], "--size")) b.size = atol(argv[++i]);
		else if (!strcmp(argv[i], "--inflight")) b.inflight = atol(argv[++i]);
		else if (!strcmp(argv[i], "--connections")) b.connections = atol(argv[++i]);
		else if (!strcmp(argv[i], "--time-limit")) b.time_limit = atof(argv[++i]);
		else if (!strcmp(argv[i], "--ca-file")) b.ca_file = argv[++i];
		else usage();
	}
	if (!workload || !b.url || strlen(workload) != 2 || workload[0] != 'W' || parse_url(b.url)) usage();
	b.workload = (enum workload)(workload[1] - '0');
	if (b.workload < W1 || b.workload > W6) usage();
	static const long default_count[] = { 0, 20000, 100000, 50, 200000, 1000, 2000 };
	static const long default_size[] = { 0, 32, 1024, 4 * 1024 * 1024, 128, 0, 128 };
	if (b.count < 0) b.count = default_count[b.workload];
	if (b.size < 0) b.size = default_size[b.workload];
	if (b.connections < 0) b.connections = b.workload == W5 ? b.count : b.workload == W6 ? 100 : 1;
	if (b.workload == W1) b.rtt_us = calloc((size_t)b.count, sizeof(double));
	b.buffer = malloc(LWS_PRE + (size_t)(b.size > 0 ? b.size : 1));
	b.payload = malloc((size_t)(b.size > 0 ? b.size : 1));
	memset(b.payload, 'x', (size_t)(b.size > 0 ? b.size : 1));

	lws_set_log_level(LLL_ERR, NULL);
	struct lws_context_creation_info info;
	memset(&info, 0, sizeof info);
	info.port = CONTEXT_PORT_NO_LISTEN;
	info.protocols = protocols;
	info.gid = -1; info.uid = -1;
	info.timeout_secs = 600;
	info.connect_timeout_secs = 600;
	if (b.secure) {
		/* lws 4.1.6 makes no client SSL_CTX without it ("bio_create failed"). Plain runs
		 * leave it off, so they measure exactly what they did before wss:// existed. */
		info.options |= LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT;
		/* On top of the system's CAs (LWS_SSL_CLIENT_USE_OS_CA_CERTS: OpenSSL's default
		 * verify paths, which honour SSL_CERT_FILE). */
		info.client_ssl_ca_filepath = b.ca_file;
	}
	b.context = lws_create_context(&info);
	if (!b.context) { fprintf(stderr, "lws_create_context failed\n"); return 1; }

	signal(SIGALRM, time_limit_reached);
	alarm((unsigned int)(b.time_limit + 0.999));
	long rss_before = rss_kb();
	double deadline = now() + b.time_limit;
	double connect_started = now();
	for (long c = 0; c < b.connections; c++) {
		struct lws_client_connect_info ci;
		memset(&ci, 0, sizeof ci);
		ci.context = b.context;
		ci.address = b.host;
		ci.port = b.port;
		ci.path = b.path;
		ci.host = b.host;
		ci.origin = b.host;
		ci.protocol = NULL;
		ci.local_protocol_name = "wsbench-c";
		ci.ietf_version_or_minus_one = -1;
		/* Chain and host name are both verified: no LCCSCF_ALLOW_* flag. */
		ci.ssl_connection = b.secure ? LCCSCF_USE_SSL : 0;
		if (!lws_client_connect_via_info(&ci)) b.failed++;
	}
	while (!b.interrupted && now() < deadline)
		if (lws_service(b.context, 0) < 0) break;
	if (!b.end) b.end = now();
	double elapsed = b.workload == W5 ? b.end - connect_started : (b.start ? b.end - b.start : 0);
	long rss_after = rss_kb();
	int ok = done() && b.failed == 0;
	double per_second = elapsed > 0 ? 1.0 / elapsed : 0; /* rates are 0 when nothing ran */

	printf("{\"client\":\"raw-c\",\"workload\":\"%s\",\"ok\":%s,\"count\":%ld,\"completed\":%ld,\"elapsed_s\":%.6f",
	       workload, ok ? "true" : "false",
	       b.workload == W5 ? b.connections : b.workload == W6 ? b.count * b.connections : b.count,
	       b.workload == W5 ? b.open : b.completed, elapsed);
	switch (b.workload) {
	case W1: {
		long n = b.completed < b.count ? b.completed : b.count;
		qsort(b.rtt_us, (size_t)n, sizeof(double), compare_double);
		printf(",\"rtt_per_s\":%.1f,\"p50_us\":%.1f,\"p99_us\":%.1f", n * per_second,
		       percentile(b.rtt_us, n, 50), percentile(b.rtt_us, n, 99));
		break;
	}
	case W2: case W3: case W4: case W6:
		printf(",\"msgs_per_s\":%.1f,\"mb_per_s\":%.3f", b.completed * per_second,
		       (double)b.completed * (double)b.size * per_second / 1e6);
		break;
	case W5:
		printf(",\"open_s\":%.6f,\"rss_per_conn_kb\":%.2f", elapsed,
		       b.open ? (double)(rss_after - rss_before) / (double)b.open : 0.0);
		break;
	}
	printf("}\n");
	lws_context_destroy(b.context);
	return ok ? 0 : 1;
}
