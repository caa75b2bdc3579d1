/* SPDX-License-Identifier: MIT
 *
 * test_store.c - the rendezvous store: wire parser on crafted bytes, and the
 * server (runtime/store/ddp_store_server.h) started in-process on loopback, driven by
 * client threads (runtime/store/ddp_store_client.c) and by raw sockets that send
 * bad secrets, garbage, oversized and half messages.
 */
#define CHECK_MAIN
#include "../check.h"
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>
#include "ddp_log.h"
#include "ddp_store.h"
#include "../../runtime/store/ddp_store_server.h"
#include "../../runtime/store/ddp_store_server_int.h"

#define SECRET "t0p-s3cret-for-test"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_s(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };
	nanosleep(&ts, NULL);
}

static struct ddp_store_server *start_server(void)
{
	struct ddp_store_server *srv = NULL;
	if (ddp_store_server_start("127.0.0.1", 0, SECRET, &srv) != DDP_OK)
		return NULL;
	return srv;
}

static struct ddp_store *client(struct ddp_store_server *srv, int rank)
{
	struct ddp_store *c = NULL;
	if (ddp_store_connect("127.0.0.1", ddp_store_server_port(srv), SECRET, rank, 5.0, &c) != DDP_OK)
		return NULL;
	return c;
}

/* ---- stderr capture ------------------------------------------------------ */

static int cap_saved = -1, cap_pipe[2];

static void capture_begin(void)
{
	fflush(stderr);
	if (pipe(cap_pipe) != 0)
		abort();
	fcntl(cap_pipe[0], F_SETFL, O_NONBLOCK);
	fcntl(cap_pipe[1], F_SETFL, O_NONBLOCK); /* never block a logging thread */
	cap_saved = dup(2);
	dup2(cap_pipe[1], 2);
}

/* Restores stderr; returns what was written (static buffer). */
static const char *capture_end(void)
{
	static char buf[16384];
	size_t n = 0;
	ssize_t r;
	dup2(cap_saved, 2);
	close(cap_saved);
	close(cap_pipe[1]);
	while (n < sizeof buf - 1 && (r = read(cap_pipe[0], buf + n, sizeof buf - 1 - n)) > 0)
		n += (size_t)r;
	buf[n] = '\0';
	close(cap_pipe[0]);
	fputs(buf, stderr); /* keep it in the test log */
	return buf;
}

/* ---- raw sockets --------------------------------------------------------- */

static int raw_connect(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

static void raw_write(int fd, const void *p, size_t n)
{
	while (n > 0) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		if (w <= 0)
			return;
		p = (const char *)p + w;
		n -= (size_t)w;
	}
}

static void raw_msg(int fd, uint8_t op, const void *key, uint32_t klen, const void *val, uint32_t vlen)
{
	uint8_t h[DDP_STORE_HDR_SIZE];
	struct ddp_store_hdr hd = { .op = op, .flags = 0, .key_len = klen, .val_len = vlen };
	ddp_store_hdr_encode(h, &hd);
	raw_write(fd, h, sizeof h);
	if (klen)
		raw_write(fd, key, klen);
	if (vlen)
		raw_write(fd, val, vlen);
}

static void raw_hello(int fd, const char *secret, int rank)
{
	uint8_t r[4];
	ddp_store_put_u32(r, (uint32_t)rank);
	raw_msg(fd, DDP_STORE_HELLO, secret, (uint32_t)strlen(secret), r, 4);
}

/* Reads n bytes with a timeout: 1 done, 0 EOF/reset, -1 timeout. */
static int raw_read(int fd, void *p, size_t n, double timeout)
{
	double end = now_s() + timeout;
	while (n > 0) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		int ms = (int)((end - now_s()) * 1000);
		if (ms <= 0 || poll(&pf, 1, ms) <= 0)
			return -1;
		ssize_t r = recv(fd, p, n, 0);
		if (r <= 0)
			return 0;
		p = (char *)p + r;
		n -= (size_t)r;
	}
	return 1;
}

/* Reads one reply; returns its status, -1 on EOF, -2 on timeout, -3 bad reply. */
static int raw_reply(int fd, char *msg, size_t cap)
{
	uint8_t h[DDP_STORE_HDR_SIZE], body[DDP_STORE_MAX_ERRMSG + 1];
	struct ddp_store_hdr hd;
	const char *why;
	int r = raw_read(fd, h, sizeof h, 5.0);
	if (r <= 0)
		return r == 0 ? -1 : -2;
	if (ddp_store_hdr_decode(h, DDP_STORE_DIR_REPLY, &hd, &why) != DDP_OK ||
	    hd.val_len > DDP_STORE_MAX_ERRMSG)
		return -3;
	if (hd.val_len && raw_read(fd, body, hd.val_len, 5.0) != 1)
		return -1;
	body[hd.val_len] = '\0';
	if (msg)
		snprintf(msg, cap, "%s", (char *)body);
	return hd.flags;
}

/* 1 when the server closed the connection within 5 s. */
static int raw_sees_eof(int fd)
{
	char b[256];
	double end = now_s() + 5.0;
	while (now_s() < end) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		if (poll(&pf, 1, 100) > 0) {
			ssize_t r = recv(fd, b, sizeof b, 0);
			if (r <= 0)
				return 1;
		}
	}
	return 0;
}

/* The server still serves a fresh client: SET then GET round trip. */
static int server_alive(struct ddp_store_server *srv)
{
	struct ddp_store *c = client(srv, 0);
	void *v = NULL;
	size_t n = 0;
	int ok = c && ddp_store_set(c, "alive", "yes", 3) == DDP_OK &&
		 ddp_store_get(c, "alive", &v, &n, 1.0) == DDP_OK && n == 3 && memcmp(v, "yes", 3) == 0;
	free(v);
	ddp_store_close(c);
	return ok;
}

/* The number of authenticated connections once it settles to want (the
 * server notices closed connections asynchronously); returns the last seen. */
static int clients_settle(struct ddp_store_server *srv, int want)
{
	int n = ddp_store_server_clients(srv);
	for (double end = now_s() + 3.0; n != want && now_s() < end; n = ddp_store_server_clients(srv))
		sleep_s(0.01);
	return n;
}

/* ---- parser on crafted bytes ---------------------------------------------- */

static size_t craft(uint8_t *buf, uint8_t op, uint16_t flags, const char *key, uint32_t klen,
		    const void *val, uint32_t vlen)
{
	struct ddp_store_hdr h = { .op = op, .flags = flags, .key_len = klen, .val_len = vlen };
	ddp_store_hdr_encode(buf, &h);
	if (klen)
		memcpy(buf + 16, key, klen);
	if (vlen)
		memcpy(buf + 16 + klen, val, vlen);
	return 16 + (size_t)klen + vlen;
}

static ddp_result parse(const uint8_t *b, size_t n, enum ddp_store_dir d, size_t *used)
{
	struct ddp_store_msg m;
	const char *why = NULL;
	ddp_result rc = ddp_store_msg_parse(b, n, d, &m, used, &why);
	if (rc != DDP_OK && !why)
		return DDP_ERR_INTERNAL; /* an error must say why */
	return rc;
}

