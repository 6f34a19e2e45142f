// The C surface WebSocketStreams uses: libwebsockets, OpenSSL, and small
// static inline helpers for what Swift cannot import directly (function-like
// macros, variadic calls, flag unions).
#ifndef WEBSOCKETSTREAMS_CLIBWEBSOCKETS_SHIM_H
#define WEBSOCKETSTREAMS_CLIBWEBSOCKETS_SHIM_H

#include <libwebsockets.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/ssl.h>
#include <openssl/rand.h>
#include <openssl/bio.h>
#include <ev.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netdb.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <unistd.h>
#include <sys/syscall.h>

/// `LWS_PRE`: bytes lws needs in front of every payload given to `lws_write`.
static inline size_t wss_lws_pre(void) { return LWS_PRE; }

/// Names the calling thread (visible in debuggers and `top -H`); at most 15 bytes are kept.
static inline void wss_set_thread_name(const char *name) { prctl(PR_SET_NAME, name, 0, 0, 0); }

/// `lws_write` with the protocol flags given as a plain integer, so Swift can
/// combine `LWS_WRITE_BINARY | LWS_WRITE_NO_FIN` without enum arithmetic.
static inline int wss_write(struct lws *wsi, unsigned char *payload, size_t length, unsigned int flags) {
    return lws_write(wsi, payload, length, (enum lws_write_protocol)flags);
}

/// `lws_close_reason` taking the status as a plain integer (any 1000-4999 code).
static inline void wss_close_reason(struct lws *wsi, unsigned int code, const unsigned char *reason, size_t length) {
    lws_close_reason(wsi, (enum lws_close_status)code, (unsigned char *)reason, length);
}

/// Reads a custom (non-token) request or response header; `name` must end with ':'.
/// Returns the value length, or -1 when the header is absent.
static inline int wss_custom_header(struct lws *wsi, const char *name, char *destination, int capacity) {
    int length = lws_hdr_custom_length(wsi, name, (int)strlen(name));
    if (length < 0 || length + 1 > capacity) return -1;
    return lws_hdr_custom_copy(wsi, destination, capacity, name, (int)strlen(name));
}

/// The `Sec-WebSocket-Accept` value for a `Sec-WebSocket-Key` (RFC 6455 section 4.2.2),
/// written NUL-terminated to `out` (at least 29 bytes). Used by the test server's raw routes.
static inline int wss_websocket_accept(const char *key, char *out, size_t capacity) {
    static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
    char joined[256];
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int digest_length = 0;
    int length = snprintf(joined, sizeof(joined), "%s%s", key, guid);
    if (length < 0 || (size_t)length >= sizeof(joined) || capacity < 29) return 0;
    if (!EVP_Digest(joined, (size_t)length, digest, &digest_length, EVP_sha1(), NULL)) return 0;
    return EVP_EncodeBlock((unsigned char *)out, digest, (int)digest_length) > 0;
}

/// What lws 4.1.6 passes as `in` with `LWS_EXT_CB_PAYLOAD_TX`: a mirror of its private
/// `struct lws_ext_pm_deflate_rx_ebufs` (input, then output).
struct wss_pmd_ebufs {
    struct lws_tokens eb_in;
    struct lws_tokens eb_out;
};

/// Whether lws asks the extension to compress a whole empty message (one final TEXT or
/// BINARY frame with no payload).
///
/// lws 4.1.6 aborts the process there (extension-permessage-deflate.c: "FAIL want to trim
/// out length", `assert(0)`) whenever the deflate stream has been used before: zlib will
/// not flush twice in a row without input, so the output is shorter than the 4-byte tail
/// lws trims. Leaving such a message to lws uncompressed (RSV1 clear, which RFC 7692
/// section 6 allows for any message) sends it correctly and leaves the deflate stream
/// untouched.
static inline int wss_is_empty_whole_message(enum lws_extension_callback_reasons reason, void *in, size_t length) {
    if (reason != LWS_EXT_CB_PAYLOAD_TX || !in) return 0;
    const struct wss_pmd_ebufs *buffers = (const struct wss_pmd_ebufs *)in;
    int type = (int)(length & 0xf);
    return buffers->eb_in.len == 0 && !(length & LWS_WRITE_NO_FIN)
        && (type == LWS_WRITE_TEXT || type == LWS_WRITE_BINARY);
}

