/* The floor under permessage-deflate's memory: what zlib allocates per raw deflate and inflate
 * stream for every window (8-15 bits) and memory level (1-9), and what a connection that keeps
 * context takeover costs per 1 KiB JSON message when zlib's state is held between messages
 * against when it is released after each one (the window saved with deflateGetDictionary /
 * inflateGetDictionary, the state freed, and re-created and primed with deflateSetDictionary /
 * inflateSetDictionary for the next message).
 *
 *   cc -O2 -o zlib-floor Benchmarks/floor/zlib-floor.c -lz
 *   ./zlib-floor alloc            # bytes zlib allocates per stream, wb 8-15 x ml 1-9
 *   ./zlib-floor trade [N]        # N (default 2000) 1 KiB JSON messages per setting
 *
 * alloc: one JSON line per (window bits, memLevel): deflate_bytes is everything deflateInit2
 * allocates (zlib allocates all of it up front; for 8 bits, 9's, as zlib has no 8-bit raw
 * deflate), inflate_bytes what inflateInit2 plus the first
 * inflate allocate (the window comes with the first output).
 *
 * trade: the feed of wsbench's JSONFeed (seeded trade objects, 1 KiB each; the numbers are
 * printed as C prints them, so the bytes differ a little from Swift's), compressed message by
 * message with a sync flush and context takeover, decompressed by a peer stream with a 15-bit
 * window and checked byte for byte. Per setting: wire bytes per message (tail stripped), the
 * compressor's and decompressor's ns per message held and released (the median of 5 passes),
 * and the dictionary an idle connection keeps when released (the bytes it saw, capped at the
 * window). One JSON line each. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

static size_t allocated;

static voidpf counting_alloc(voidpf opaque, uInt items, uInt size) {
    (void)opaque;
    size_t bytes = (size_t)items * size;
    size_t *block = malloc(bytes + sizeof(size_t));
    if (!block) return Z_NULL;
    *block = bytes;
    allocated += bytes;
    return block + 1;
}

static void counting_free(voidpf opaque, voidpf address) {
    (void)opaque;
    if (address) free((size_t *)address - 1);
}

static void counted(z_stream *stream) {
    memset(stream, 0, sizeof *stream);
    stream->zalloc = counting_alloc;
    stream->zfree = counting_free;
}

static void alloc_table(void) {
    unsigned char input[64], compressed[256], output[64];
    memset(input, 'a', sizeof input);
    for (int bits = 8; bits <= 15; bits++) {
        for (int level = 1; level <= 9; level++) {
            z_stream deflater;
            counted(&deflater);
            allocated = 0;
            /* zlib refuses raw deflate with an 8-bit window; 9 is what it would use instead. */
            int deflateBits = bits == 8 ? 9 : bits;
            if (deflateInit2(&deflater, 6, Z_DEFLATED, -deflateBits, level, Z_DEFAULT_STRATEGY) != Z_OK) return;
            size_t deflateBytes = allocated;
            deflater.next_in = input;
            deflater.avail_in = sizeof input;
            deflater.next_out = compressed;
            deflater.avail_out = sizeof compressed;
            deflate(&deflater, Z_SYNC_FLUSH);
            size_t compressedLength = sizeof compressed - deflater.avail_out;
            deflateEnd(&deflater);

            z_stream inflater;
            counted(&inflater);
            allocated = 0;
            if (inflateInit2(&inflater, -bits) != Z_OK) return;
            size_t stateBytes = allocated;
            inflater.next_in = compressed;
            inflater.avail_in = (uInt)compressedLength;
            inflater.next_out = output;
            inflater.avail_out = sizeof output;
            inflate(&inflater, Z_SYNC_FLUSH);
            printf("{\"window_bits\":%d,\"mem_level\":%d,\"deflate_bytes\":%zu,\"inflate_state_bytes\":%zu,"
                   "\"inflate_bytes\":%zu}\n", bits, level, deflateBytes, stateBytes, allocated);
            inflateEnd(&inflater);
        }
    }
}

