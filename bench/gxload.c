/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gxload.c - a small HTTP/1.1 load client for the benchmarks. C workers
 * (threads), one keep-alive connection each, POST the same body to one URL
 * for D seconds or R requests in total, check that every status is 200 and
 * print requests/s and latency percentiles in microseconds. Latency is from
 * the first byte sent to the last byte of the response read.
 *
 *   gxload -u http://127.0.0.1:8888/gpu-extender/filter -b body.json
 *          [-c 16] [-d 5 | -n 1000] [-w 2] [-m 20] [-j]
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define RD_BUF 65536
#define MAX_WORKERS 256
#define MAX_HEADER_LINE 8192

struct opts {
    char host[256];
    char port[16];
    char path[1024];
    const char *body_file;
    int conc;
    double duration_s; /* 0: run until -n requests */
    long requests;     /* 0: run for -d seconds */
    int warmup;        /* unrecorded requests per worker first */
    long min_requests; /* with -d: keep going until this many were recorded */
    bool json;
};

struct shared {
    const struct opts *o;
    char *req; /* header + body */
    size_t req_len;
    int64_t deadline_ns;
    atomic_long claimed;  /* -n mode: requests handed out */
    atomic_long recorded; /* requests measured so far */
    atomic_bool stop;
    pthread_barrier_t warm, go; /* all warmed up; clock started */
};

struct reader {
    int fd;
    char buf[RD_BUF];
    size_t pos, len;
};

struct worker {
    pthread_t th;
    struct shared *sh;
    struct reader rd;
    int64_t *lat; /* latencies, ns */
    size_t n, cap;
    long non200;
    long io_errors;
    int last_status;
};

/* Monotonic clock in nanoseconds. */
static int64_t
now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Split http://host[:port]/path into @o; false on anything else. */
static bool
parse_url(const char *url, struct opts *o)
{
    const char *p = url, *host, *slash, *colon;
    size_t hl;

    if (strncmp(p, "http://", 7) != 0)
        return false;
    host = p + 7;
    slash = strchr(host, '/');
    if (slash == NULL)
        slash = host + strlen(host);
    colon = memchr(host, ':', (size_t)(slash - host));
    hl = (size_t)((colon ? colon : slash) - host);
    if (hl == 0 || hl >= sizeof(o->host))
        return false;
    memcpy(o->host, host, hl);
    o->host[hl] = '\0';
    if (colon != NULL) {
        size_t pl = (size_t)(slash - colon - 1);
        if (pl == 0 || pl >= sizeof(o->port))
            return false;
        memcpy(o->port, colon + 1, pl);
        o->port[pl] = '\0';
    } else {
        (void)snprintf(o->port, sizeof(o->port), "80");
    }
    (void)snprintf(o->path, sizeof(o->path), "%s", *slash ? slash : "/");
    return true;
}