/// The permessage-deflate extension callback for servers: lws's own, except that empty
/// messages go out uncompressed (see `wss_is_empty_whole_message`).
static inline int wss_server_pm_deflate(struct lws_context *context, const struct lws_extension *extension,
                                        struct lws *wsi, enum lws_extension_callback_reasons reason,
                                        void *user, void *in, size_t length) {
    if (wss_is_empty_whole_message(reason, in, length)) return 0;
    return lws_extension_callback_pm_deflate(context, extension, wsi, reason, user, in, length);
}

/// Generates a P-256 key pair (EVP_EC_gen is a variadic macro in OpenSSL 3).
static inline EVP_PKEY *wss_generate_ec_key(void) {
    return EVP_EC_gen("prime256v1");
}

/// Adds an X509v3 extension given in OpenSSL's config syntax (e.g. "DNS:localhost,IP:127.0.0.1").
static inline int wss_add_extension(X509 *certificate, X509 *issuer, int nid, const char *value) {
    X509V3_CTX context;
    X509V3_set_ctx_nodb(&context);
    X509V3_set_ctx(&context, issuer, certificate, NULL, NULL, 0);
    X509_EXTENSION *extension = X509V3_EXT_conf_nid(NULL, &context, nid, value);
    if (!extension) return 0;
    int ok = X509_add_ext(certificate, extension, -1);
    X509_EXTENSION_free(extension);
    return ok;
}

/// Creates a certificate for `subject_key` named `common_name`, valid from
/// `not_before_days` to `not_after_days` relative to now (negative: the past),
/// signed by `issuer_key` under `issuer` (NULL: self-signed). `alt_names` may be NULL.
static inline X509 *wss_make_certificate(EVP_PKEY *subject_key, const char *common_name, long serial,
                                         int not_before_days, int not_after_days, int is_ca,
                                         const char *alt_names, X509 *issuer, EVP_PKEY *issuer_key) {
    X509 *certificate = X509_new();
    if (!certificate) return NULL;
    X509_set_version(certificate, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(certificate), serial);
    X509_gmtime_adj(X509_getm_notBefore(certificate), (long)not_before_days * 86400L);
    X509_gmtime_adj(X509_getm_notAfter(certificate), (long)not_after_days * 86400L);
    X509_set_pubkey(certificate, subject_key);
    X509_NAME *name = X509_get_subject_name(certificate);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)common_name, -1, -1, 0);
    X509_set_issuer_name(certificate, issuer ? X509_get_subject_name(issuer) : name);
    X509 *signer = issuer ? issuer : certificate;
    int ok = 1;
    if (is_ca) {
        ok &= wss_add_extension(certificate, signer, NID_basic_constraints, "critical,CA:TRUE");
        ok &= wss_add_extension(certificate, signer, NID_key_usage, "critical,keyCertSign,cRLSign");
    } else {
        ok &= wss_add_extension(certificate, signer, NID_basic_constraints, "CA:FALSE");
        ok &= wss_add_extension(certificate, signer, NID_ext_key_usage, "serverAuth,clientAuth");
    }
    ok &= wss_add_extension(certificate, signer, NID_subject_key_identifier, "hash");
    if (alt_names && alt_names[0]) ok &= wss_add_extension(certificate, signer, NID_subject_alt_name, alt_names);
    if (!ok || !X509_sign(certificate, issuer_key ? issuer_key : subject_key, EVP_sha256())) {
        X509_free(certificate);
        return NULL;
    }
    return certificate;
}

/// Writes a certificate as PEM to `path`. Returns 1 on success.
static inline int wss_write_certificate_pem(X509 *certificate, const char *path) {
    FILE *file = fopen(path, "w");
    if (!file) return 0;
    int ok = PEM_write_X509(file, certificate);
    fclose(file);
    return ok;
}

/// Writes a private key as unencrypted PKCS#8 PEM to `path` with mode 0600. Returns 1 on success.
static inline int wss_write_private_key_pem(EVP_PKEY *key, const char *path) {
    int descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (descriptor < 0) return 0;
    FILE *file = fdopen(descriptor, "w");
    if (!file) { close(descriptor); return 0; }
    int ok = PEM_write_PrivateKey(file, key, NULL, NULL, 0, NULL, NULL);
    fclose(file);
    return ok;
}

