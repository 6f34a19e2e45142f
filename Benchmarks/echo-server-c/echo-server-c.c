/*
 * echo-server-c: a plain libwebsockets echo server in C, to check that a wsbench figure
 * holds against a server that is not TestServer (W1-W3 only: it echoes, nothing else).
 *
 *   echo-server-c --port N [--rx BYTES] [--per-fragment]
 *
 * Every message comes back whole, as one frame of its kind (binary or text), written with
 * one lws_write (lws keeps what the socket does not take). --per-fragment echoes each
 * piece lws hands over as it arrives instead (as fragments of one message), so the echo
 * starts before the message has fully arrived. --rx sets the protocol's rx_buffer_size
 * (lws's default when 0). --port 0 picks a free port and prints it.
 *
 * Build: cc -O2 -o echo-server-c echo-server-c.c $(pkg-config --cflags --libs libwebsockets)
 */
#include <libwebsockets.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct piece {
	struct piece *next;
	size_t length;
	int flags;
	unsigned char bytes[];       /* LWS_PRE of room, then the payload */
};

struct session {
	unsigned char *message;      /* LWS_PRE + what has arrived of the current message */
	size_t length, capacity;
	int binary, continuing;
	struct piece *head, *tail;   /* what waits to be written */
};

static int per_fragment;
static volatile int interrupted;

static void queue_piece(struct lws *wsi, struct session *s, const void *bytes, size_t length, int flags)
{
	struct piece *p = malloc(sizeof(*p) + LWS_PRE + length);
	if (!p)
		return;
	p->next = NULL;
	p->length = length;
	p->flags = flags;
	memcpy(p->bytes + LWS_PRE, bytes, length);
	if (s->tail)
		s->tail->next = p;
	else
		s->head = p;
	s->tail = p;
	lws_callback_on_writable(wsi);
}

static int callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len)
{
	struct session *s = user;
	switch (reason) {
	case LWS_CALLBACK_RECEIVE: {
		int first = lws_is_first_fragment(wsi), final = lws_is_final_fragment(wsi);
		if (per_fragment) {
			int flags = lws_write_ws_flags(lws_frame_is_binary(wsi) ? LWS_WRITE_BINARY : LWS_WRITE_TEXT,
						       first, final);
			queue_piece(wsi, s, in, len, flags);
			break;
		}
		if (first && s->length == 0)
			s->binary = lws_frame_is_binary(wsi);
		if (s->length + len > s->capacity) {
			size_t want = s->capacity ? s->capacity : 64 * 1024;
			while (want < s->length + len)
				want *= 2;
			unsigned char *grown = realloc(s->message, LWS_PRE + want);
			if (!grown)
				return -1;
			s->message = grown;
			s->capacity = want;
		}
		memcpy(s->message + LWS_PRE + s->length, in, len);
		s->length += len;
		if (final && lws_remaining_packet_payload(wsi) == 0) {
			queue_piece(wsi, s, s->message + LWS_PRE, s->length,
				    s->binary ? LWS_WRITE_BINARY : LWS_WRITE_TEXT);
			s->length = 0;
		}
		break;
	}
	case LWS_CALLBACK_SERVER_WRITEABLE:
		while (s->head) {
			struct piece *p = s->head;
			if (lws_write(wsi, p->bytes + LWS_PRE, p->length, (enum lws_write_protocol)p->flags) < (int)p->length)
				return -1;
			s->head = p->next;
			if (!s->head)
				s->tail = NULL;
			free(p);
			if (lws_send_pipe_choked(wsi)) {
				if (s->head)
					lws_callback_on_writable(wsi);
				break;
			}
		}
		break;
	case LWS_CALLBACK_CLOSED:
		free(s->message);
		while (s->head) {
			struct piece *p = s->head;
			s->head = p->next;
			free(p);
		}
		break;
	default:
		break;
	}
	return 0;
}

static struct lws_protocols protocols[] = {
	{ "echo", callback, sizeof(struct session), 0, 0, NULL, 0 },
	{ NULL, NULL, 0, 0, 0, NULL, 0 }
};

static void on_signal(int signal_number)
{
	(void)signal_number;
	interrupted = 1;
}

int main(int argc, char **argv)
{
	int port = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--port") && i + 1 < argc)
			port = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--rx") && i + 1 < argc)
			protocols[0].rx_buffer_size = (size_t)atol(argv[++i]);
		else if (!strcmp(argv[i], "--per-fragment"))
			per_fragment = 1;
		else {
			fprintf(stderr, "usage: echo-server-c --port N [--rx BYTES] [--per-fragment]\n");
			return 2;
		}
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	lws_set_log_level(LLL_ERR, NULL);

	struct lws_context_creation_info info;
	memset(&info, 0, sizeof(info));
	info.port = port ? port : CONTEXT_PORT_NO_LISTEN;
	info.iface = "127.0.0.1";
	info.protocols = protocols;
	info.gid = -1;
	info.uid = -1;
	if (!port) {
		/* lws has no "any port" option here: bind one ourselves and hand its number over */
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in address = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		socklen_t size = sizeof(address);
		if (fd < 0 || bind(fd, (struct sockaddr *)&address, size) || getsockname(fd, (struct sockaddr *)&address, &size))
			return 1;
		port = ntohs(address.sin_port);
		close(fd);
		info.port = port;
	}
	struct lws_context *context = lws_create_context(&info);
	if (!context)
		return 1;
	printf("%d\n", port);
	fflush(stdout);
	while (!interrupted && lws_service(context, 0) >= 0)
		;
	lws_context_destroy(context);
	return 0;
}