/* Connect to the target with TCP_NODELAY; -1 on failure. */
static int
dial(const struct opts *o)
{
    struct addrinfo hints, *res = NULL, *ai;
    int fd = -1, one = 1;

    memset(&hints, 0, sizeof(hints));
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(o->host, o->port, &hints, &res) != 0)
        return -1;
    for (ai = res; ai != NULL; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
        if (fd < 0)
            continue;
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
            break;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd >= 0)
        (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

/* Write all of @len bytes; false on error. */
static bool
write_all(int fd, const char *p, size_t len)
{
    while (len > 0) {
        ssize_t w = send(fd, p, len, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        p += w;
        len -= (size_t)w;
    }
    return true;
}

/* Refill the reader; false on EOF or error. */
static bool
rd_fill(struct reader *r)
{
    ssize_t n;

    if (r->pos < r->len)
        return true;
    do {
        n = recv(r->fd, r->buf, sizeof(r->buf), 0);
    } while (n < 0 && errno == EINTR);
    if (n <= 0)
        return false;
    r->pos = 0;
    r->len = (size_t)n;
    return true;
}

/* Read one line (without CRLF) into @out; false on EOF or an overlong line. */
static bool
rd_line(struct reader *r, char *out, size_t cap)
{
    size_t n = 0;

    for (;;) {
        if (!rd_fill(r))
            return false;
        char c = r->buf[r->pos++];
        if (c == '\n')
            break;
        if (n + 1 >= cap)
            return false;
        out[n++] = c;
    }
    if (n > 0 && out[n - 1] == '\r')
        n--;
    out[n] = '\0';
    return true;
}

/* Discard @n bytes; false on EOF. */
static bool
rd_skip(struct reader *r, uint64_t n)
{
    while (n > 0) {
        size_t avail;
        if (!rd_fill(r))
            return false;
        avail = r->len - r->pos;
        if (avail > n)
            avail = (size_t)n;
        r->pos += avail;
        n -= avail;
    }
    return true;
}

/* True when a Connection header value says close. */
static bool
has_close(const char *v)
{
    for (; *v; v++)
        if (strncasecmp(v, "close", 5) == 0)
            return true;
    return false;
}

/*
 * Read one response: status, headers, then the body by Content-Length or
 * chunked encoding. *keep is false when the server will close. False on a
 * protocol or I/O error.
 */
static bool
read_response(struct reader *r, int *status, bool *keep)
{
    char line[MAX_HEADER_LINE];
    uint64_t clen = 0;
    bool chunked = false, have_len = false;
    char *end;

    *keep = true;
    if (!rd_line(r, line, sizeof(line)) || strncmp(line, "HTTP/1.", 7) != 0 || strlen(line) < 12)
        return false;
    *status = (int)strtol(line + 9, &end, 10);
    for (;;) {
        if (!rd_line(r, line, sizeof(line)))
            return false;
        if (line[0] == '\0')
            break;
        if (strncasecmp(line, "content-length:", 15) == 0) {
            clen = strtoull(line + 15, &end, 10);
            have_len = true;
        } else if (strncasecmp(line, "transfer-encoding:", 18) == 0 && strstr(line, "chunked")) {
            chunked = true;
        } else if (strncasecmp(line, "connection:", 11) == 0 && has_close(line + 11)) {
            *keep = false;
        }
    }
    if (chunked) {
        for (;;) {
            uint64_t sz;
            if (!rd_line(r, line, sizeof(line)))
                return false;
            sz = strtoull(line, &end, 16);
            if (end == line)
                return false;
            if (sz == 0) {
                /* trailers up to the empty line */
                do {
                    if (!rd_line(r, line, sizeof(line)))
                        return false;
                } while (line[0] != '\0');
                return true;
            }
            if (!rd_skip(r, sz) || !rd_line(r, line, sizeof(line)))
                return false;
        }
    }
    if (have_len)
        return rd_skip(r, clen);
    /* no length: the body runs to EOF */
    *keep = false;
    while (rd_fill(r))
        r->pos = r->len;
    return true;
}

/* Record one latency sample; false on ENOMEM. */
static bool
record(struct worker *w, int64_t ns)
{
    if (w->n == w->cap) {
        size_t ncap = w->cap ? w->cap * 2 : 4096;
        int64_t *nl = realloc(w->lat, ncap * sizeof(*nl));
        if (nl == NULL)
            return false;
        w->lat = nl;
        w->cap = ncap;
    }
    w->lat[w->n++] = ns;
    return true;
}

/* True when this worker may start another measured request. */
static bool
claim(struct shared *sh)
{
    const struct opts *o = sh->o;

    if (atomic_load(&sh->stop))
        return false;
    if (o->requests > 0)
        return atomic_fetch_add(&sh->claimed, 1) < o->requests;
    if (now_ns() < sh->deadline_ns)
        return true;
    return atomic_load(&sh->recorded) < o->min_requests;
}

/* One request on the worker's connection; false on an I/O error. */
static bool
one_request(struct worker *w, int *status, int64_t *ns)
{
    struct shared *sh = w->sh;
    int64_t t0;
    bool keep;

    if (w->rd.fd < 0) {
        w->rd.fd = dial(sh->o);
        w->rd.pos = w->rd.len = 0;
        if (w->rd.fd < 0)
            return false;
    }
    t0 = now_ns();
    if (!write_all(w->rd.fd, sh->req, sh->req_len) || !read_response(&w->rd, status, &keep)) {
        close(w->rd.fd);
        w->rd.fd = -1;
        return false;
    }
    *ns = now_ns() - t0;
    if (!keep) {
        close(w->rd.fd);
        w->rd.fd = -1;
    }
    return true;
}

static void *
worker_main(void *arg)
{
    struct worker *w = arg;
    struct shared *sh = w->sh;
    int status = 0;
    int64_t ns;

    for (int i = 0; i < sh->o->warmup; i++) {
        if (!one_request(w, &status, &ns)) {
            w->io_errors++;
            atomic_store(&sh->stop, true);
            break;
        }
    }
    (void)pthread_barrier_wait(&sh->warm);
    (void)pthread_barrier_wait(&sh->go);
    while (claim(sh)) {
        if (!one_request(w, &status, &ns)) {
            w->io_errors++;
            if (w->io_errors > 3) {
                atomic_store(&sh->stop, true);
                break;
            }
            continue;
        }
        if (status != 200) {
            w->non200++;
            w->last_status = status;
        }
        if (!record(w, ns)) {
            atomic_store(&sh->stop, true);
            break;
        }
        atomic_fetch_add(&sh->recorded, 1);
    }
    if (w->rd.fd >= 0)
        close(w->rd.fd);
    return NULL;
}

static int
cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted @v in microseconds. */
static double
pct_us(const int64_t *v, size_t n, double p)
{
    size_t k;

    if (n == 0)
        return 0;
    k = (size_t)(p / 100.0 * (double)n + 0.999999);
    if (k < 1)
        k = 1;
    if (k > n)
        k = n;
    return (double)v[k - 1] / 1000.0;
}

/* Read the body file and build the request bytes; false with a message. */
static bool
build_request(struct shared *sh)
{
    const struct opts *o = sh->o;
    FILE *f = fopen(o->body_file, "rb");
    struct stat st;
    char head[2048];
    int hl;

    if (f == NULL || fstat(fileno(f), &st) != 0) {
        fprintf(stderr, "gxload: cannot open %s: %s\n", o->body_file, strerror(errno));
        if (f != NULL)
            fclose(f);
        return false;
    }
    hl = snprintf(head, sizeof(head),
                  "POST %s HTTP/1.1\r\nHost: %s:%s\r\nContent-Type: application/json\r\n"
                  "Content-Length: %lld\r\nConnection: keep-alive\r\n\r\n",
                  o->path, o->host, o->port, (long long)st.st_size);
    if (hl < 0 || (size_t)hl >= sizeof(head)) {
        fclose(f);
        return false;
    }
    sh->req_len = (size_t)hl + (size_t)st.st_size;
    sh->req = malloc(sh->req_len);
    if (sh->req == NULL || fread(sh->req + hl, 1, (size_t)st.st_size, f) != (size_t)st.st_size) {
        fprintf(stderr, "gxload: cannot read %s\n", o->body_file);
        fclose(f);
        return false;
    }
    memcpy(sh->req, head, (size_t)hl);
    fclose(f);
    return true;
}

static void
usage(void)
{
    fprintf(stderr, "usage: gxload -u http://HOST:PORT/PATH -b BODY_FILE [-c CONCURRENCY]\n"
                    "              [-d SECONDS | -n REQUESTS] [-w WARMUP_PER_WORKER]\n"
                    "              [-m MIN_REQUESTS_WITH_-d] [-j]\n");
}

/* Parse a non-negative number option; false when it is not one. */
static bool
num_opt(const char *s, double *out)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(s, &end);
    if (errno != 0 || end == s || *end != '\0' || v < 0)
        return false;
    *out = v;
    return true;
}

static bool
parse_args(int argc, char **argv, struct opts *o)
{
    double v;

    memset(o, 0, sizeof(*o));
    o->conc = 1;
    o->duration_s = 5;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-j") == 0) {
            o->json = true;
            continue;
        }
        if (i + 1 >= argc)
            return false;
        const char *val = argv[++i];
        if (strcmp(a, "-u") == 0) {
            if (!parse_url(val, o))
                return false;
        } else if (strcmp(a, "-b") == 0) {
            o->body_file = val;
        } else if (!num_opt(val, &v)) {
            return false;
        } else if (strcmp(a, "-c") == 0) {
            o->conc = (int)v;
        } else if (strcmp(a, "-d") == 0) {
            o->duration_s = v;
            o->requests = 0;
        } else if (strcmp(a, "-n") == 0) {
            o->requests = (long)v;
        } else if (strcmp(a, "-w") == 0) {
            o->warmup = (int)v;
        } else if (strcmp(a, "-m") == 0) {
            o->min_requests = (long)v;
        } else {
            return false;
        }
    }
    return o->host[0] != '\0' && o->body_file != NULL && o->conc >= 1 && o->conc <= MAX_WORKERS &&
           (o->requests > 0 || o->duration_s > 0);
}