/// The DER SubjectPublicKeyInfo of certificate `index` of the connection's verified chain
/// (leaf first) or, when there is none (verification off, a resumed session), of the chain
/// the peer sent. Allocates `*out` (free it with `wss_free`); returns its length, 0 past the
/// chain's end, negative on error. What `sha256/` public-key pins are the digest of.
static inline int wss_peer_public_key_der(SSL *ssl, int index, unsigned char **out) {
    STACK_OF(X509) *chain = SSL_get0_verified_chain(ssl);
    if (chain == NULL) chain = SSL_get_peer_cert_chain(ssl);
    if (chain == NULL || index < 0 || index >= sk_X509_num(chain)) return 0;
    *out = NULL;
    return i2d_X509_PUBKEY(X509_get_X509_PUBKEY(sk_X509_value(chain, index)), out);
}

/// The DER SubjectPublicKeyInfo of the first certificate in the PEM file at `path`, as
/// `wss_peer_public_key_der` gives it; negative when the file cannot be read.
static inline int wss_certificate_file_public_key_der(const char *path, unsigned char **out) {
    FILE *file = fopen(path, "r");
    if (!file) return -1;
    X509 *certificate = PEM_read_X509(file, NULL, NULL, NULL);
    fclose(file);
    if (!certificate) return -1;
    *out = NULL;
    int length = i2d_X509_PUBKEY(X509_get_X509_PUBKEY(certificate), out);
    X509_free(certificate);
    return length;
}

/// The DER encoding of certificate `index` of the connection's verified chain (leaf first)
/// or, without one, of the chain the peer sent: what a verify hook sees. Allocates `*out`
/// (free it with `wss_free`); returns its length, 0 past the chain's end.
static inline int wss_peer_certificate_der(SSL *ssl, int index, unsigned char **out) {
    STACK_OF(X509) *chain = SSL_get0_verified_chain(ssl);
    if (chain == NULL) chain = SSL_get_peer_cert_chain(ssl);
    if (chain == NULL || index < 0 || index >= sk_X509_num(chain)) return 0;
    *out = NULL;
    return i2d_X509(sk_X509_value(chain, index), out);
}

/// Adds every certificate of the PEM text `pem` to the context's trust store; returns how
/// many, or -1 when the text holds none or one is malformed.
static inline int wss_ctx_trust_pem(SSL_CTX *context, const char *pem, int length) {
    BIO *bio = BIO_new_mem_buf(pem, length);
    if (!bio) return -1;
    X509_STORE *store = SSL_CTX_get_cert_store(context);
    int count = 0;
    X509 *certificate;
    while ((certificate = PEM_read_bio_X509(bio, NULL, NULL, NULL)) != NULL) {
        int ok = X509_STORE_add_cert(store, certificate);
        X509_free(certificate);
        if (!ok) { BIO_free(bio); return -1; }
        count += 1;
    }
    BIO_free(bio);
    unsigned long last = ERR_peek_last_error();
    if (count > 0 && ERR_GET_LIB(last) == ERR_LIB_PEM && ERR_GET_REASON(last) == PEM_R_NO_START_LINE) ERR_clear_error();
    return count > 0 ? count : -1;
}

/// Uses the PEM text `pem` as the client certificate: the first certificate, then any
/// more as its chain. Returns 1 on success, 0 on failure.
static inline int wss_ctx_use_certificate_pem(SSL_CTX *context, const char *pem, int length) {
    BIO *bio = BIO_new_mem_buf(pem, length);
    if (!bio) return 0;
    X509 *leaf = PEM_read_bio_X509_AUX(bio, NULL, NULL, NULL);
    if (!leaf || SSL_CTX_use_certificate(context, leaf) != 1) { X509_free(leaf); BIO_free(bio); return 0; }
    X509_free(leaf);
    SSL_CTX_clear_chain_certs(context);
    X509 *next;
    while ((next = PEM_read_bio_X509(bio, NULL, NULL, NULL)) != NULL) {
        if (SSL_CTX_add0_chain_cert(context, next) != 1) { X509_free(next); BIO_free(bio); return 0; }
    }
    BIO_free(bio);
    ERR_clear_error();  // the end of the text
    return 1;
}

/// Uses the PEM text `pem` as the client certificate's private key. Returns 1 on success.
static inline int wss_ctx_use_private_key_pem(SSL_CTX *context, const char *pem, int length) {
    BIO *bio = BIO_new_mem_buf(pem, length);
    if (!bio) return 0;
    EVP_PKEY *key = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
    BIO_free(bio);
    if (!key) return 0;
    int ok = SSL_CTX_use_PrivateKey(context, key);
    EVP_PKEY_free(key);
    return ok;
}

