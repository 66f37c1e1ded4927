/* SPDX-License-Identifier: MIT */
#include <fcntl.h>
#include <sys/stat.h>

#include "pvg.h"
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

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	RUN(known_digest_of_abc);
	RUN(fifo_is_refused_without_blocking);
	RUN(directory_and_missing);
	RUN(concurrent_hashing_matches_sequential);
	char *cmd = pvg_asprintf("rm -rf %s", dir);
	if (system(cmd) != 0)
		return 1;
	free(cmd);
	TAP_EXIT();
}
