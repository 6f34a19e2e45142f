/*
 * wsbench-c: the raw libwebsockets client baseline for wsbench.
 *
 * The same workloads and command line as the Swift `wsbench`, written directly on
 * libwebsockets' client API with no layer in between, so a run of both in the same
 * session shows what WebSocketStreams adds on top of lws. Settings mirror the Swift
 * client's (receive buffer, send limit, several frames per writable callback while
 * nothing is buffered), so the comparison is of the layer, not of tuning.
 *
 *   wsbench-c --workload W1..W7|W9 --url ws[s]://HOST[:PORT]/PATH [--count N] [--size BYTES]
 *             [--inflight K] [--connections C] [--time-limit S] [--ca-file PEM]
 *             [--hold S] [--ping-interval S] [--period S] [--event-lib poll|ev]
 *
 * W7 (scale): open --connections (default 10,000; at most --inflight handshakes at a time,
 * default 100), hold them --hold seconds (default 45) with keep-alive pings every
 * --ping-interval seconds (default 20; 0: none), then close them all; reports the open and
 * close times per 1,000, RSS per connection, the CPU used while holding and connections
 * lost meanwhile. Its time limit defaults to --hold + 120 s, as wsbench's does.
 *
 * W9 (talking connections): open --connections (default 1,000) with lws's own
 * permessage-deflate offer (its pm-deflate extension, as lws's examples enable it), then
 * --count rounds (default 3): every connection sends one --size (1 KiB) JSON text of the same
 * trade feed as wsbench's (the same bytes) and reads its echo, once per --period seconds
 * (default 10), the connections spread evenly over it; every echo is checked byte for byte.
 * Reports RSS per connection after the first round (and before any message, and at the end),
 * TCP payload bytes per message each way (TCP_INFO) and CPU per message, as wsbench does.
 *
 * --event-lib ev runs lws on its libev plugin (libwebsockets-evlib-ev) over an epoll loop of
 * this program's, as WebSocketStreams runs it, instead of lws's own poll() (the default).
 * With thousands of connections that is most of the cost: every poll() pass is O(sockets).
 * libev is loaded at run time (the plugin needs it anyway), so the build line stays as is.
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
#include <dirent.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <libwebsockets.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define SEND_LIMIT (128 * 1024 + 64)

enum workload { W1 = 1, W2, W3, W4, W5, W6, W7, W9 = 9 };

static struct {
	enum workload workload;
	const char *url;
	long count, size, inflight, connections;
	double time_limit;
	double hold, ping_interval;  /* W7 */
	double period;               /* W9 */
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
	/* W7 */
	struct lws **established;    /* by slot (the order they opened in); NULL once closed */
	long ended;                  /* established connections closed, for any reason */
	long lost;                   /* ... of those, the ones that ended while not asked to */
	int closing;                 /* asked every connection to close */
	long *ping_order;            /* ring of slots, in the order their pings fall due */
	long ping_head, ping_count;
	/* W9 */
	char **feed;                 /* 1,000 JSON texts of --size bytes */
	long round, index;           /* the slot being served */
	double rounds_started;
	long talked_rss;             /* after the first round */
	const char *failure;         /* why the run stopped early */
} b;

struct per_connection {
	double sent_at;
	long outstanding;
	long received_bytes;         /* of the message being received */
	long slot;                   /* W7: in b.established, once open */
	int is_established;
	double ping_due;             /* W7 */
	int ping_wanted, awaiting_pong;
	int send_wanted;             /* W9: its slot is due */
	char *echo;                  /* W9: the echo being received (--size bytes at most) */
	long echo_length;
};

/* --event-lib ev: the few libev calls used, found in libev.so.4 at run time; loop is NULL
 * when lws serves its own poll(). */
#define EV_BACKEND_EPOLL 0x4u        /* ev.h's EVBACKEND_EPOLL */
#define EV_RUN_ONCE 2                /* ev.h's EVRUN_ONCE */
static struct {
	void *loop;
	void *(*loop_new)(unsigned int flags);
	int (*run)(void *loop, int flags);
	void (*loop_destroy)(void *loop);
} ev;

