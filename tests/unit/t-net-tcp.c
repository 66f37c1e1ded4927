/* SPDX-License-Identifier: MIT */
/* /proc/net/tcp{,6} parser: this process's own listening socket, and corrupt lines. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "sys/maps.h"
#include "sys/net-tcp.h"
#include "tap.h"

static void parses_kernel_format(void)
{
	static const char tcp[] =
		"  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
		"   0: 0100007F:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 4242 1 0000000000000000 100 0 0 10 0\n"
		"   1: 0100007F:1F40 0100007F:C350 01 00000000:00000000 00:00000000 00000000  1000        0 0 1 0000000000000000 20 4 30 10 -1\n";
	struct pvg_tcp_table t = { 0 };
	size_t bad;
	CHECK_INT(pvg_net_tcp_parse(tcp, sizeof(tcp) - 1, 4, &t, &bad), 0);
	CHECK_INT(t.n, 2);
	if (t.n == 2) {
		CHECK_INT(t.s[0].port, 8000);
		CHECK_INT(t.s[0].state, PVG_TCP_LISTEN);
		CHECK_INT(t.s[0].uid, 1000);
		CHECK_INT(t.s[0].inode, 4242);
		char a[64];
		pvg_tcp_addr_string(&t.s[0], a, sizeof(a));
		CHECK_STR(a, "127.0.0.1");
		CHECK_INT(t.s[1].state, 1);
	}
	pvg_tcp_table_clear(&t);

	static const char tcp6[] =
		"  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
		"   0: 00000000000000000000000000000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 777 1 0000000000000000 100 0 0 10 0\n";
	CHECK_INT(pvg_net_tcp_parse(tcp6, sizeof(tcp6) - 1, 6, &t, &bad), 0);
	CHECK_INT(t.n, 1);
	if (t.n == 1) {
		CHECK_INT(t.s[0].port, 8080);
		CHECK_INT(t.s[0].inode, 777);
		char a[64];
		pvg_tcp_addr_string(&t.s[0], a, sizeof(a));
		CHECK_STR(a, "::");
	}
	pvg_tcp_table_clear(&t);
}

static void rejects_corrupt_lines(void)
{
	static const char *const bad_lines[] = {
		"   0: 0100007F1F40 00000000:0000 0A 0:0 0:0 0 0 0 1\n",       /* no ':' */
		"   0: 0100007F:1F40 00000000:0000 0A 0:0 0:0 0 0 0\n",        /* no inode */
		"   0: 0100007F:1F40 00000000:0000 ZZ 0:0 0:0 0 0 0 1\n",      /* state */
		"   0: 0100007F:1F40 00000000:0000 0A 0:0 0:0 0 x 0 1\n",      /* uid */
		"   0: 0100007F:1F4G 00000000:0000 0A 0:0 0:0 0 0 0 1\n",      /* port */
		"   0 0100007F:1F40 00000000:0000 0A 0:0 0:0 0 0 0 1\n",       /* sl */
		"   0: 0100007F:1F40 00000000:0000 0A 0:0 0:0 0 4294967296 0 1\n", /* uid > 32 bits */
		"   0: 0100007F:1F40 00000000:0000 0A 0:0 0:0 0 0 0 18446744073709551616\n", /* inode */
		"\x01\x02\x03\n",
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad_lines); i++) {
		struct pvg_tcp_table t = { 0 };
		size_t bad = 0;
		char *text = pvg_asprintf("  sl  local_address\n%s", bad_lines[i]);
		CHECK_INT(pvg_net_tcp_parse(text, strlen(text), 4, &t, &bad), -EINVAL);
		CHECK_INT(bad, 2);
		pvg_tcp_table_clear(&t);
		free(text);
	}
}

static void finds_own_listening_socket(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	CHECK(bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0);
	CHECK(listen(fd, 1) == 0);
	getsockname(fd, (struct sockaddr *)&a, &len);
	struct stat st;
	fstat(fd, &st);
	struct pvg_tcp_table t;
	CHECK_INT(pvg_net_tcp_listeners("/proc", ntohs(a.sin_port), &t), 0);
	CHECK_INT(t.n, 1);
	if (t.n == 1) {
		CHECK_INT(t.s[0].inode, st.st_ino);
		CHECK_INT(t.s[0].uid, getuid());
	}
	pvg_tcp_table_clear(&t);
	close(fd);
	CHECK_INT(pvg_net_tcp_listeners("/proc", ntohs(a.sin_port), &t), 0);
	CHECK_INT(t.n, 0);
	CHECK_INT(pvg_net_tcp_listeners("/nonexistent", 1, &t), -ENOENT);
}

/* The real table, cut and flipped at random: a clean result or -EINVAL, never a crash. */
static void mutated_real_table_never_crashes(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0); /* at least one line */
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	bind(fd, (struct sockaddr *)&a, sizeof(a));
	listen(fd, 1);
	char *text = NULL;
	size_t len = 0;
	CHECK_INT(pvg_read_file("/proc/net/tcp", 1 << 20, &text, &len), 0);
	close(fd);
	srand(777);
	for (int round = 0; round < 3000 && len; round++) {
		char *copy = malloc(len);
		memcpy(copy, text, len);
		size_t cut = (size_t)rand() % len + 1;
		for (int k = 0; k < 1 + rand() % 3; k++)
			copy[(size_t)rand() % cut] = (char)(rand() % 256);
		struct pvg_tcp_table t = { 0 };
		int r = pvg_net_tcp_parse(copy, cut, 4, &t, NULL);
		CHECK(r == 0 || r == -EINVAL);
		pvg_tcp_table_clear(&t);
		free(copy);
	}
	free(text);
}

int main(void)
{
	RUN(parses_kernel_format);
	RUN(rejects_corrupt_lines);
	RUN(finds_own_listening_socket);
	RUN(mutated_real_table_never_crashes);
	TAP_EXIT();
}
