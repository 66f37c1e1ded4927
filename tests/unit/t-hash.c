/* SPDX-License-Identifier: MIT */
#include <fcntl.h>
#include <sys/stat.h>

#include "util/hash.h"
#include "tap.h"

static char dir[] = "/tmp/pvg-t-hash.XXXXXX";

static char *write_file(const char *name, const char *data, size_t len)
{
	char *p = pvg_asprintf("%s/%s", dir, name);
	FILE *f = fopen(p, "w");
	fwrite(data, 1, len, f);
	fclose(f);
	return p;
}

static void known_digest_of_abc(void)
{
	char *p = write_file("abc", "abc", 3);
	struct pvg_file_id id;
	CHECK_INT(pvg_hash_file(p, &id), 0);
	CHECK_STR(id.hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	CHECK_INT(id.size, 3);
	struct stat st;
	stat(p, &st);
	CHECK(id.ino == (uint64_t)st.st_ino && id.dev == (uint64_t)st.st_dev);
	pvg_file_id_clear(&id);
	free(p);
}

static void fifo_is_refused_without_blocking(void)
{
	char *p = pvg_asprintf("%s/fifo", dir);
	mkfifo(p, 0600);
	struct pvg_file_id id;
	CHECK_INT(pvg_hash_file(p, &id), -EINVAL);
	CHECK(!id.hashed);
	CHECK(strstr(id.err_what, "FIFO") != NULL);
	pvg_file_id_clear(&id);
	free(p);
}

static void directory_and_missing(void)
{
	struct pvg_file_id id;
	CHECK_INT(pvg_hash_file(dir, &id), -EISDIR);
	pvg_file_id_clear(&id);
	char *p = pvg_asprintf("%s/nope", dir);
	CHECK_INT(pvg_hash_file(p, &id), -ENOENT);
	CHECK_STR(id.err_what, "open");
	pvg_file_id_clear(&id);
	free(p);
}

static void concurrent_hashing_matches_sequential(void)
{
	char *buf = malloc(3u << 20);
	for (size_t i = 0; i < (3u << 20); i++)
		buf[i] = (char)(i * 2654435761u >> 13);
	char *a = write_file("a", buf, 3u << 20);
	char *b = write_file("b", buf, (3u << 20) - 1);
	const char *paths[] = { a, b, a };
	struct pvg_file_id ids[3], one;
	CHECK_INT(pvg_hash_files(paths, 3, ids), 0);
	CHECK_INT(pvg_hash_file(b, &one), 0);
	CHECK_STR(ids[1].hex, one.hex);
	CHECK_STR(ids[0].hex, ids[2].hex);
	CHECK(strcmp(ids[0].hex, ids[1].hex) != 0);
	for (int i = 0; i < 3; i++)
		pvg_file_id_clear(&ids[i]);
	pvg_file_id_clear(&one);
	free(a);
	free(b);
	free(buf);
}

/* ---- the build/installed pair: one read of the installed file, compared and hashed ---- */

#define PAIR_LEN ((5u << 20) + 123) /* more than the ring, and a partial last chunk */

static char *pattern(size_t len)
{
	char *buf = malloc(len);
	for (size_t i = 0; i < len; i++)
		buf[i] = (char)(i * 2654435761u >> 13);
	return buf;
}

static int pair(const char *b, const char *i, struct pvg_file_id *ob, struct pvg_file_id *oi,
		uint64_t *at)
{
	return pvg_pair_join(pvg_pair_start(b, i), ob, oi, at);
}

static void pair_equal_shares_the_digest(void)
{
	char *buf = pattern(PAIR_LEN);
	char *b = write_file("pb", buf, PAIR_LEN), *i = write_file("pi", buf, PAIR_LEN);
	struct pvg_file_id ob, oi, ref;
	uint64_t at = 0;
	CHECK_INT(pair(b, i, &ob, &oi, &at), 1);
	CHECK_INT(pvg_hash_file(i, &ref), 0);
	CHECK(oi.hashed && !oi.digest_by_compare);
	CHECK_STR(oi.hex, ref.hex);
	CHECK(ob.hashed && ob.digest_by_compare);
	CHECK_STR(ob.hex, ref.hex);
	CHECK(at == UINT64_MAX);
	CHECK_INT(ob.size, PAIR_LEN);
	struct stat st;
	stat(b, &st);
	CHECK(ob.ino == (uint64_t)st.st_ino); /* the build's own identity, not the installed's */
	pvg_file_id_clear(&ob);
	pvg_file_id_clear(&oi);
	pvg_file_id_clear(&ref);
	free(b);
	free(i);
	free(buf);
}

/* First byte, both sides of a chunk edge, the last byte: the offset is exact and the
 * installed digest is still the installed file's. */
static void pair_difference_is_located(void)
{
	const size_t offs[] = { 0, (256u << 10) - 1, 256u << 10, (3u << 20) + 7, PAIR_LEN - 1 };
	char *buf = pattern(PAIR_LEN);
	char *b = write_file("pb", buf, PAIR_LEN);
	for (size_t k = 0; k < ARRAY_SIZE(offs); k++) {
		buf[offs[k]] ^= 0x40;
		char *i = write_file("pi", buf, PAIR_LEN);
		buf[offs[k]] ^= 0x40;
		struct pvg_file_id ob, oi, ref;
		uint64_t at = 0;
		CHECK_INT(pair(b, i, &ob, &oi, &at), 0);
		CHECK_INT(at, offs[k]);
		CHECK(!ob.hashed && ob.err == 0);
		CHECK_INT(pvg_hash_file(i, &ref), 0);
		CHECK(oi.hashed);
		CHECK_STR(oi.hex, ref.hex);
		pvg_file_id_clear(&ob);
		pvg_file_id_clear(&oi);
		pvg_file_id_clear(&ref);
		free(i);
	}
	free(b);
	free(buf);
}

static void pair_sizes_differ(void)
{
	char *buf = pattern(PAIR_LEN);
	char *b = write_file("pb", buf, PAIR_LEN), *i = write_file("pi", buf, PAIR_LEN - 1);
	struct pvg_file_id ob, oi;
	uint64_t at = 0;
	CHECK_INT(pair(b, i, &ob, &oi, &at), 0);
	CHECK(at == UINT64_MAX); /* not read: a length says nothing about where */
	CHECK(oi.hashed && !ob.hashed);
	CHECK_INT(oi.size, PAIR_LEN - 1);
	pvg_file_id_clear(&ob);
	pvg_file_id_clear(&oi);
	free(b);
	free(i);
	free(buf);
}

static void pair_missing_sides(void)
{
	char *buf = pattern(1000);
	char *b = write_file("pb", buf, 1000), *gone = pvg_asprintf("%s/gone", dir);
	struct pvg_file_id ob, oi;
	uint64_t at;
	CHECK_INT(pair(b, gone, &ob, &oi, &at), 0);
	CHECK_INT(oi.err, -ENOENT);
	CHECK(!oi.hashed && !ob.hashed);
	pvg_file_id_clear(&ob);
	pvg_file_id_clear(&oi);
	CHECK_INT(pair(gone, b, &ob, &oi, &at), 0);
	CHECK_INT(ob.err, -ENOENT);
	CHECK(oi.hashed && !ob.hashed); /* the installed digest is still reported */
	pvg_file_id_clear(&ob);
	pvg_file_id_clear(&oi);
	free(b);
	free(gone);
	free(buf);
}

/* /proc files say size 0 and then give bytes: what was read is not what was fstat'ed. */
static void pair_file_that_lies_about_its_size(void)
{
	char *b = write_file("empty", "", 0);
	struct pvg_file_id ob, oi;
	uint64_t at;
	CHECK_INT(pair(b, "/proc/self/status", &ob, &oi, &at), 0);
	CHECK_INT(oi.err, -EAGAIN);
	CHECK_STR(oi.err_what, "changed while being read");
	CHECK(!oi.hashed && !ob.hashed);
	pvg_file_id_clear(&ob);
	pvg_file_id_clear(&oi);
	free(b);
}

static void pair_wait_and_cancel(void)
{
	char *buf = pattern(PAIR_LEN);
	char *b = write_file("pb", buf, PAIR_LEN);
	buf[1] ^= 1;
	char *i = write_file("pi", buf, PAIR_LEN);
	struct pvg_pair_job *j = pvg_pair_start(b, i);
	CHECK(pvg_pair_wait_differs(j)); /* known at the first chunk, long before the digest */
	pvg_pair_cancel(j);
	j = pvg_pair_start(b, b);
	CHECK(!pvg_pair_wait_differs(j));
	struct pvg_file_id ob, oi;
	uint64_t at;
	CHECK_INT(pvg_pair_join(j, &ob, &oi, &at), 1);
	pvg_file_id_clear(&ob);
	pvg_file_id_clear(&oi);
	/* cancelled at once: no digest, no hang, nothing leaked */
	pvg_pair_cancel(pvg_pair_start(b, i));
	free(b);
	free(i);
	free(buf);
}

/* Big files are read on one thread and hashed on another: the same digest as one loop. */
static void big_file_split_matches_one_loop(void)
{
	size_t len = (64u << 20) + 5;
	char *buf = pattern(len);
	char *p = write_file("big", buf, len);
	struct pvg_file_id id;
	CHECK_INT(pvg_hash_file(p, &id), 0);
	CHECK(id.hashed && !id.digest_by_compare);
	CHECK_INT(id.size, len);
	int fd = open(p, O_RDONLY);
	unsigned char d[32];
	char hex[65];
	uint64_t n = 0;
	CHECK_INT(pvg_hash_fd(fd, -1, d, &n), 0);
	close(fd);
	pvg_hex(d, 32, hex);
	CHECK_STR(id.hex, hex);
	CHECK_INT(n, len);
	pvg_file_id_clear(&id);
	unlink(p);
	free(p);
	free(buf);
}

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	RUN(known_digest_of_abc);
	RUN(fifo_is_refused_without_blocking);
	RUN(directory_and_missing);
	RUN(concurrent_hashing_matches_sequential);
	/* every read plan gives the same answers: both hand-offs, small chunks that wrap the
	 * ring many times, and no second thread at all */
	const struct pvg_read_plan plans[] = {
		PVG_READ_PLAN_DEFAULT,
		{ .chunk = 64u << 10, .ring = 8, .split = true, .hasher_reads = true },
		{ .chunk = 4096, .ring = 2, .split = true, .hasher_reads = true },
		{ .chunk = 4096, .ring = 3, .split = true },
		{ .chunk = 128u << 10, .ring = 8, .split = false },
	};
	for (size_t p = 0; p < ARRAY_SIZE(plans); p++) {
		pvg_read_plan_set(&plans[p]);
		printf("# plan: chunk %zu, ring %u, split %d, hasher reads %d\n", plans[p].chunk,
		       plans[p].ring, plans[p].split, plans[p].hasher_reads);
		RUN(pair_equal_shares_the_digest);
		RUN(pair_difference_is_located);
		RUN(pair_sizes_differ);
		RUN(pair_missing_sides);
		RUN(pair_file_that_lies_about_its_size);
		if (plans[p].split) /* without threads nothing is known before join */
			RUN(pair_wait_and_cancel);
		RUN(big_file_split_matches_one_loop);
	}
	pvg_read_plan_set(NULL);
	char *cmd = pvg_asprintf("rm -rf %s", dir);
	if (system(cmd) != 0)
		return 1;
	free(cmd);
	TAP_EXIT();
}