static int load_libev(void) {
	void *library = dlopen("libev.so.4", RTLD_NOW);
	if (!library) { fprintf(stderr, "--event-lib ev: %s\n", dlerror()); return -1; }
	*(void **)&ev.loop_new = dlsym(library, "ev_loop_new");
	*(void **)&ev.run = dlsym(library, "ev_run");
	*(void **)&ev.loop_destroy = dlsym(library, "ev_loop_destroy");
	if (!ev.loop_new || !ev.run || !ev.loop_destroy) { fprintf(stderr, "--event-lib ev: libev lacks ev_run\n"); return -1; }
	ev.loop = ev.loop_new(EV_BACKEND_EPOLL);
	if (!ev.loop) { fprintf(stderr, "--event-lib ev: no epoll loop\n"); return -1; }
	return 0;
}

/* One pass of whichever loop runs lws: waits for events, handles them; < 0 when lws failed.
 * lws_cancel_service wakes either (lws watches its eventfd in both). */
static int service(void) {
	if (!ev.loop) return lws_service(b.context, 0);
	ev.run(ev.loop, EV_RUN_ONCE);
	return 0;
}

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

/* User plus system CPU time this process has used, in seconds. */
static double cpu_seconds(void) {
	struct rusage usage;
	if (getrusage(RUSAGE_SELF, &usage)) return 0;
	return (double)usage.ru_utime.tv_sec + (double)usage.ru_utime.tv_usec / 1e6 +
	       (double)usage.ru_stime.tv_sec + (double)usage.ru_stime.tv_usec / 1e6;
}

/* Raises the soft limit on open descriptors to the hard one (W5 and W7 open thousands of
 * sockets), before the context is made: lws sizes its descriptor tables by it. */