TEST(parser_valid_and_prefixes)
{
	uint8_t b[64];
	struct ddp_store_msg m;
	const char *why;
	size_t used = 99;
	/* Hand-encoded SET "k1" = "xyz": magic DDPS, version 1, op 2, flags 0. */
	static const uint8_t set_k1[] = { 'D', 'D', 'P', 'S', 1, 2, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0,
					  'k', '1', 'x', 'y', 'z' };
	size_t n = craft(b, DDP_STORE_SET, 0, "k1", 2, "xyz", 3);
	CHECK_EQ_INT(n, sizeof set_k1);
	CHECK(memcmp(b, set_k1, n) == 0);
	CHECK(ddp_store_msg_parse(set_k1, sizeof set_k1, DDP_STORE_DIR_REQUEST, &m, &used, &why) ==
	      DDP_OK);
	CHECK_EQ_INT(used, sizeof set_k1);
	CHECK_EQ_INT(m.hdr.op, DDP_STORE_SET);
	CHECK_EQ_INT(m.hdr.key_len, 2);
	CHECK(memcmp(m.key, "k1", 2) == 0 && memcmp(m.val, "xyz", 3) == 0);
	/* Every proper prefix asks for more bytes. */
	for (size_t k = 0; k < sizeof set_k1; k++) {
		CHECK(parse(set_k1, k, DDP_STORE_DIR_REQUEST, &used) == DDP_OK);
		CHECK_EQ_INT(used, 0);
	}
	/* Two messages back to back: the first is consumed alone. */
	uint8_t two[64];
	memcpy(two, set_k1, sizeof set_k1);
	memcpy(two + sizeof set_k1, set_k1, sizeof set_k1);
	CHECK(parse(two, 2 * sizeof set_k1, DDP_STORE_DIR_REQUEST, &used) == DDP_OK);
	CHECK_EQ_INT(used, sizeof set_k1);
	/* Empty value is fine for SET. */
	n = craft(b, DDP_STORE_SET, 0, "k", 1, NULL, 0);
	CHECK(parse(b, n, DDP_STORE_DIR_REQUEST, &used) == DDP_OK && used == n);
}

TEST(parser_rejects_bad_headers)
{
	uint8_t b[700];
	size_t used;
	uint8_t r4[4] = { 0 }, r8[8] = { 0 };
	size_t n = craft(b, DDP_STORE_GET, 0, "k", 1, r4, 4);
	CHECK(parse(b, n, DDP_STORE_DIR_REQUEST, &used) == DDP_OK && used == n);
	b[0] = 'X'; /* bad magic, seen already in a 1-byte prefix */
	CHECK(parse(b, n, DDP_STORE_DIR_REQUEST, &used) == DDP_ERR_INVALID);
	CHECK(parse(b, 1, DDP_STORE_DIR_REQUEST, &used) == DDP_ERR_INVALID);
	CHECK(parse((const uint8_t *)"GET /", 5, DDP_STORE_DIR_REQUEST, &used) == DDP_ERR_INVALID);
	n = craft(b, DDP_STORE_GET, 0, "k", 1, r4, 4);
	b[4] = 2; /* version */
	CHECK(parse(b, n, DDP_STORE_DIR_REQUEST, &used) == DDP_ERR_INVALID);
	n = craft(b, 0, 0, "k", 1, r4, 4); /* op 0 */
	CHECK(parse(b, n, DDP_STORE_DIR_REQUEST, &used) == DDP_ERR_INVALID);
	n = craft(b, 9, 0, "k", 1, r4, 4); /* op past the table */
	CHECK(parse(b, n, DDP_STORE_DIR_REQUEST, &used) == DDP_ERR_INVALID);
	n = craft(b, DDP_STORE_GET | DDP_STORE_REPLY, 0, "k", 1, r4, 4); /* reply as request */
	CHECK(parse(b, n, DDP_STORE_DIR_REQUEST, &used) == DDP_ERR_INVALID);
	n = craft(b, DDP_STORE_GET, 1, "k", 1, r4, 4); /* flags */
	CHECK(parse(b, n, DDP_STORE_DIR_REQUEST, &used) == DDP_ERR_INVALID);
	n = craft(b, DDP_STORE_GET, 0, "k", 1, r4, 3); /* GET needs a 4-byte timeout */
	CHECK(parse(b, n, DDP_STORE_DIR_REQUEST, &used) == DDP_ERR_INVALID);
	n = craft(b, DDP_STORE_ADD, 0, "k", 1, r4, 4); /* ADD needs 8 bytes */
	CHECK(parse(b, n, DDP_STORE_DIR_REQUEST, &used) == DDP_ERR_INVALID);
	n = craft(b, DDP_STORE_HEARTBEAT, 0, "k", 1, r8, 8); /* HEARTBEAT has no key */
	CHECK(parse(b, n, DDP_STORE_DIR_REQUEST, &used) == DDP_ERR_INVALID);
	n = craft(b, DDP_STORE_SET, 0, "", 0, "v", 1); /* SET needs a key */
	CHECK(parse(b, n, DDP_STORE_DIR_REQUEST, &used) == DDP_ERR_INVALID);
	char key[600];
	memset(key, 'a', sizeof key);
	n = craft(b, DDP_STORE_SET, 0, key, 512, "v", 1); /* longest key ok */
	CHECK(parse(b, n, DDP_STORE_DIR_REQUEST, &used) == DDP_OK && used == n);
	n = craft(b, DDP_STORE_SET, 0, key, 513, "v", 1); /* one more: refused from the header */
	CHECK(parse(b, 16, DDP_STORE_DIR_REQUEST, &used) == DDP_ERR_INVALID);
	struct ddp_store_hdr h = { .op = DDP_STORE_SET, .key_len = 1, .val_len = DDP_STORE_MAX_VAL };
	const char *why;
	ddp_store_hdr_encode(b, &h);
	CHECK(ddp_store_hdr_decode(b, DDP_STORE_DIR_REQUEST, &h, &why) == DDP_OK);
	h.val_len = DDP_STORE_MAX_VAL + 1;
	ddp_store_hdr_encode(b, &h);
	CHECK(ddp_store_hdr_decode(b, DDP_STORE_DIR_REQUEST, &h, &why) == DDP_ERR_INVALID);
	h.val_len = 0xffffffffu;
	ddp_store_hdr_encode(b, &h);
	CHECK(ddp_store_hdr_decode(b, DDP_STORE_DIR_REQUEST, &h, &why) == DDP_ERR_INVALID);
	CHECK(strstr(why, "16 MiB") != NULL);
}

TEST(parser_rejects_bad_bodies)
{
	uint8_t b[64];
	size_t used;
	uint8_t v[8];
	size_t n = craft(b, DDP_STORE_SET, 0, "a\0b", 3, "v", 1); /* NUL in key */
	CHECK(parse(b, n, DDP_STORE_DIR_REQUEST, &used) == DDP_ERR_INVALID);
	ddp_store_put_u32(v, (uint32_t)-2); /* rank -2 */
	n = craft(b, DDP_STORE_HELLO, 0, "s", 1, v, 4);
	CHECK(parse(b, n, DDP_STORE_DIR_REQUEST, &used) == DDP_ERR_INVALID);
	ddp_store_put_u32(v, (uint32_t)-1); /* rank -1: a tool, fine */
	n = craft(b, DDP_STORE_HELLO, 0, "s", 1, v, 4);
	CHECK(parse(b, n, DDP_STORE_DIR_REQUEST, &used) == DDP_OK && used == n);
	ddp_store_put_u32(v, DDP_STORE_MAX_RANK);
	n = craft(b, DDP_STORE_HELLO, 0, "s", 1, v, 4);
	CHECK(parse(b, n, DDP_STORE_DIR_REQUEST, &used) == DDP_ERR_INVALID);
	ddp_store_put_u32(v, 0); /* barrier of world size 0 */
	ddp_store_put_u32(v + 4, 100);
	n = craft(b, DDP_STORE_BARRIER, 0, "b", 1, v, 8);
	CHECK(parse(b, n, DDP_STORE_DIR_REQUEST, &used) == DDP_ERR_INVALID);
	ddp_store_put_u32(v, 4);
	n = craft(b, DDP_STORE_BARRIER, 0, "b", 1, v, 8);
	CHECK(parse(b, n, DDP_STORE_DIR_REQUEST, &used) == DDP_OK);
}