/* wsbench's JSONFeed: SplitMix64 seeded 0x5EED, trade objects cut to `size` bytes. */
static uint64_t splitmix_state;
static uint64_t splitmix(void) {
    splitmix_state += 0x9E3779B97F4A7C15ull;
    uint64_t z = splitmix_state;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* A decimal with at most `decimals` digits after the point, trailing zeros dropped but one
 * kept (as Swift's description of a Double prints 12.0 and 12.5). */
static int decimal(char *out, uint64_t scaled, int decimals) {
    uint64_t divisor = decimals == 2 ? 100 : 10000;
    char fraction[8];
    snprintf(fraction, sizeof fraction, "%0*llu", decimals, (unsigned long long)(scaled % divisor));
    int length = decimals;
    while (length > 1 && fraction[length - 1] == '0') length--;
    fraction[length] = 0;
    return sprintf(out, "%llu.%s", (unsigned long long)(scaled / divisor), fraction);
}

static char **json_feed(int count, int size) {
    static const char *symbols[] = {"BTCUSD", "ETHUSD", "SOLUSD", "XRPUSD"};
    splitmix_state = 0x5EED;
    long sequence = 0;
    char **messages = malloc(sizeof(char *) * count);
    for (int i = 0; i < count; i++) {
        char *text = malloc(size + 256);
        int length = sprintf(text, "[");
        while (length < size) {
            sequence++;
            char price[32], quantity[32];
            decimal(price, splitmix() % 6000000, 2);
            decimal(quantity, splitmix() % 50000, 4);
            const char *side = splitmix() % 2 == 0 ? "buy" : "sell";
            const char *symbol = symbols[splitmix() % 4];
            length += sprintf(text + length, "{\"sym\":\"%s\",\"px\":%s,\"qty\":%s,\"ts\":%ld,\"side\":\"%s\"},",
                              symbol, price, quantity, 1700000000000L + sequence * 37, side);
        }
        text[size] = 0;
        messages[i] = text;
    }
    return messages;
}

static double now_ns(void) {
    struct timespec time;
    clock_gettime(CLOCK_MONOTONIC, &time);
    return time.tv_sec * 1e9 + time.tv_nsec;
}

struct side {
    z_stream stream;
    int active;
    unsigned char dictionary[32768];
    uInt dictionaryLength;
};

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One pass over the feed; returns wire bytes in all, adds ns spent in each side. */
static size_t one_pass(char **feed, int count, int size, int bits, int level, int release,
                       double *deflateNs, double *inflateNs, uInt *keptDeflate, uInt *keptInflate) {
    struct side *sender = calloc(1, sizeof *sender), *receiver = calloc(1, sizeof *receiver);
    unsigned char *wire = malloc(size * 2 + 64), *output = malloc(size + 64);
    size_t total = 0;
    for (int i = 0; i < count; i++) {
        double start = now_ns();
        if (!sender->active) {
            deflateInit2(&sender->stream, 6, Z_DEFLATED, -bits, level, Z_DEFAULT_STRATEGY);
            if (sender->dictionaryLength) deflateSetDictionary(&sender->stream, sender->dictionary, sender->dictionaryLength);
            sender->active = 1;
        }
        sender->stream.next_in = (unsigned char *)feed[i];
        sender->stream.avail_in = size;
        sender->stream.next_out = wire;
        sender->stream.avail_out = size * 2 + 64;
        deflate(&sender->stream, Z_SYNC_FLUSH);
        size_t length = size * 2 + 64 - sender->stream.avail_out - 4;
        if (release) {
            deflateGetDictionary(&sender->stream, sender->dictionary, &sender->dictionaryLength);
            deflateEnd(&sender->stream);
            sender->active = 0;
        }
        *deflateNs += now_ns() - start;
        total += length;

        start = now_ns();
        if (!receiver->active) {
            inflateInit2(&receiver->stream, -15);
            if (receiver->dictionaryLength) inflateSetDictionary(&receiver->stream, receiver->dictionary, receiver->dictionaryLength);
            receiver->active = 1;
        }
        memcpy(wire + length, "\x00\x00\xff\xff", 4);
        receiver->stream.next_in = wire;
        receiver->stream.avail_in = (uInt)length + 4;
        receiver->stream.next_out = output;
        receiver->stream.avail_out = size + 64;
        int status = inflate(&receiver->stream, Z_SYNC_FLUSH);
        if (release) {
            inflateGetDictionary(&receiver->stream, receiver->dictionary, &receiver->dictionaryLength);
            inflateEnd(&receiver->stream);
            receiver->active = 0;
        }
        *inflateNs += now_ns() - start;
        if ((status != Z_OK && status != Z_BUF_ERROR) || size + 64 - receiver->stream.avail_out != (uInt)size
            || memcmp(output, feed[i], size) != 0) {
            fprintf(stderr, "mismatch at message %d (wb %d ml %d release %d, status %d)\n", i, bits, level, release, status);
            exit(1);
        }
    }
    *keptDeflate = sender->dictionaryLength;
    *keptInflate = receiver->dictionaryLength;
    if (sender->active) deflateEnd(&sender->stream);
    if (receiver->active) inflateEnd(&receiver->stream);
    free(sender); free(receiver); free(wire); free(output);
    return total;
}

static void trade_table(int count) {
    const int size = 1024;
    char **feed = json_feed(count, size);
    static const int settings[][2] = {{15, 8}, {15, 5}, {14, 5}, {13, 5}, {12, 8}, {12, 5}, {12, 4},
                                      {11, 5}, {11, 4}, {10, 5}, {10, 4}, {9, 4}, {9, 1}};
    for (size_t s = 0; s < sizeof settings / sizeof settings[0]; s++) {
        for (int release = 0; release <= 1; release++) {
            enum { passes = 5 };
            double deflateNs[passes], inflateNs[passes];
            size_t bytes = 0;
            uInt keptDeflate = 0, keptInflate = 0;
            for (int pass = 0; pass < passes; pass++) {
                deflateNs[pass] = inflateNs[pass] = 0;
                bytes = one_pass(feed, count, size, settings[s][0], settings[s][1], release,
                                 &deflateNs[pass], &inflateNs[pass], &keptDeflate, &keptInflate);
            }
            qsort(deflateNs, passes, sizeof(double), compare_doubles);
            qsort(inflateNs, passes, sizeof(double), compare_doubles);
            printf("{\"window_bits\":%d,\"mem_level\":%d,\"released_between_messages\":%s,\"messages\":%d,"
                   "\"wire_bytes_per_msg\":%.1f,\"ratio\":%.3f,\"deflate_ns_per_msg\":%.0f,\"inflate_ns_per_msg\":%.0f,"
                   "\"kept_deflate_dictionary\":%u,\"kept_inflate_dictionary\":%u}\n",
                   settings[s][0], settings[s][1], release ? "true" : "false", count, (double)bytes / count,
                   (double)bytes / ((double)count * size), deflateNs[passes / 2] / count, inflateNs[passes / 2] / count,
                   release ? keptDeflate : 0, release ? keptInflate : 0);
            fflush(stdout);
        }
    }
}

int main(int argc, char **argv) {
    if (argc >= 2 && strcmp(argv[1], "alloc") == 0) {
        alloc_table();
        return 0;
    }
    if (argc >= 2 && strcmp(argv[1], "trade") == 0) {
        trade_table(argc >= 3 ? atoi(argv[2]) : 2000);
        return 0;
    }
    fprintf(stderr, "usage: %s alloc | trade [messages]\n", argv[0]);
    return 2;
}