static void raise_descriptor_limit(void) {
	struct rlimit limit;
	if (getrlimit(RLIMIT_NOFILE, &limit) || limit.rlim_cur >= limit.rlim_max) return;
	limit.rlim_cur = limit.rlim_max;
	setrlimit(RLIMIT_NOFILE, &limit);
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

/* W7's keep-alive: one lws timer for every connection, not one each. lws 4.1 keeps its
 * timers in one sorted linked list, and a timer armed later than the others (the usual
 * case: a ping an interval from now) walks the whole list to its end, so a timer per
 * connection costs O(connections) at every arming. lws's own validity pings
 * (lws_retry_bo_t's secs_since_valid_ping, rearmed by every pong) did: at 8,000 connections,
 * 83% of the CPU was that walk (perf); lws_set_timer_usecs arms the same list. Every
 * connection pings at the same interval, so the order their pings fall due in is the order
 * they were last pinged in: a ring of them, whose head the one timer is armed for. A
 * connection whose last ping is still unanswered when the next is due is dropped (wsbench
 * drops one whose pong is 10 s late). W7 connections also opt out of lws's validity timer
 * (the context's default policy pings after 300 s), which every pong would rearm. */
static const lws_retry_bo_t no_validity_timer; /* secs_since_valid_hangup 0: none */
static lws_sorted_usec_list_t ping_timer;
static void pings_due(lws_sorted_usec_list_t *sul);

/* Arms the timer for the first connection in the ring still open (dropping closed ones). */
static void arm_ping_timer(void) {
	while (b.ping_count) {
		struct lws *wsi = b.established[b.ping_order[b.ping_head]];
		if (wsi) {
			struct per_connection *pc = (struct per_connection *)lws_wsi_user(wsi);
			double wait = pc->ping_due - now();
			lws_sul_schedule(b.context, 0, &ping_timer, pings_due, (lws_usec_t)(wait > 0 ? wait * 1e6 : 0));
			return;
		}
		b.ping_head = (b.ping_head + 1) % b.connections;
		b.ping_count--;
	}
}

static void ping_later(long slot, struct per_connection *pc, double at) {
	pc->ping_due = at + b.ping_interval;
	b.ping_order[(b.ping_head + b.ping_count++) % b.connections] = slot;
	if (b.ping_count == 1) arm_ping_timer();
}

/* The timer: asks every connection whose ping is due to write it; rearms for the next. */
static void pings_due(lws_sorted_usec_list_t *sul) {
	(void)sul;
	double t = now();
	while (b.ping_count) {
		long slot = b.ping_order[b.ping_head];
		struct lws *wsi = b.established[slot];
		struct per_connection *pc = wsi ? (struct per_connection *)lws_wsi_user(wsi) : NULL;
		if (pc && pc->ping_due > t) break;
		b.ping_head = (b.ping_head + 1) % b.connections;
		b.ping_count--;
		if (!pc) continue; /* closed */
		pc->ping_wanted = 1;
		lws_callback_on_writable(wsi);
		ping_later(slot, pc, t);
	}
	arm_ping_timer();
}

/* W9's feed: the trade feed wsbench (JSONFeed.swift) and the python peer send, byte for
 * byte: SplitMix64 from 0x5EED, and numbers written as Swift writes a Double (the shortest
 * digits that read back the same, with ".0" on a whole number). */
static uint64_t splitmix_state = 0x5EED;
static uint64_t splitmix_next(void) {
	splitmix_state += 0x9E3779B97F4A7C15ull;
	uint64_t z = splitmix_state;
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static void swift_double(double value, char *out, size_t size) {
	for (int decimals = 0; decimals <= 17; decimals++) {
		snprintf(out, size, "%.*f", decimals, value);
		if (strtod(out, NULL) == value) {
			if (decimals == 0) strncat(out, ".0", size - strlen(out) - 1);
			return;
		}
	}
}

static char **json_feed(long count, long size) {
	static const char *symbols[] = { "BTCUSD", "ETHUSD", "SOLUSD", "XRPUSD" };
	char **feed = calloc((size_t)count, sizeof *feed);
	long sequence = 0;
	for (long m = 0; m < count; m++) {
		size_t capacity = (size_t)size + 256, length = 1;
		char *text = malloc(capacity);
		text[0] = '[';
		while ((long)length < size) {
			sequence++;
			char price[64], quantity[64];
			swift_double((double)(splitmix_next() % 6000000) / 100, price, sizeof price);
			swift_double((double)(splitmix_next() % 50000) / 10000, quantity, sizeof quantity);
			const char *side = splitmix_next() % 2 == 0 ? "buy" : "sell";
			const char *symbol = symbols[splitmix_next() % 4];
			char trade[256];
			int n = snprintf(trade, sizeof trade, "{\"sym\":\"%s\",\"px\":%s,\"qty\":%s,\"ts\":%lld,\"side\":\"%s\"},",
			                 symbol, price, quantity, 1700000000000LL + sequence * 37, side);
			if (length + (size_t)n + 1 > capacity) { capacity = (length + (size_t)n) * 2; text = realloc(text, capacity); }
			memcpy(text + length, trade, (size_t)n);
			length += (size_t)n;
		}
		text[size] = '\0'; /* cut to length, as wsbench does */
		feed[m] = text;
	}
	return feed;
}

/* TCP payload bytes this process's sockets have had acknowledged and have received, over
 * every descriptor (TCP_INFO's tcpi_bytes_acked and tcpi_bytes_received, at their kernel ABI
 * offsets, as wsbench reads them). */
static void tcp_payload_bytes(long long *sent, long long *received) {
	*sent = *received = 0;
	DIR *directory = opendir("/proc/self/fd");
	if (!directory) return;
	struct dirent *entry;
	while ((entry = readdir(directory))) {
		char *end;
		long fd = strtol(entry->d_name, &end, 10);
		if (*end || end == entry->d_name) continue;
		unsigned char info[232];
		socklen_t length = sizeof info;
		if (getsockopt((int)fd, IPPROTO_TCP, TCP_INFO, info, &length) || length < 136) continue;
		uint64_t acked, got;
		memcpy(&acked, info + 120, 8);
		memcpy(&got, info + 128, 8);
		*sent += (long long)acked;
		*received += (long long)got;
	}
	closedir(directory);
}

/* W9's slots: one connection sends at a time, as wsbench's driver does (the next slot waits
 * for the echo). The service loop starts a slot once it is due; a POSIX timer's signal wakes
 * the loop for it (lws_cancel_service), on either event library: lws's own timers run late on
 * its libev plugin (see `wake`). */
static double slot_due_at;
static int slot_pending;
static timer_t slot_timer;
static int slot_timer_made;

static void start_slot(void) {
	slot_pending = 0;
	struct lws *wsi = b.established[b.index];
	if (!wsi) { b.failure = "a connection closed"; b.interrupted = 1; lws_cancel_service(b.context); return; }
	((struct per_connection *)lws_wsi_user(wsi))->send_wanted = 1;
	lws_callback_on_writable(wsi);
}

static void wake(int signal_number);

static void schedule_slot(void) {
	double slot = b.period / (double)(b.open > 0 ? b.open : 1);
	slot_due_at = b.rounds_started + b.period * (double)b.round + slot * (double)b.index;
	slot_pending = 1;
	double wait = slot_due_at - now();
	if (wait <= 0) return; /* the loop starts it at once */
	if (!slot_timer_made) {
		struct sigevent event;
		memset(&event, 0, sizeof event);
		event.sigev_notify = SIGEV_SIGNAL;
		event.sigev_signo = SIGUSR1;
		if (timer_create(CLOCK_MONOTONIC, &event, &slot_timer)) return;
		slot_timer_made = 1;
	}
	struct itimerspec when;
	memset(&when, 0, sizeof when);
	when.it_value.tv_sec = (time_t)wait;
	when.it_value.tv_nsec = (long)((wait - (double)(time_t)wait) * 1e9);
	if (!when.it_value.tv_sec && !when.it_value.tv_nsec) when.it_value.tv_nsec = 1;
	timer_settime(slot_timer, 0, &when, NULL);
}

/* An echo arrived whole on the slot's connection: checked, then the next slot. */
static void echo_received(struct per_connection *pc) {
	const char *sent = b.feed[(b.index * b.count + b.round) % 1000];
	if (pc->echo_length != b.size || memcmp(pc->echo, sent, (size_t)b.size)) {
		b.failure = "an echo differs from the message sent";
		b.interrupted = 1;
		return;
	}
	b.completed++;
	if (++b.index == b.open) {
		b.index = 0;
		if (b.round == 0) b.talked_rss = rss_kb();
		if (++b.round == b.count) { b.end = now(); b.interrupted = 1; return; }
	}
	schedule_slot();
}

static int done(void) {
	switch (b.workload) {
	case W1: case W2: case W3: case W4: return b.completed >= b.count;
	case W5: return b.open + b.failed >= b.connections;
	case W6: return b.completed >= b.count * b.connections;
	case W7: case W9: return 0; /* run_scale and run_talking decide */
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
		if (b.workload == W9) {
			pc->slot = b.open;
			pc->is_established = 1;
			b.established[pc->slot] = wsi;
		}
		if (b.workload == W7) {
			pc->slot = b.open;
			pc->is_established = 1;
			b.established[pc->slot] = wsi;
			if (b.ping_interval > 0) ping_later(pc->slot, pc, now());
		}
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
		case W9:
			if (b.closing) {
				lws_close_reason(wsi, LWS_CLOSE_STATUS_NORMAL, NULL, 0);
				return -1;
			}
			if (pc->send_wanted) {
				pc->send_wanted = 0;
				pc->echo_length = 0;
				const char *text = b.feed[(b.index * b.count + b.round) % 1000];
				memcpy(b.buffer + LWS_PRE, text, (size_t)b.size);
				if (lws_write(wsi, b.buffer + LWS_PRE, (size_t)b.size, LWS_WRITE_TEXT) < 0) return -1;
			}
			break;
		case W7:
			/* Asked to close: lws sends close 1000 and waits for the server's close. */
			if (b.closing) {
				lws_close_reason(wsi, LWS_CLOSE_STATUS_NORMAL, NULL, 0);
				return -1;
			}
			if (pc->ping_wanted) {
				unsigned char ping[LWS_PRE + 8]; /* lws masks it in place */
				double sent = now();
				pc->ping_wanted = 0;
				if (pc->awaiting_pong) return -1; /* unanswered for a whole interval */
				memcpy(ping + LWS_PRE, &sent, 8);
				if (lws_write(wsi, ping + LWS_PRE, 8, LWS_WRITE_PING) < 0) return -1;
				pc->awaiting_pong = 1;
			}
			break;
		default:
			break;
		}
		break;
	case LWS_CALLBACK_CLIENT_RECEIVE:
		if (b.workload == W9) {
			if (!pc->echo) pc->echo = malloc((size_t)b.size);
			if (pc->echo_length + (long)len <= b.size) memcpy(pc->echo + pc->echo_length, in, len);
			pc->echo_length += (long)len;
			if (lws_is_final_fragment(wsi) && !lws_remaining_packet_payload(wsi)) echo_received(pc);
			if (b.interrupted) lws_cancel_service(b.context);
			break;
		}
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
	case LWS_CALLBACK_CLIENT_RECEIVE_PONG:
		if (pc) pc->awaiting_pong = 0;
		break;
	case LWS_CALLBACK_CLIENT_CLOSED:
		b.closed++;
		if (pc && pc->echo) { free(pc->echo); pc->echo = NULL; }
		if (pc && pc->is_established) {
			pc->is_established = 0;
			if (b.established) b.established[pc->slot] = NULL;
			b.ended++;
			if (!b.closing) b.lost++;
		}
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

/* Wakes the service loop (lws_cancel_service again): at the end of W7's hold, and with
 * --event-lib ev every second. lws 4.1's libev plugin runs lws's own timers (W7's pings
 * among them) only from its one libev timer or after I/O, and cannot move that timer earlier
 * while it is armed (ev_timer_start on an active watcher does nothing): pings due after 5 s
 * went out after about 30 s (measured). Once a second, as WebSocketStreams' loops do,
 * bounds that lateness. */
static void wake(int signal_number) {
	(void)signal_number;
	if (b.context) lws_cancel_service(b.context);
}

/* Raises SIGUSR1 (wake) `first` seconds from now, then every `period` seconds (0: once). */
static void start_wake_timer(double first, double period) {
	struct sigevent event;
	memset(&event, 0, sizeof event);
	event.sigev_notify = SIGEV_SIGNAL;
	event.sigev_signo = SIGUSR1;
	timer_t timer;
	if (timer_create(CLOCK_MONOTONIC, &event, &timer)) return;
	struct itimerspec when;
	memset(&when, 0, sizeof when);
	if (first < 1e-9) first = 1e-9; /* 0 would disarm it */
	when.it_value.tv_sec = (time_t)first;
	when.it_value.tv_nsec = (long)((first - (double)(time_t)first) * 1e9);
	when.it_interval.tv_sec = (time_t)period;
	when.it_interval.tv_nsec = (long)((period - (double)(time_t)period) * 1e9);
	timer_settime(timer, 0, &when, NULL);
}

static void usage(void) {
	fprintf(stderr, "usage: wsbench-c --workload W1..W7|W9 --url ws[s]://HOST[:PORT]/PATH [--count N] [--size BYTES]"
		" [--inflight K] [--connections C] [--time-limit S] [--ca-file PEM] [--hold S] [--ping-interval S]"
		" [--period S] [--event-lib poll|ev]\n");
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

/* Starts one connection; 0 when lws refused to start it. */
static int connect_one(void) {
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
	if (b.workload == W7) ci.retry_and_idle_policy = &no_validity_timer;
	return lws_client_connect_via_info(&ci) != NULL;
}

/* Opens `target` connections, at most `window` handshakes at a time (topped up after every
 * service pass), as wsbench's ConnectionBatch does; returns when each is open or failed. */
static void open_connections(long target, long window) {
	long started = 0;
	while (!b.interrupted && b.open + b.failed < target) {
		while (started < target && started - b.open - b.failed < window) {
			started++;
			if (!connect_one()) b.failed++;
		}
		if (b.open + b.failed >= target) break;
		if (service() < 0) break;
	}
}

/* W7, like wsbench's ScaleWorkload: open (at most --inflight handshakes at a time, topped
 * up after every service pass), hold, close; prints the JSON line and returns ok. */
static int run_scale(void) {
	if (b.connections < 1) b.connections = 1;
	long target = b.connections;
	long window = b.inflight > 0 ? b.inflight : 1;
	b.established = calloc((size_t)target, sizeof *b.established);
	b.ping_order = calloc((size_t)target, sizeof *b.ping_order);
	/* Resident before RSS is read. */
	memset(b.established, 0, (size_t)target * sizeof *b.established);
	memset(b.ping_order, 0, (size_t)target * sizeof *b.ping_order);

	long rss_before = rss_kb();
	double open_started = now();
	open_connections(target, window);
	double open_s = now() - open_started;
	long rss_after = rss_kb();

	/* Hold: nothing but keep-alive pings and their pongs. */
	double cpu_before = cpu_seconds(), hold_started = now(), hold_end = hold_started + b.hold;
	start_wake_timer(b.hold, 0);
	while (!b.interrupted && now() < hold_end)
		if (service() < 0) break;
	double hold_s = now() - hold_started;
	double cpu_held = cpu_seconds() - cpu_before;
	long lost = b.lost;

	/* Close every connection at once; done when the last one's close handshake is. */
	double close_started = now();
	b.closing = 1;
	for (long slot = 0; slot < b.open; slot++)
		if (b.established[slot]) lws_callback_on_writable(b.established[slot]);
	while (!b.interrupted && b.ended < b.open)
		if (service() < 0) break;
	double close_s = now() - close_started;

	double thousands = (double)(b.open > 1 ? b.open : 1) / 1000;
	int ok = b.open == target && lost == 0 && b.ended == b.open && !b.interrupted;
	if (lost) fprintf(stderr, "%ld connections ended while held\n", lost);
	if (b.interrupted) fprintf(stderr, "time limit reached\n");
	printf("{\"client\":\"raw-c\",\"workload\":\"W7\",\"ok\":%s,\"count\":%ld,\"completed\":%ld,\"elapsed_s\":%.6f",
	       ok ? "true" : "false", target, b.open, open_s);
	printf(",\"connections\":%ld,\"open_s\":%.6f,\"open_ms_per_1000\":%.6f,\"rss_per_conn_kb\":%.2f",
	       b.open, open_s, open_s * 1000 / thousands,
	       b.open ? (double)(rss_after - rss_before) / (double)b.open : 0.0);
	printf(",\"hold_s\":%.6f,\"idle_cpu_pct\":%.3f,\"lost\":%ld,\"close_s\":%.6f,\"close_ms_per_1000\":%.6f}\n",
	       hold_s, hold_s > 0 ? cpu_held / hold_s * 100 : 0.0, lost, close_s, close_s * 1000 / thousands);
	return ok;
}

/* W9, like wsbench's TalkingConnectionsWorkload: open (--inflight handshakes at a time), then
 * the rounds; prints the JSON line and returns ok. */
static int run_talking(void) {
	long target = b.connections > 0 ? b.connections : 1;
	long window = b.inflight > 0 ? b.inflight : 1;
	b.established = calloc((size_t)target, sizeof *b.established);
	memset(b.established, 0, (size_t)target * sizeof *b.established);
	b.feed = json_feed(1000, b.size);
	long rss_before = rss_kb();
	double open_started = now();
	open_connections(target, window);
	double open_s = now() - open_started;
	long idle_rss = rss_kb();
	b.talked_rss = idle_rss;
	long long sent_before, received_before, sent_after, received_after;
	tcp_payload_bytes(&sent_before, &received_before);
	double cpu_before = cpu_seconds();
	b.rounds_started = now();
	if (b.open == target && !b.interrupted) {
		schedule_slot();
		while (!b.interrupted) {
			if (slot_pending && now() >= slot_due_at) start_slot();
			if (b.interrupted || service() < 0) break;
		}
	}
	double cpu = cpu_seconds() - cpu_before;
	if (!b.end) b.end = now();
	double elapsed = b.end - b.rounds_started;
	tcp_payload_bytes(&sent_after, &received_after);
	long end_rss = rss_kb();
	int ok = b.open == target && !b.failure && b.completed == target * b.count;
	if (b.failure) fprintf(stderr, "%s\n", b.failure);
	else if (!ok) fprintf(stderr, "time limit reached or connections failed (%ld of %ld open)\n", b.open, target);

	/* Close every connection; done when the last close handshake is. */
	b.interrupted = 0;
	b.closing = 1;
	slot_pending = 0;
	for (long slot = 0; slot < b.open; slot++)
		if (b.established[slot]) lws_callback_on_writable(b.established[slot]);
	double close_deadline = now() + 30;
	while (!b.interrupted && b.ended < b.open && now() < close_deadline)
		if (service() < 0) break;

	double open = (double)(b.open > 0 ? b.open : 1), messages = (double)(b.completed > 0 ? b.completed : 1);
	printf("{\"client\":\"raw-c\",\"workload\":\"W9\",\"ok\":%s,\"count\":%ld,\"completed\":%ld,\"elapsed_s\":%.6f",
	       ok ? "true" : "false", target * b.count, b.completed, elapsed);
	printf(",\"connections\":%ld,\"open_s\":%.6f,\"rss_per_conn_kb\":%.2f,\"rss_per_conn_kb_idle\":%.2f"
	       ",\"rss_per_conn_kb_end\":%.2f",
	       b.open, open_s, (double)(b.talked_rss - rss_before) / open, (double)(idle_rss - rss_before) / open,
	       (double)(end_rss - rss_before) / open);
	printf(",\"wire_bytes_per_msg_out\":%.2f,\"wire_bytes_per_msg_in\":%.2f,\"cpu_us_per_msg\":%.2f}\n",
	       (double)(sent_after - sent_before) / messages, (double)(received_after - received_before) / messages,
	       cpu / messages * 1e6);
	return ok;
}

int main(int argc, char **argv) {
	const char *workload = NULL, *event_lib = "poll";
	b.count = -1; b.size = -1; b.inflight = -1; b.connections = -1; b.time_limit = -1;
	b.hold = 45; b.ping_interval = 20; b.period = 10;
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
		else if (!strcmp(argv[i], "--hold")) b.hold = atof(argv[++i]);
		else if (!strcmp(argv[i], "--ping-interval")) b.ping_interval = atof(argv[++i]);
		else if (!strcmp(argv[i], "--period")) b.period = atof(argv[++i]);
		else if (!strcmp(argv[i], "--event-lib")) event_lib = argv[++i];
		else usage();
	}
	if (!workload || !b.url || strlen(workload) != 2 || workload[0] != 'W' || parse_url(b.url)) usage();
	b.workload = (enum workload)(workload[1] - '0');
	if (b.workload < W1 || (b.workload > W7 && b.workload != W9)) usage();
	static const long default_count[] = { 0, 20000, 100000, 50, 200000, 1000, 2000, 10000, 0, 3 };
	static const long default_size[] = { 0, 32, 1024, 4 * 1024 * 1024, 128, 0, 128, 0, 0, 1024 };
	if (b.count < 0) b.count = default_count[b.workload];
	if (b.size < 0) b.size = default_size[b.workload];
	if (b.inflight < 0) b.inflight = b.workload == W7 || b.workload == W9 ? 100 : 64;
	if (b.connections < 0)
		b.connections = b.workload == W5 || b.workload == W7 ? b.count : b.workload == W6 ? 100
			: b.workload == W9 ? 1000 : 1;
	if (b.time_limit < 0)
		b.time_limit = b.workload == W7 ? b.hold + 120 : b.workload == W9 ? b.count * b.period + 240 : 60;
	if (b.hold < 0 || b.ping_interval < 0 || b.period <= 0) usage();
	if (strcmp(event_lib, "poll") && strcmp(event_lib, "ev")) usage();
	raise_descriptor_limit();
	if (!strcmp(event_lib, "ev") && load_libev()) return 1;
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
	/* W9: lws's permessage-deflate, offered as lws's own examples offer it. */
	static const struct lws_extension extensions[] = {
		{ "permessage-deflate", lws_extension_callback_pm_deflate, "permessage-deflate; client_max_window_bits" },
		{ NULL, NULL, NULL }
	};
	if (b.workload == W9) info.extensions = extensions;
	void *foreign_loops[1] = { ev.loop };
	if (ev.loop) {
		info.options |= LWS_SERVER_OPTION_LIBEV;
		info.foreign_loops = foreign_loops;
	}
	b.context = lws_create_context(&info);
	if (!b.context) { fprintf(stderr, "lws_create_context failed\n"); return 1; }

	signal(SIGALRM, time_limit_reached);
	signal(SIGUSR1, wake);
	if (ev.loop) start_wake_timer(1, 1);
	alarm((unsigned int)(b.time_limit + 0.999));
	if (b.workload == W7 || b.workload == W9) {
		int ok = b.workload == W7 ? run_scale() : run_talking();
		lws_context_destroy(b.context);
		if (ev.loop) ev.loop_destroy(ev.loop);
		return ok ? 0 : 1;
	}
	long rss_before = rss_kb();
	double deadline = now() + b.time_limit;
	double connect_started = now();
	for (long c = 0; c < b.connections; c++)
		if (!connect_one()) b.failed++;
	while (!b.interrupted && now() < deadline)
		if (service() < 0) break;
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
	case W7: case W9: /* run_scale and run_talking printed their own */
		break;
	}
	printf("}\n");
	lws_context_destroy(b.context);
	if (ev.loop) ev.loop_destroy(ev.loop);
	return ok ? 0 : 1;
}