TEST(parser_replies)
{
	uint8_t b[400];
	size_t used;
	uint8_t t[8] = { 5 };
	size_t n = craft(b, DDP_STORE_ADD | DDP_STORE_REPLY, DDP_STORE_ST_OK, "", 0, t, 8);
	CHECK(parse(b, n, DDP_STORE_DIR_REPLY, &used) == DDP_OK && used == n);
	CHECK(parse(b, n, DDP_STORE_DIR_REQUEST, &used) == DDP_ERR_INVALID);
	n = craft(b, DDP_STORE_ADD | DDP_STORE_REPLY, DDP_STORE_ST_OK, "", 0, t, 4);
	CHECK(parse(b, n, DDP_STORE_DIR_REPLY, &used) == DDP_ERR_INVALID);
	n = craft(b, DDP_STORE_ADD, DDP_STORE_ST_OK, "", 0, t, 8); /* no reply bit */
	CHECK(parse(b, n, DDP_STORE_DIR_REPLY, &used) == DDP_ERR_INVALID);
	n = craft(b, DDP_STORE_SET | DDP_STORE_REPLY, DDP_STORE_ST_MAX + 1, "", 0, NULL, 0);
	CHECK(parse(b, n, DDP_STORE_DIR_REPLY, &used) == DDP_ERR_INVALID);
	n = craft(b, DDP_STORE_SET | DDP_STORE_REPLY, DDP_STORE_ST_OK, "k", 1, NULL, 0);
	CHECK(parse(b, n, DDP_STORE_DIR_REPLY, &used) == DDP_ERR_INVALID);
	char msg[300];
	memset(msg, 'm', sizeof msg);
	n = craft(b, DDP_STORE_SET | DDP_STORE_REPLY, DDP_STORE_ST_INVALID, "", 0, msg, 256);
	CHECK(parse(b, n, DDP_STORE_DIR_REPLY, &used) == DDP_OK && used == n);
	n = craft(b, DDP_STORE_SET | DDP_STORE_REPLY, DDP_STORE_ST_INVALID, "", 0, msg, 257);
	CHECK(parse(b, n, DDP_STORE_DIR_REPLY, &used) == DDP_ERR_INVALID);
}

TEST(secret_compare_and_timeouts)
{
	CHECK(ddp_store_secret_equal((const uint8_t *)"abc", 3, (const uint8_t *)"abc", 3));
	CHECK(!ddp_store_secret_equal((const uint8_t *)"abc", 3, (const uint8_t *)"abd", 3));
	CHECK(!ddp_store_secret_equal((const uint8_t *)"abc", 3, (const uint8_t *)"ab", 2));
	CHECK(!ddp_store_secret_equal((const uint8_t *)"abc", 3, (const uint8_t *)"abcabc", 6));
	CHECK(!ddp_store_secret_equal((const uint8_t *)"abc", 3, (const uint8_t *)"", 0));
	CHECK_EQ_INT(ddp_store_timeout_ms(-1), DDP_STORE_FOREVER);
	CHECK_EQ_INT(ddp_store_timeout_ms(0), 0);
	CHECK_EQ_INT(ddp_store_timeout_ms(1.5), 1500);
	CHECK_EQ_INT(ddp_store_timeout_ms(1e12), DDP_STORE_FOREVER - 1);
}

/* ---- server and clients --------------------------------------------------- */

TEST(server_refuses_bad_arguments)
{
	struct ddp_store_server *s = (struct ddp_store_server *)1;
	CHECK(ddp_store_server_start("127.0.0.1", 0, "", &s) == DDP_ERR_INVALID && s == NULL);
	CHECK(ddp_store_server_start("127.0.0.1", 0, NULL, &s) == DDP_ERR_INVALID);
	CHECK(ddp_store_server_start("not-an-address", 0, SECRET, &s) == DDP_ERR_INVALID);
	/* Port already taken. */
	struct ddp_store_server *a = start_server();
	REQUIRE(a);
	CHECK(ddp_store_server_start("127.0.0.1", ddp_store_server_port(a), SECRET, &s) == DDP_ERR_SYS);
	ddp_store_server_stop(a);
	ddp_store_server_stop(NULL);
}

TEST(default_bind_is_loopback)
{
	struct ddp_store_server *srv = NULL;
	REQUIRE(ddp_store_server_start(NULL, 0, SECRET, &srv) == DDP_OK);
	/* Independent check: ask the kernel which address the store bound. */
	int found = 0;
	FILE *f = fopen("/proc/net/tcp", "r");
	char line[512];
	char want[32];
	snprintf(want, sizeof want, "0100007F:%04X", ddp_store_server_port(srv));
	while (f && fgets(line, sizeof line, f))
		if (strstr(line, want) && strstr(line, " 0A "))
			found = 1; /* 0A = LISTEN */
	if (f)
		fclose(f);
	CHECK(found);
	CHECK(server_alive(srv));
	ddp_store_server_stop(srv);
}

TEST(set_get_roundtrip)
{
	struct ddp_store_server *srv = start_server();
	REQUIRE(srv);
	struct ddp_store *c = client(srv, 0);
	REQUIRE(c);
	void *v = NULL;
	size_t n = 0;
	CHECK(ddp_store_set(c, "nccl/id", "hello", 5) == DDP_OK);
	CHECK(ddp_store_get(c, "nccl/id", &v, &n, 1.0) == DDP_OK);
	CHECK(n == 5 && v && memcmp(v, "hello", 5) == 0);
	free(v);
	/* Overwrite with binary bytes (NULs included). */
	const uint8_t bin[6] = { 0, 1, 0, 255, 7, 0 };
	CHECK(ddp_store_set(c, "nccl/id", bin, sizeof bin) == DDP_OK);
	CHECK(ddp_store_get(c, "nccl/id", &v, &n, 1.0) == DDP_OK);
	CHECK(n == 6 && memcmp(v, bin, 6) == 0);
	free(v);
	/* Empty value: exists, zero bytes, non-NULL pointer. */
	CHECK(ddp_store_set(c, "empty", "", 0) == DDP_OK);
	v = NULL;
	CHECK(ddp_store_get(c, "empty", &v, &n, 0) == DDP_OK);
	CHECK(n == 0 && v != NULL);
	free(v);
	/* Missing key with timeout 0: an immediate timeout. */
	double t0 = now_s();
	CHECK(ddp_store_get(c, "missing", &v, &n, 0) == DDP_ERR_TIMEOUT);
	CHECK(now_s() - t0 < 1.0);
	CHECK(v == NULL);
	CHECK(strstr(ddp_store_last_error(c), "missing") != NULL);
	/* Delete, then the key is gone; deleting again is fine. */
	CHECK(ddp_store_delete(c, "nccl/id") == DDP_OK);
	CHECK(ddp_store_get(c, "nccl/id", &v, &n, 0) == DDP_ERR_TIMEOUT);
	CHECK(ddp_store_delete(c, "nccl/id") == DDP_OK);
	/* Many keys (table growth), all readable from a second connection. */
	for (int i = 0; i < 300; i++) {
		char k[32];
		snprintf(k, sizeof k, "many/%d", i);
		CHECK(ddp_store_set(c, k, &i, sizeof i) == DDP_OK);
	}
	struct ddp_store *d = client(srv, 1);
	REQUIRE(d);
	for (int i = 0; i < 300; i += 37) {
		char k[32];
		snprintf(k, sizeof k, "many/%d", i);
		CHECK(ddp_store_get(d, k, &v, &n, 0) == DDP_OK && n == sizeof i && *(int *)v == i);
		free(v);
	}
	CHECK_EQ_INT(clients_settle(srv, 2), 2);
	ddp_store_close(d);
	ddp_store_close(c);
	ddp_store_server_stop(srv);
}