int
main(int argc, char **argv)
{
    static struct worker w[MAX_WORKERS];
    struct opts o;
    struct shared sh;
    int64_t t0, t1, *all;
    size_t total = 0, k = 0;
    long non200 = 0, io_errors = 0;
    int bad_status = 0;
    double secs;

    if (!parse_args(argc, argv, &o)) {
        usage();
        return 2;
    }
    memset(&sh, 0, sizeof(sh));
    sh.o = &o;
    atomic_init(&sh.claimed, 0);
    atomic_init(&sh.recorded, 0);
    atomic_init(&sh.stop, false);
    if (!build_request(&sh))
        return 2;
    if (pthread_barrier_init(&sh.warm, NULL, (unsigned)o.conc + 1) != 0 ||
        pthread_barrier_init(&sh.go, NULL, (unsigned)o.conc + 1) != 0)
        return 2;
    for (int i = 0; i < o.conc; i++) {
        w[i].sh = &sh;
        w[i].rd.fd = -1;
        if (pthread_create(&w[i].th, NULL, worker_main, &w[i]) != 0) {
            fprintf(stderr, "gxload: cannot start worker %d\n", i);
            return 2;
        }
    }
    /* the clock starts when every worker has finished its warm-up */
    (void)pthread_barrier_wait(&sh.warm);
    t0 = now_ns();
    sh.deadline_ns = o.requests > 0 ? 0 : t0 + (int64_t)(o.duration_s * 1e9);
    (void)pthread_barrier_wait(&sh.go);
    for (int i = 0; i < o.conc; i++)
        (void)pthread_join(w[i].th, NULL);
    t1 = now_ns();
    for (int i = 0; i < o.conc; i++) {
        total += w[i].n;
        non200 += w[i].non200;
        io_errors += w[i].io_errors;
        if (w[i].non200)
            bad_status = w[i].last_status;
    }
    all = malloc((total ? total : 1) * sizeof(*all));
    if (all == NULL)
        return 2;
    for (int i = 0; i < o.conc; i++) {
        memcpy(all + k, w[i].lat, w[i].n * sizeof(*all));
        k += w[i].n;
        free(w[i].lat);
    }
    qsort(all, total, sizeof(*all), cmp_i64);
    secs = (double)(t1 - t0) / 1e9;
    if (o.json)
        printf("{\"requests\":%zu,\"non200\":%ld,\"io_errors\":%ld,\"seconds\":%.3f,"
               "\"rps\":%.1f,\"p50_us\":%.1f,\"p90_us\":%.1f,\"p99_us\":%.1f,"
               "\"max_us\":%.1f,\"concurrency\":%d}\n",
               total, non200, io_errors, secs, (double)total / secs, pct_us(all, total, 50),
               pct_us(all, total, 90), pct_us(all, total, 99), pct_us(all, total, 100), o.conc);
    else
        printf("requests %zu in %.2f s, concurrency %d: %.1f req/s\n"
               "latency us: p50 %.0f  p90 %.0f  p99 %.0f  max %.0f\n"
               "non-200: %ld  i/o errors: %ld\n",
               total, secs, o.conc, (double)total / secs, pct_us(all, total, 50),
               pct_us(all, total, 90), pct_us(all, total, 99), pct_us(all, total, 100), non200,
               io_errors);
    free(all);
    free(sh.req);
    (void)pthread_barrier_destroy(&sh.warm);
    (void)pthread_barrier_destroy(&sh.go);
    if (non200 > 0)
        fprintf(stderr, "gxload: %ld responses were not 200 (last %d)\n", non200, bad_status);
    if (io_errors > 0)
        fprintf(stderr, "gxload: %ld i/o errors\n", io_errors);
    return non200 > 0 || io_errors > 0 || total == 0 ? 1 : 0;
}