/// How many CPUs this process may run on (its affinity mask), at least 1. Through the
/// system call: glibc's `sched_getaffinity` and `CPU_COUNT` need `_GNU_SOURCE`.
static inline int wss_available_cpu_count(void) {
    unsigned long mask[16];
    long length = syscall(SYS_sched_getaffinity, 0, sizeof(mask), mask);
    if (length <= 0) return 1;
    int count = 0;
    for (long index = 0; index < length / (long)sizeof(unsigned long); index++) count += __builtin_popcountl(mask[index]);
    return count > 0 ? count : 1;
}

// MARK: - libev: the event loop under a client loop's lws context (epoll)

/// A libev loop on epoll, and the one timer a loop thread keeps for the nearest of its
/// connections' deadlines (the deadlines themselves are kept in Swift).
typedef struct wss_evloop {
    struct ev_loop *loop;
    ev_timer timer;
    /// Every second: wakes lws so its own timers (kept in its sorted list, which its libev
    /// plugin looks at only after I/O) are never more than a second late.
    ev_timer housekeeping;
    struct lws_context *context;
    /// Set by the timer's callback; read and cleared by `wss_evloop_run`.
    int timer_fired;
} wss_evloop;

static void wss_evloop_timer_fired(struct ev_loop *loop, ev_timer *timer, int events) {
    (void)loop; (void)events;
    ((wss_evloop *)timer->data)->timer_fired = 1;
}

static void wss_evloop_housekeeping(struct ev_loop *loop, ev_timer *timer, int events) {
    (void)loop; (void)events;
    wss_evloop *evloop = (wss_evloop *)timer->data;
    if (evloop->context) lws_cancel_service(evloop->context);
}

/// Starts the once-a-second wake-up of `context`'s own timers.
static inline void wss_evloop_start_housekeeping(wss_evloop *evloop, struct lws_context *context) {
    evloop->context = context;
    ev_timer_init(&evloop->housekeeping, wss_evloop_housekeeping, 1., 1.);
    evloop->housekeeping.data = evloop;
    ev_timer_start(evloop->loop, &evloop->housekeeping);
}

/// Stops it (before the context is destroyed).
static inline void wss_evloop_stop_housekeeping(wss_evloop *evloop) {
    if (evloop->context) ev_timer_stop(evloop->loop, &evloop->housekeeping);
    evloop->context = NULL;
}

/// A new loop on epoll; NULL when libev cannot make one.
static inline wss_evloop *wss_evloop_new(void) {
    struct ev_loop *loop = ev_loop_new(EVBACKEND_EPOLL);
    if (!loop) return NULL;
    wss_evloop *evloop = (wss_evloop *)calloc(1, sizeof(wss_evloop));
    if (!evloop) { ev_loop_destroy(loop); return NULL; }
    evloop->loop = loop;
    ev_timer_init(&evloop->timer, wss_evloop_timer_fired, 0., 0.);
    evloop->timer.data = evloop;
    return evloop;
}

/// The `struct ev_loop *` lws takes in `foreign_loops`.
static inline void *wss_evloop_native(wss_evloop *evloop) { return evloop->loop; }

/// Arms the timer `seconds` from now (a negative value disarms it).
static inline void wss_evloop_set_timer(wss_evloop *evloop, double seconds) {
    ev_timer_stop(evloop->loop, &evloop->timer);
    if (seconds >= 0) {
        // libev counts from the time its last pass began; the loop may have worked since.
        ev_now_update(evloop->loop);
        ev_timer_set(&evloop->timer, seconds, 0.);
        ev_timer_start(evloop->loop, &evloop->timer);
    }
}

/// One pass: waits for events (not when `nowait`), runs their watchers (lws's among
/// them), and returns whether the timer fired.
static inline int wss_evloop_run(wss_evloop *evloop, int nowait) {
    evloop->timer_fired = 0;
    ev_run(evloop->loop, nowait ? EVRUN_NOWAIT : EVRUN_ONCE);
    return evloop->timer_fired;
}

/// Frees the loop (after the lws context that used it is destroyed).
static inline void wss_evloop_free(wss_evloop *evloop) {
    ev_timer_stop(evloop->loop, &evloop->timer);
    ev_loop_destroy(evloop->loop);
    free(evloop);
}

/// Closes `wsi` now (`LWS_TO_KILL_SYNC`), from outside any of its callbacks.
static inline void wss_close_now(struct lws *wsi) { lws_set_timeout(wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_SYNC); }

/// `OPENSSL_free` (a macro).
static inline void wss_free(void *pointer) { OPENSSL_free(pointer); }

#endif