struct getter {
	struct ddp_store_server *srv;
	const char *key;
	double timeout;
	ddp_result rc;
	void *val;
	size_t len;
	double elapsed;
};

static void *getter_main(void *arg)
{
	struct getter *g = arg;
	struct ddp_store *c = client(g->srv, 1);
	double t0 = now_s();
	g->rc = c ? ddp_store_get(c, g->key, &g->val, &g->len, g->timeout) : DDP_ERR_INTERNAL;
	g->elapsed = now_s() - t0;
	ddp_store_close(c);
	return NULL;
}

TEST(get_waits_for_a_later_set)
{
	struct ddp_store_server *srv = start_server();
	REQUIRE(srv);
	struct ddp_store *c = client(srv, 0);
	REQUIRE(c);
	struct getter g[3] = { { srv, "late", 10.0, 0, 0, 0, 0 }, { srv, "late", 10.0, 0, 0, 0, 0 },
			       { srv, "late", -1, 0, 0, 0, 0 } };
	pthread_t t[3];
	for (int i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, getter_main, &g[i]);
	sleep_s(0.3);
	/* While they wait, the server still answers this client. */
	CHECK(ddp_store_set(c, "other", "x", 1) == DDP_OK);
	CHECK(ddp_store_set(c, "late", "value!", 6) == DDP_OK);
	for (int i = 0; i < 3; i++) {
		pthread_join(t[i], NULL);
		CHECK(g[i].rc == DDP_OK);
		CHECK(g[i].len == 6 && g[i].val && memcmp(g[i].val, "value!", 6) == 0);
		CHECK(g[i].elapsed >= 0.2 && g[i].elapsed < 5.0);
		free(g[i].val);
	}
	ddp_store_close(c);
	ddp_store_server_stop(srv);
}

struct adder {
	struct ddp_store_server *srv;
	int rank;
	ddp_result rc;
	int64_t max_seen;
};

#define ADDS_PER_THREAD 300

static void *adder_main(void *arg)
{
	struct adder *a = arg;
	struct ddp_store *c = client(a->srv, a->rank);
	a->rc = c ? DDP_OK : DDP_ERR_REMOTE;
	for (int i = 0; c && i < ADDS_PER_THREAD && a->rc == DDP_OK; i++) {
		int64_t r = 0;
		a->rc = ddp_store_add(c, "counter", a->rank + 1, &r);
		if (r > a->max_seen)
			a->max_seen = r;
	}
	ddp_store_close(c);
	return NULL;
}

TEST(add_from_8_threads_is_exact)
{
	struct ddp_store_server *srv = start_server();
	REQUIRE(srv);
	struct adder a[8];
	pthread_t t[8];
	for (int i = 0; i < 8; i++) {
		a[i] = (struct adder){ srv, i, DDP_OK, 0 };
		pthread_create(&t[i], NULL, adder_main, &a[i]);
	}
	int64_t expect = 0;
	for (int i = 0; i < 8; i++) {
		pthread_join(t[i], NULL);
		CHECK(a[i].rc == DDP_OK);
		expect += (int64_t)(i + 1) * ADDS_PER_THREAD; /* 36 * 300 = 10800 */
	}
	CHECK_EQ_INT(expect, 10800);
	struct ddp_store *c = client(srv, 0);
	REQUIRE(c);
	int64_t total = -1;
	CHECK(ddp_store_add(c, "counter", 0, &total) == DDP_OK);
	CHECK_EQ_INT(total, expect);
	int64_t hi = 0;
	for (int i = 0; i < 8; i++)
		hi = a[i].max_seen > hi ? a[i].max_seen : hi;
	CHECK_EQ_INT(hi, expect); /* the last add saw the total */
	/* The counter reads back as 8 little-endian bytes. */
	void *v;
	size_t n;
	CHECK(ddp_store_get(c, "counter", &v, &n, 0) == DDP_OK);
	CHECK(n == 8 && ddp_store_get_u64(v) == 10800);
	free(v);
	/* Negative deltas, and a missing key starts at 0. */
	CHECK(ddp_store_add(c, "neg", -5, &total) == DDP_OK && total == -5);
	CHECK(ddp_store_add(c, "neg", 2, NULL) == DDP_OK);
	CHECK(ddp_store_add(c, "neg", 0, &total) == DDP_OK && total == -3);
	/* ADD on a non-counter is refused; the connection stays usable. */
	CHECK(ddp_store_set(c, "text", "abc", 3) == DDP_OK);
	CHECK(ddp_store_add(c, "text", 1, &total) == DDP_ERR_INVALID);
	CHECK(strstr(ddp_store_last_error(c), "not a counter") != NULL);
	CHECK(ddp_store_add(c, "neg", 3, &total) == DDP_OK && total == 0);
	ddp_store_close(c);
	ddp_store_server_stop(srv);
}

struct barrier_arg {
	struct ddp_store_server *srv;
	int rank;
	int ok;
	int rounds;
};

static void *barrier_main(void *arg)
{
	struct barrier_arg *b = arg;
	struct ddp_store *c = client(b->srv, b->rank);
	b->ok = c != NULL;
	for (int r = 0; c && r < b->rounds && b->ok; r++) {
		char k[64];
		snprintf(k, sizeof k, "round%d/rank%d", r, b->rank);
		if (b->rank == 3)
			sleep_s(0.05); /* the last one is late */
		b->ok &= ddp_store_set(c, k, "x", 1) == DDP_OK;
		b->ok &= ddp_store_barrier(c, "step", 4, 10.0) == DDP_OK;
		/* After the barrier every rank's key of this round exists. */
		for (int i = 0; i < 4; i++) {
			void *v = NULL;
			size_t n;
			snprintf(k, sizeof k, "round%d/rank%d", r, i);
			b->ok &= ddp_store_get(c, k, &v, &n, 0) == DDP_OK;
			free(v);
		}
	}
	ddp_store_close(c);
	return NULL;
}

TEST(barrier_world_4_reusable)
{
	struct ddp_store_server *srv = start_server();
	REQUIRE(srv);
	struct barrier_arg b[4];
	pthread_t t[4];
	for (int i = 0; i < 4; i++) {
		b[i] = (struct barrier_arg){ srv, i, 0, 3 };
		pthread_create(&t[i], NULL, barrier_main, &b[i]);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		CHECK(b[i].ok);
	}
	/* Three of four: it times out, and the arrivals are withdrawn. */
	struct ddp_store *c[4];
	for (int i = 0; i < 4; i++)
		REQUIRE((c[i] = client(srv, i)) != NULL);
	double t0 = now_s();
	CHECK(ddp_store_barrier(c[0], "short", 2, 0.2) == DDP_ERR_TIMEOUT);
	CHECK(now_s() - t0 >= 0.15);
	CHECK(strstr(ddp_store_last_error(c[0]), "short") != NULL);
	/* World size mismatch is an error, not a hang. */
	struct barrier_arg dummy = { srv, 9, 0, 0 };
	(void)dummy;
	CHECK(ddp_store_barrier(c[1], "one", 1, 1.0) == DDP_OK); /* world 1 completes at once */
	ddp_store_close(c[0]);
	c[0] = client(srv, 0);
	REQUIRE(c[0]);
	CHECK(ddp_store_barrier(c[0], "short", 2, 0) == DDP_ERR_TIMEOUT); /* earlier one withdrawn */
	ddp_store_close(c[0]);
	ddp_store_close(c[1]);
	ddp_store_close(c[2]);
	ddp_store_close(c[3]);
	ddp_store_server_stop(srv);
}

