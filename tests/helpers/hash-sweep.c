/* SPDX-License-Identifier: MIT */
/*
 * tests/bench/chunks' probe: gate 3's hashing of the build / installed pair (or of one file)
 * under a given read plan, timed inside one process, so that chunk sizes and hand-offs can be
 * compared with `openssl dgst` and `cat` in the same run.
 *   hash-sweep [--chunk KIB] [--ring N] [--no-split] [--pin|--no-pin|--pin-if-quiet] [--hasher-reads] BUILD|- INSTALLED
 * Prints: seconds user_s sys_s sha256 equal
 */
#include <getopt.h>
#include <sys/resource.h>

#include "util/hash.h"

static double tv(struct timeval t)
{
	return (double)t.tv_sec + (double)t.tv_usec / 1e6;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "chunk", required_argument, NULL, 'c' },
		{ "ring", required_argument, NULL, 'r' },
		{ "no-split", no_argument, NULL, 's' },
		{ "no-pin", no_argument, NULL, 'p' },
		{ "pin", no_argument, NULL, 'P' },
		{ "pin-if-quiet", no_argument, NULL, 'Q' },
		{ "hasher-reads", no_argument, NULL, 'H' },
		{},
	};
	struct pvg_read_plan plan = *pvg_read_plan_get();
	int c;
	while ((c = getopt_long(argc, argv, "c:r:spPQH", opts, NULL)) != -1) {
		switch (c) {
		case 'c': plan.chunk = (size_t)strtoul(optarg, NULL, 10) << 10; break;
		case 'r': plan.ring = (unsigned)strtoul(optarg, NULL, 10); break;
		case 's': plan.split = false; break;
		case 'p': plan.pin = plan.pin_if_quiet = false; break;
		case 'P': plan.pin = true; break;
		case 'Q': plan.pin = false; plan.pin_if_quiet = true; break;
		case 'H': plan.hasher_reads = true; break;
		default: return 2;
		}
	}
	if (argc - optind != 2) {
		fprintf(stderr, "usage: hash-sweep [--chunk KIB] [--ring N] [--no-split] [--pin|--no-pin|--pin-if-quiet] [--hasher-reads] "
				"BUILD|- INSTALLED\n");
		return 2;
	}
	pvg_read_plan_set(&plan);
	const char *build = argv[optind], *installed = argv[optind + 1];
	struct pvg_file_id b = { 0 }, i = { 0 };
	uint64_t t0 = pvg_now_ns(), at;
	int eq = 0;
	if (strcmp(build, "-") == 0)
		pvg_hash_file(installed, &i);
	else
		eq = pvg_pair_join(pvg_pair_start(build, installed), &b, &i, &at);
	uint64_t t1 = pvg_now_ns();
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("%.4f %.4f %.4f %s %d\n", (double)(t1 - t0) / 1e9, tv(ru.ru_utime), tv(ru.ru_stime),
	       i.hashed ? i.hex : "-", eq);
	int ok = i.hashed;
	pvg_file_id_clear(&b);
	pvg_file_id_clear(&i);
	return ok ? 0 : 1;
}