struct bar_one {
	struct ddp_store *c;
	const char *name;
	int world;
	ddp_result rc;
};

static void *bar_one_main(void *arg)
{
	struct bar_one *b = arg;
	b->rc = ddp_store_barrier(b->c, b->name, b->world, 5.0);
	return NULL;
}

TEST(barrier_world_size_mismatch)
{
	struct ddp_store_server *srv = start_server();
	REQUIRE(srv);
	struct ddp_store *a = client(srv, 0), *b = client(srv, 1), *c = client(srv, 2);
	REQUIRE(a && b && c);
	struct bar_one x = { a, "mm", 2, 0 };
	pthread_t t;
	pthread_create(&t, NULL, bar_one_main, &x);
	sleep_s(0.1);
	CHECK(ddp_store_barrier(b, "mm", 3, 1.0) == DDP_ERR_INVALID);
	CHECK(strstr(ddp_store_last_error(b), "world size") != NULL);
	CHECK(ddp_store_barrier(c, "mm", 2, 1.0) == DDP_OK); /* completes with a */
	pthread_join(t, NULL);
	CHECK(x.rc == DDP_OK);
	ddp_store_close(a);
	ddp_store_close(b);
	ddp_store_close(c);
	ddp_store_server_stop(srv);
}

TEST(wait_times_out_in_time)
{
	struct ddp_store_server *srv = start_server();
	REQUIRE(srv);
	struct ddp_store *c = client(srv, 0);
	REQUIRE(c);
	CHECK(ddp_store_set(c, "here", "1", 1) == DDP_OK);
	const char *keys[] = { "here", "never/appears" };
	double t0 = now_s();
	CHECK(ddp_store_wait(c, keys, 2, 0.4) == DDP_ERR_TIMEOUT);
	double dt = now_s() - t0;
	CHECK(dt >= 0.35 && dt < 2.0);
	CHECK(strstr(ddp_store_last_error(c), "never/appears") != NULL);
	/* The connection is still good afterwards. */
	CHECK(ddp_store_wait(c, keys, 1, 0.4) == DDP_OK);
	void *v;
	size_t n;
	t0 = now_s();
	CHECK(ddp_store_get(c, "never/appears", &v, &n, 0.3) == DDP_ERR_TIMEOUT);
	CHECK(now_s() - t0 >= 0.25 && now_s() - t0 < 2.0);
	ddp_store_close(c);
	ddp_store_server_stop(srv);
}

TEST(wrong_secret_is_refused_and_logged_without_the_secret)
{
	struct ddp_store_server *srv = start_server();
	REQUIRE(srv);
	struct ddp_store *c = (struct ddp_store *)1;
	capture_begin();
	ddp_result rc = ddp_store_connect("127.0.0.1", ddp_store_server_port(srv), "wrong-guess-42", 0,
					  2.0, &c);
	const char *log = capture_end();
	CHECK(rc == DDP_ERR_REMOTE);
	CHECK(c == NULL);
	CHECK(strstr(log, "refused a connection from 127.0.0.1:") != NULL);
	CHECK(strstr(log, "bad secret") != NULL);
	CHECK(strstr(log, "wrong-guess-42") == NULL);
	CHECK(strstr(log, SECRET) == NULL);
	/* The same over a raw socket: REFUSED reply, then the server closes. */
	int fd = raw_connect(ddp_store_server_port(srv));
	REQUIRE(fd >= 0);
	capture_begin();
	raw_hello(fd, SECRET "x", 0); /* a prefix of the right secret is not enough */
	char msg[300] = "";
	int st = raw_reply(fd, msg, sizeof msg);
	int eof = raw_sees_eof(fd);
	log = capture_end();
	CHECK_EQ_INT(st, DDP_STORE_ST_REFUSED);
	CHECK(strstr(msg, "bad secret") != NULL);
	CHECK(eof);
	CHECK(strstr(log, "bad secret") != NULL);
	CHECK(strstr(log, SECRET) == NULL);
	close(fd);
	CHECK_EQ_INT(clients_settle(srv, 0), 0);
	CHECK(server_alive(srv));
	ddp_store_server_stop(srv);
}

TEST(missing_hello_is_refused)
{
	struct ddp_store_server *srv = start_server();
	REQUIRE(srv);
	int fd = raw_connect(ddp_store_server_port(srv));
	REQUIRE(fd >= 0);
	capture_begin();
	raw_msg(fd, DDP_STORE_SET, "k", 1, "v", 1);
	char msg[300] = "";
	int st = raw_reply(fd, msg, sizeof msg);
	int eof = raw_sees_eof(fd);
	const char *log = capture_end();
	CHECK_EQ_INT(st, DDP_STORE_ST_REFUSED);
	CHECK(strstr(msg, "not HELLO") != NULL);
	CHECK(eof);
	CHECK(strstr(log, "refused a connection from 127.0.0.1:") != NULL);
	close(fd);
	/* Nothing was stored by the refused SET. */
	struct ddp_store *c = client(srv, 0);
	REQUIRE(c);
	void *v = NULL;
	size_t n;
	CHECK(ddp_store_get(c, "k", &v, &n, 0) == DDP_ERR_TIMEOUT);
	/* A second HELLO on an authenticated connection is a protocol error. */
	fd = raw_connect(ddp_store_server_port(srv));
	REQUIRE(fd >= 0);
	raw_hello(fd, SECRET, 5);
	CHECK_EQ_INT(raw_reply(fd, NULL, 0), DDP_STORE_ST_OK);
	raw_hello(fd, SECRET, 5);
	CHECK_EQ_INT(raw_reply(fd, NULL, 0), DDP_STORE_ST_PROTO);
	CHECK(raw_sees_eof(fd));
	close(fd);
	ddp_store_close(c);
	ddp_store_server_stop(srv);
}

TEST(oversized_key_and_value_refused_server_stays_up)
{
	struct ddp_store_server *srv = start_server();
	REQUIRE(srv);
	struct ddp_store *other = client(srv, 1);
	REQUIRE(other);
	/* Client side: refused before anything is sent. */
	char big[600];
	memset(big, 'k', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	CHECK(ddp_store_set(other, big, "v", 1) == DDP_ERR_INVALID);
	CHECK(ddp_store_set(other, "k", big, (size_t)DDP_STORE_MAX_VAL + 1) == DDP_ERR_INVALID);
	/* Server side: headers claiming too much close that connection only. */
	for (int which = 0; which < 2; which++) {
		int fd = raw_connect(ddp_store_server_port(srv));
		REQUIRE(fd >= 0);
		raw_hello(fd, SECRET, 2);
		CHECK_EQ_INT(raw_reply(fd, NULL, 0), DDP_STORE_ST_OK);
		uint8_t h[DDP_STORE_HDR_SIZE];
		struct ddp_store_hdr hd = { .op = DDP_STORE_SET,
					    .key_len = which ? 1 : DDP_STORE_MAX_KEY + 1,
					    .val_len = which ? 0xfffffff0u : 1 };
		ddp_store_hdr_encode(h, &hd);
		capture_begin();
		raw_write(fd, h, sizeof h);
		char msg[300] = "";
		int st = raw_reply(fd, msg, sizeof msg);
		int eof = raw_sees_eof(fd);
		const char *log = capture_end();
		CHECK_EQ_INT(st, DDP_STORE_ST_PROTO);
		CHECK(strstr(msg, which ? "16 MiB" : "512") != NULL);
		CHECK(eof);
		CHECK(strstr(log, "protocol error") != NULL && strstr(log, "rank 2") != NULL);
		close(fd);
	}
	/* The other client is untouched, and the largest value round-trips. */
	size_t max = DDP_STORE_MAX_VAL;
	uint8_t *val = malloc(max);
	REQUIRE(val);
	for (size_t i = 0; i < max; i++)
		val[i] = (uint8_t)(i * 131 + 7);
	CHECK(ddp_store_set(other, "big", val, max) == DDP_OK);
	void *back = NULL;
	size_t n = 0;
	CHECK(ddp_store_get(other, "big", &back, &n, 1.0) == DDP_OK);
	CHECK(n == max && back && memcmp(back, val, max) == 0);
	free(back);
	free(val);
	ddp_store_close(other);
	ddp_store_server_stop(srv);
}

TEST(garbage_and_half_messages_then_disconnect)
{
	struct ddp_store_server *srv = start_server();
	REQUIRE(srv);
	int port = ddp_store_server_port(srv);
	struct ddp_store *c = client(srv, 0);
	REQUIRE(c);
	capture_begin();
	/* 1: random garbage before HELLO. */
	int fd = raw_connect(port);
	REQUIRE(fd >= 0);
	uint8_t junk[4096];
	unsigned x = 12345;
	for (size_t i = 0; i < sizeof junk; i++)
		junk[i] = (uint8_t)((x = x * 1103515245u + 12345u) >> 16);
	raw_write(fd, junk, sizeof junk);
	CHECK(raw_sees_eof(fd));
	close(fd);
	/* 2: an HTTP request. */
	fd = raw_connect(port);
	REQUIRE(fd >= 0);
	raw_write(fd, "GET / HTTP/1.0\r\n\r\n", 18);
	CHECK_EQ_INT(raw_reply(fd, NULL, 0), DDP_STORE_ST_REFUSED);
	close(fd);
	/* 3: half a header, then gone. */
	fd = raw_connect(port);
	REQUIRE(fd >= 0);
	raw_write(fd, "DDPS\x01", 5);
	sleep_s(0.05);
	close(fd);
	/* 4: HELLO, then half of a SET body, then gone. */
	fd = raw_connect(port);
	REQUIRE(fd >= 0);
	raw_hello(fd, SECRET, 3);
	CHECK_EQ_INT(raw_reply(fd, NULL, 0), DDP_STORE_ST_OK);
	uint8_t h[DDP_STORE_HDR_SIZE];
	struct ddp_store_hdr hd = { .op = DDP_STORE_SET, .key_len = 4, .val_len = 1000 };
	ddp_store_hdr_encode(h, &hd);
	raw_write(fd, h, sizeof h);
	raw_write(fd, "half", 4);
	raw_write(fd, junk, 100);
	sleep_s(0.05);
	close(fd);
	/* 5: authenticated, then garbage. */
	fd = raw_connect(port);
	REQUIRE(fd >= 0);
	raw_hello(fd, SECRET, 4);
	CHECK_EQ_INT(raw_reply(fd, NULL, 0), DDP_STORE_ST_OK);
	raw_write(fd, junk, sizeof junk);
	CHECK(raw_sees_eof(fd));
	close(fd);
	/* 6: a parked GET whose client vanishes. */
	fd = raw_connect(port);
	REQUIRE(fd >= 0);
	raw_hello(fd, SECRET, 5);
	CHECK_EQ_INT(raw_reply(fd, NULL, 0), DDP_STORE_ST_OK);
	uint8_t t[4];
	ddp_store_put_u32(t, DDP_STORE_FOREVER);
	raw_msg(fd, DDP_STORE_GET, "vanish", 6, t, 4);
	sleep_s(0.05);
	close(fd);
	/* 7: a request while another is parked. */
	fd = raw_connect(port);
	REQUIRE(fd >= 0);
	raw_hello(fd, SECRET, 6);
	CHECK_EQ_INT(raw_reply(fd, NULL, 0), DDP_STORE_ST_OK);
	raw_msg(fd, DDP_STORE_GET, "vanish", 6, t, 4);
	raw_msg(fd, DDP_STORE_SET, "x", 1, "y", 1);
	CHECK_EQ_INT(raw_reply(fd, NULL, 0), DDP_STORE_ST_PROTO);
	close(fd);
	sleep_s(0.1);
	const char *log = capture_end();
	CHECK(strstr(log, "closed in the middle of a message") != NULL);
	/* "half" was never stored; the earlier client and new ones work. */
	void *v = NULL;
	size_t n;
	CHECK(ddp_store_get(c, "half", &v, &n, 0) == DDP_ERR_TIMEOUT);
	CHECK(ddp_store_set(c, "vanish", "ok", 2) == DDP_OK);
	CHECK(ddp_store_get(c, "vanish", &v, &n, 1.0) == DDP_OK && n == 2);
	free(v);
	CHECK(server_alive(srv));
	CHECK_EQ_INT(clients_settle(srv, 1), 1);
	ddp_store_close(c);
	ddp_store_server_stop(srv);
}

TEST(heartbeat_progress_and_age)
{
	struct ddp_store_server *srv = start_server();
	REQUIRE(srv);
	struct ddp_store *c = client(srv, 3);
	REQUIRE(c);
	uint64_t counter;
	double age;
	CHECK(ddp_store_server_progress(srv, 3, &counter, &age) == DDP_OK);
	CHECK(counter == 0 && age < 0);
	CHECK(ddp_store_server_progress(srv, -1, &counter, &age) == DDP_ERR_INVALID);
	volatile uint64_t progress = 41;
	CHECK(ddp_store_heartbeat_start(c, &progress, 0.02) == DDP_OK);
	CHECK(ddp_store_heartbeat_start(c, &progress, 0.02) == DDP_ERR_INVALID);
	sleep_s(0.4);
	CHECK(ddp_store_server_progress(srv, 3, &counter, &age) == DDP_OK);
	CHECK_EQ_INT(counter, 41);
	CHECK(age >= 0.25 && age < 5.0); /* unchanged since the first post */
	__atomic_store_n(&progress, 42, __ATOMIC_RELAXED);
	for (double end = now_s() + 3.0; now_s() < end; sleep_s(0.005)) {
		CHECK(ddp_store_server_progress(srv, 3, &counter, &age) == DDP_OK);
		if (counter == 42)
			break;
	}
	CHECK_EQ_INT(counter, 42);
	CHECK(age >= 0 && age < 0.2); /* just changed */
	sleep_s(0.3);
	CHECK(ddp_store_server_progress(srv, 3, &counter, &age) == DDP_OK);
	CHECK(counter == 42 && age >= 0.25); /* heartbeats kept coming; the counter did not move */
	/* Other ranks never reported. */
	CHECK(ddp_store_server_progress(srv, 0, &counter, &age) == DDP_OK && age < 0);
	CHECK(ddp_store_server_progress(srv, 100000, &counter, &age) == DDP_OK && age < 0);
	/* The main connection works while the heartbeat runs. */
	CHECK(ddp_store_set(c, "k", "v", 1) == DDP_OK);
	double t0 = now_s();
	ddp_store_close(c); /* stops the thread promptly */
	CHECK(now_s() - t0 < 1.0);
	/* A connection without a rank cannot post heartbeats. */
	struct ddp_store *tool = client(srv, -1);
	REQUIRE(tool);
	CHECK(ddp_store_heartbeat_start(tool, &progress, 0.1) == DDP_ERR_INVALID);
	ddp_store_close(tool);
	ddp_store_server_stop(srv);
}

struct stopper {
	struct ddp_store *c;
	ddp_result rc;
	double elapsed;
};

static void *stopper_get(void *arg)
{
	struct stopper *s = arg;
	void *v = NULL;
	size_t n;
	double t0 = now_s();
	s->rc = ddp_store_get(s->c, "never", &v, &n, 30.0);
	s->elapsed = now_s() - t0;
	free(v);
	return NULL;
}

TEST(server_stop_with_connected_clients)
{
	struct ddp_store_server *srv = start_server();
	REQUIRE(srv);
	int port = ddp_store_server_port(srv);
	struct ddp_store *waiting = client(srv, 0), *idle = client(srv, 1), *hb = client(srv, 2);
	REQUIRE(waiting && idle && hb);
	volatile uint64_t progress = 1;
	CHECK(ddp_store_heartbeat_start(hb, &progress, 0.02) == DDP_OK);
	struct stopper st = { waiting, DDP_OK, 0 };
	pthread_t t;
	pthread_create(&t, NULL, stopper_get, &st);
	sleep_s(0.2);
	capture_begin();
	ddp_store_server_stop(srv);
	pthread_join(t, NULL);
	CHECK(st.rc == DDP_ERR_REMOTE);
	CHECK(st.elapsed < 5.0);
	CHECK(ddp_store_set(idle, "k", "v", 1) == DDP_ERR_REMOTE);
	CHECK(ddp_store_set(idle, "k", "v", 1) == DDP_ERR_REMOTE); /* stays failed */
	sleep_s(0.1);
	ddp_store_close(hb);
	const char *log = capture_end();
	CHECK(strstr(log, "heartbeats stopped") != NULL);
	ddp_store_close(waiting);
	ddp_store_close(idle);
	/* Nobody listens any more: connecting times out in about the timeout. */
	struct ddp_store *c = (struct ddp_store *)1;
	double t0 = now_s();
	capture_begin();
	ddp_result rc = ddp_store_connect("127.0.0.1", port, SECRET, 0, 0.3, &c);
	capture_end();
	CHECK(rc == DDP_ERR_TIMEOUT && c == NULL);
	CHECK(now_s() - t0 >= 0.25 && now_s() - t0 < 3.0);
}

struct late_conn {
	int port;
	ddp_result rc;
};

static void *late_conn_main(void *arg)
{
	struct late_conn *l = arg;
	struct ddp_store *c = NULL;
	l->rc = ddp_store_connect("localhost", l->port, SECRET, 0, 10.0, &c);
	if (l->rc == DDP_OK)
		l->rc = ddp_store_set(c, "late", "1", 1);
	ddp_store_close(c);
	return NULL;
}

TEST(connect_retries_until_the_server_is_up)
{
	struct ddp_store_server *srv = start_server();
	REQUIRE(srv);
	int port = ddp_store_server_port(srv);
	ddp_store_server_stop(srv);
	struct late_conn l = { port, DDP_ERR_INTERNAL };
	pthread_t t;
	pthread_create(&t, NULL, late_conn_main, &l);
	sleep_s(0.3);
	srv = NULL;
	ddp_result rc = ddp_store_server_start("127.0.0.1", port, SECRET, &srv);
	if (rc != DDP_OK) {
		pthread_join(t, NULL);
		SKIP("the freed port was taken by someone else meanwhile");
	}
	pthread_join(t, NULL);
	CHECK(l.rc == DDP_OK);
	CHECK(server_alive(srv));
	ddp_store_server_stop(srv);
}

/* A flood of connections that never say HELLO (idle, or slowloris-style)
 * must cost the server bounded descriptors and memory and must not lock the
 * ranks out: beyond 256 such connections the oldest are closed at once (not
 * after the 10 s HELLO deadline), the refusals are not logged one by one,
 * and a rank still connects and is served while the flood stays open. */
#define FLOOD 700
#define MAX_PENDING 256 /* STORE_MAX_PENDING of ddp_store_loop.c */
TEST(idle_connection_flood_is_bounded)
{
	struct rlimit rl;
	REQUIRE(getrlimit(RLIMIT_NOFILE, &rl) == 0);
	if (rl.rlim_cur < 2 * FLOOD + 64) {
		rlim_t want = 2 * FLOOD + 64;
		if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < want)
			SKIP("RLIMIT_NOFILE hard limit is below 1464 descriptors");
		rl.rlim_cur = want;
		REQUIRE(setrlimit(RLIMIT_NOFILE, &rl) == 0);
	}
	struct ddp_store_server *srv = start_server();
	REQUIRE(srv);
	int port = ddp_store_server_port(srv);
	static int fds[FLOOD];
	int opened = 0;
	capture_begin();
	for (int i = 0; i < FLOOD; i++) {
		fds[i] = raw_connect(port);
		if (fds[i] < 0)
			break;
		if (i % 3 == 0)
			raw_write(fds[i], "DDPS", 4); /* half a header, then silence */
		opened++;
	}
	/* The server closes the surplus right away. */
	int closed = 0;
	for (double end = now_s() + 3.0; now_s() < end;) {
		closed = 0;
		for (int i = 0; i < opened; i++) {
			char b[64];
			struct pollfd pf = { .fd = fds[i], .events = POLLIN };
			if (poll(&pf, 1, 0) > 0 && recv(fds[i], b, sizeof b, MSG_PEEK | MSG_DONTWAIT) <= 0)
				closed++;
		}
		if (closed >= opened - MAX_PENDING)
			break;
		sleep_s(0.05);
	}
	/* A rank still gets in and is served, with the flood still open. */
	double t0 = now_s();
	int alive = server_alive(srv);
	double took = now_s() - t0;
	const char *log = capture_end();
	CHECK_EQ_INT(opened, FLOOD);
	CHECK(closed >= opened - MAX_PENDING);
	CHECK(alive);
	CHECK(took < 2.0);
	int lines = 0;
	for (const char *p = log; (p = strstr(p, "refused a connection")); p++)
		lines++;
	CHECK(lines <= 16);
	CHECK(strstr(log, "further refusals are counted") != NULL);
	CHECK(strstr(log, SECRET) == NULL);
	for (int i = 0; i < opened; i++)
		close(fds[i]);
	ddp_store_server_stop(srv);
}

/* ---- memory bounds (issue 14): the core with lowered limits, no sockets -- */

/* Feeds one request to c and returns the status of the reply it produced
 * (-1: none), the reply's text in msg; the output is then discarded. */
static int core_req(struct ddp_store_server *s, struct conn *c, uint8_t op, const char *key,
		    const void *val, uint32_t vlen, char *msg, size_t cap)
{
	uint8_t buf[DDP_STORE_HDR_SIZE + 64 + 4096];
	size_t kl = strlen(key), n = craft(buf, op, 0, key, (uint32_t)kl, val, vlen);
	size_t before = c->out_len;
	struct ddp_store_hdr h;
	const char *why;
	int st = -1;

	store_conn_feed(s, c, buf, n, 100.0);
	if (c->out_len - before >= DDP_STORE_HDR_SIZE &&
	    ddp_store_hdr_decode(c->out + before, DDP_STORE_DIR_REPLY, &h, &why) == DDP_OK) {
		st = h.flags;
		if (msg)
			snprintf(msg, cap, "%.*s", (int)h.val_len, (const char *)c->out + before + DDP_STORE_HDR_SIZE);
	}
	return st;
}

TEST(memory_bounds_table_and_buffers)
{
	struct ddp_store_server *s = calloc(1, sizeof *s);
	char msg[DDP_STORE_MAX_ERRMSG + 1], val[1000];
	uint8_t ms[4] = { 0 };
	REQUIRE(s && store_core_init(s, SECRET) == DDP_OK);
	CHECK(s->max_data == STORE_MAX_DATA && s->max_buffered == STORE_MAX_BUFFERED);
	s->max_data = 2000;
	s->max_buffered = 4096;
	struct conn *c = store_conn_new(s, -1, "test:1", 100.0);
	REQUIRE(c);
	c->state = CONN_READY;
	c->rank = 0;
	memset(val, 'v', sizeof val);
	capture_begin();
	/* the table: 2 x (2 + 900) fit, a third does not; the connection stays */
	CHECK_EQ_INT(core_req(s, c, DDP_STORE_SET, "k1", val, 900, msg, sizeof msg), DDP_STORE_ST_OK);
	CHECK_EQ_INT(core_req(s, c, DDP_STORE_SET, "k2", val, 900, msg, sizeof msg), DDP_STORE_ST_OK);
	CHECK_EQ_INT(core_req(s, c, DDP_STORE_SET, "k3", val, 900, msg, sizeof msg), DDP_STORE_ST_INVALID);
	CHECK(strstr(msg, "store full") && strstr(msg, "'k3' was not stored"));
	CHECK_EQ_INT(s->data_bytes, 1804);
	CHECK(c->state == CONN_READY && !c->dead);
	/* overwriting counts the difference; deleting gives room back */
	CHECK_EQ_INT(core_req(s, c, DDP_STORE_SET, "k1", val, 100, msg, sizeof msg), DDP_STORE_ST_OK);
	CHECK_EQ_INT(s->data_bytes, 1004);
	CHECK_EQ_INT(core_req(s, c, DDP_STORE_SET, "k3", val, 990, msg, sizeof msg), DDP_STORE_ST_OK);
	CHECK_EQ_INT(s->data_bytes, 1996);
	CHECK_EQ_INT(core_req(s, c, DDP_STORE_ADD, "n", (uint8_t[8]){ 1 }, 8, msg, sizeof msg), DDP_STORE_ST_INVALID);
	CHECK(strstr(msg, "store full: it holds 1.9 KiB of keys and values (limit 2.0 KiB); 'n' was not stored") != NULL);
	CHECK_EQ_INT(core_req(s, c, DDP_STORE_DEL, "k3", NULL, 0, msg, sizeof msg), DDP_STORE_ST_OK);
	CHECK_EQ_INT(core_req(s, c, DDP_STORE_ADD, "n", (uint8_t[8]){ 1 }, 8, msg, sizeof msg), DDP_STORE_ST_OK);
	CHECK_EQ_INT(s->data_bytes, 1004 + 9);
	/* replies not read: past max_conn_out unwritten, the next request closes it
	 * (with room enough in total, so that this bound is the one reached) */
	s->max_conn_out = 1500;
	s->max_buffered = 1 << 20;
	CHECK_EQ_INT(core_req(s, c, DDP_STORE_GET, "k2", ms, 4, msg, sizeof msg), DDP_STORE_ST_OK);
	CHECK_EQ_INT(core_req(s, c, DDP_STORE_GET, "k2", ms, 4, msg, sizeof msg), DDP_STORE_ST_OK);
	CHECK_EQ_INT(core_req(s, c, DDP_STORE_GET, "k2", ms, 4, msg, sizeof msg), DDP_STORE_ST_PROTO);
	CHECK(strstr(msg, "without reading the replies") != NULL);
	CHECK(c->state == CONN_CLOSING);
	/* every connection's messages together: a body past max_buffered */
	s->max_buffered = 4096;
	store_conn_flush(s, c); /* what c holds goes (fd -1: discarded) */
	struct conn *d = store_conn_new(s, -1, "test:2", 100.0);
	REQUIRE(d);
	d->state = CONN_READY;
	d->rank = 1;
	CHECK(s->buffered <= s->max_buffered);
	uint8_t hdr[DDP_STORE_HDR_SIZE];
	struct ddp_store_hdr h = { .op = DDP_STORE_SET, .key_len = 2, .val_len = 4000 };
	ddp_store_hdr_encode(hdr, &h);
	store_conn_feed(s, d, hdr, sizeof hdr, 100.0); /* the header alone asks for 4002 bytes */
	CHECK(d->state == CONN_CLOSING && d->body == NULL);
	CHECK(s->buffered <= s->max_buffered);
	const char *log = capture_end();
	CHECK(strstr(log, "refused to store 'k3'") != NULL);
	CHECK(strstr(log, "closing test:2: its message would take the messages held for all "
			 "connections to ") != NULL);
	/* accounting: what is freed is given back */
	store_core_free(s);
	CHECK_EQ_INT(s->buffered, 0);
	CHECK_EQ_INT(s->data_bytes, 0);
	free(s);
}

/* The case over real sockets, default limits: a client holding the
 * secret SETs a 16 MiB value and sends GETs without reading the replies; the
 * server closes it after about two replies instead of buffering them all. */
TEST(unread_gets_are_bounded)
{
	struct ddp_store_server *srv = start_server();
	REQUIRE(srv);
	int fd = raw_connect(ddp_store_server_port(srv));
	REQUIRE(fd >= 0);
	size_t big = DDP_STORE_MAX_VAL;
	char *v = malloc(big);
	REQUIRE(v);
	memset(v, 'x', big);
	raw_hello(fd, SECRET, 0);
	CHECK_EQ_INT(raw_reply(fd, NULL, 0), DDP_STORE_ST_OK);
	raw_msg(fd, DDP_STORE_SET, "big", 3, v, (uint32_t)big);
	CHECK_EQ_INT(raw_reply(fd, NULL, 0), DDP_STORE_ST_OK);
	free(v);
	uint8_t ms[4] = { 0 };
	capture_begin();
	for (int i = 0; i < 20; i++)
		raw_msg(fd, DDP_STORE_GET, "big", 3, ms, 4);
	/* read what comes until the server closes: at most two replies, then
	 * the refusal */
	size_t total = 0;
	char *buf = malloc(1 << 20), tail[1024] = "";
	REQUIRE(buf);
	int eof = 0;
	for (double end = now_s() + 20.0; now_s() < end;) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		if (poll(&pf, 1, 200) <= 0)
			continue;
		ssize_t r = recv(fd, buf, 1 << 20, 0);
		if (r <= 0) {
			eof = 1;
			break;
		}
		total += (size_t)r;
		size_t keep = (size_t)r < sizeof tail - 1 ? (size_t)r : sizeof tail - 1;
		memcpy(tail, buf + r - keep, keep);
		tail[keep] = '\0';
		for (size_t i = 0; i < keep; i++)
			if (!tail[i])
				tail[i] = ' ';
	}
	free(buf);
	CHECK(eof);
	CHECK(total <= 2 * (DDP_STORE_HDR_SIZE + big) + 1024);
	CHECK(strstr(tail, "without reading the replies") != NULL);
	const char *log = capture_end();
	CHECK(strstr(log, "without reading the replies") != NULL);
	CHECK(server_alive(srv));
	close(fd);
	ddp_store_server_stop(srv);
}

int main(int argc, char **argv)
{
	ddp_log_init("ddprun");
	return check_main(argc, argv);
}
