/* SPDX-License-Identifier: MIT */
/* provgate inspect FILE...: the device code objects inside ELF files (or raw bundles,
 * CCOB files, fatbins, code objects), as a table or JSON. */
#include <getopt.h>

#include "cli.h"
#include "formats/codeobj/codeobj.h"

static void human_size(uint64_t n, char *out, size_t size)
{
	if (n >= 10ull << 20)
		snprintf(out, size, "%" PRIu64 "M", n >> 20);
	else if (n >= 10ull << 10)
		snprintf(out, size, "%" PRIu64 "K", n >> 10);
	else
		snprintf(out, size, "%" PRIu64, n);
}

/* Text that came from the file, made safe for a terminal. */
static void print_clean(FILE *f, const char *prefix, const char *text)
{
	_cleanup_free_ char *t = pvg_utf8_sanitize(text, strlen(text));
	fprintf(f, "%s%s\n", prefix, t);
}

static void print_table(FILE *f, const struct pvg_codeobj_set *set, bool kernels)
{
	bool digests = set->opts.all_digests;
	fprintf(f, "%s:\n", set->path);
	for (size_t i = 0; i < set->n_sections; i++)
		fprintf(f, "  section %s: offset 0x%" PRIx64 ", %" PRIu64 " bytes, %u container%s\n",
			set->sections[i].name, set->sections[i].offset, set->sections[i].size,
			set->sections[i].n_containers, set->sections[i].n_containers == 1 ? "" : "s");
	if (set->n_wrappers)
		fprintf(f, "  wrappers: %u (%u point at a container found)\n", set->n_wrappers,
			set->n_wrappers_located);
	if (set->n_objs) {
		fprintf(f, "  %-12s %6s %5s %-52s %-24s %2s %8s %7s\n", "SECTION", "BUNDLE", "ENTRY",
			"ID", "ARCH", "CO", "SIZE", "KERNELS");
		for (size_t i = 0; i < set->n_objs; i++) {
			const struct pvg_code_object *co = &set->objs[i];
			char sz[24], co_v[8], kn[16];
			human_size(co->size, sz, sizeof(sz));
			if (co->co_version)
				snprintf(co_v, sizeof(co_v), "%d", co->co_version);
			else
				snprintf(co_v, sizeof(co_v), "-");
			if (co->kind == PVG_CO_HOST)
				snprintf(kn, sizeof(kn), "-");
			else if (co->kernels_known)
				snprintf(kn, sizeof(kn), "%zu", co->n_kernels);
			else
				snprintf(kn, sizeof(kn), "?");
			const char *id_s = co->id ? co->id : "", *arch_s = co->arch ? co->arch : "-";
			/* ids come from the file: never print raw bytes to a terminal */
			_cleanup_free_ char *id = pvg_utf8_sanitize(id_s, strlen(id_s));
			_cleanup_free_ char *arch = pvg_utf8_sanitize(arch_s, strlen(arch_s));
			fprintf(f, "  %-12s %6u %5u %-52s %-24s %2s %8s%s %7s\n", co->section, co->bundle,
				co->entry, id, arch, co_v, sz, co->compressed ? "z" : " ", kn);
			if (co->kind == PVG_CO_AMDGPU && !co->mach_name && !co->error &&
			    !co->not_decoded)
				fprintf(f, "      e_flags 0x%x: processor 0x%x is not in the public "
					   "EF_AMDGPU_MACH table; target taken from the metadata note\n",
					co->e_flags, co->mach);
			if (co->digest_known) {
				char hex[65];
				pvg_hex(co->sha256, 32, hex);
				fprintf(f, "      sha256 %s\n", hex);
			} else if (digests && pvg_co_loadable(co) && !co->error) {
				fprintf(f, "      sha256 unknown\n");
			}
			if (co->error)
				print_clean(f, "      error: ", co->error);
			if (co->mismatch)
				print_clean(f, "      mismatch: ", co->mismatch);
			if (!co->kernels_known && co->kernels_why && co->kind != PVG_CO_HOST &&
			    (!co->not_decoded || co->checksum == PVG_CSUM_FAILED))
				fprintf(f, "      kernels unknown: %s\n", co->kernels_why);
			if (kernels && co->kernels)
				for (size_t k = 0; k < co->n_kernels; k++) {
					const char *kn_s = co->kernels[k].name ? co->kernels[k].name
									       : co->kernels[k].symbol;
					_cleanup_free_ char *kname = pvg_utf8_sanitize(kn_s, strlen(kn_s));
					fprintf(f, "      kernel %s\n", kname);
				}
		}
	}
	for (size_t i = 0; i < set->n_issues; i++) {
		_cleanup_free_ char *where = pvg_asprintf("  problem: %s: ", set->issues[i].where);
		print_clean(f, where, set->issues[i].message);
	}
	size_t dev = 0, not_decoded = 0, unchecked = pvg_codeobj_unchecked_bundles(set);
	for (size_t i = 0; i < set->n_objs; i++) {
		const struct pvg_code_object *co = &set->objs[i];
		dev += co->kind != PVG_CO_HOST;
		not_decoded += co->not_decoded;
	}
	if (not_decoded)
		fprintf(f, "  %zu compressed entr%s not decoded past %s headers: kernels '?' "
			   "(--kernels decodes them whole)\n",
			not_decoded, not_decoded == 1 ? "y" : "ies", not_decoded == 1 ? "its" : "their");
	if (unchecked)
		fprintf(f, "  %zu CCOB bundle%s decompressed in part only: %s checksum%s not "
			   "verified (--kernels decompresses and checks %s)\n",
			unchecked, unchecked == 1 ? "" : "s", unchecked == 1 ? "its" : "their",
			unchecked == 1 ? " is" : "s are", unchecked == 1 ? "it" : "them");
	if (dev == 0)
		fprintf(f, "  no device code objects\n");
}

static cJSON *set_json(const struct pvg_codeobj_set *set, bool kernels)
{
	cJSON *o = cJSON_CreateObject();
	pvg_json_add_str(o, "path", set->path);
	pvg_json_add_bool(o, "elf", set->elf);
	cJSON_AddItemToObject(o, "sections", pvg_codeobj_sections_json(set));
	pvg_json_add_int(o, "wrappers", (int)set->n_wrappers);
	pvg_json_add_int(o, "wrappers_located", (int)set->n_wrappers_located);
	cJSON *objs = cJSON_AddArrayToObject(o, "code_objects");
	for (size_t i = 0; i < set->n_objs; i++)
		cJSON_AddItemToArray(objs, pvg_codeobj_json(&set->objs[i], kernels));
	cJSON *probs = cJSON_AddArrayToObject(o, "problems");
	for (size_t i = 0; i < set->n_issues; i++) {
		cJSON *p = cJSON_CreateObject();
		pvg_json_add_str(p, "where", set->issues[i].where);
		pvg_json_add_str(p, "message", set->issues[i].message);
		cJSON_AddItemToArray(probs, p);
	}
	return o;
}

static bool set_ok(const struct pvg_codeobj_set *set)
{
	size_t dev = 0;
	if (set->n_issues)
		return false;
	for (size_t i = 0; i < set->n_objs; i++) {
		if (set->objs[i].error || set->objs[i].mismatch)
			return false;
		dev += set->objs[i].kind != PVG_CO_HOST;
	}
	return dev > 0;
}

static int inspect_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "kernels", no_argument, NULL, 'k' },
		{ "digests", no_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	bool json = false, kernels = false, digests = false;
	int c;
	while ((c = getopt_long(argc, argv, "jkdh", opts, NULL)) != -1) {
		switch (c) {
		case 'j': json = true; break;
		case 'k': kernels = true; break;
		case 'd': digests = true; break;
		case 'h':
			printf("Usage: provgate %s\n%s", verb_inspect.synopsis, verb_inspect.help);
			return EXIT_OK;
		default: return EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "provgate inspect: name at least one file\n");
		return EXIT_USAGE;
	}
	int rc = EXIT_OK;
	_cleanup_json_ cJSON *all = json ? cJSON_CreateObject() : NULL;
	cJSON *files = json ? cJSON_AddArrayToObject(all, "files") : NULL;
	for (int i = optind; i < argc; i++) {
		struct pvg_codeobj_set *set = NULL;
		struct pvg_codeobj_opts opts = { .kernel_names = kernels, .all_digests = digests };
		int r = pvg_codeobj_scan_path(argv[i], &opts, &set);
		if (r < 0) {
			fprintf(stderr, "provgate inspect: %s: %s\n", argv[i],
				r == -EINVAL ? "not a regular file" : strerror(-r));
			if (json) {
				cJSON *o = cJSON_CreateObject();
				pvg_json_add_str(o, "path", argv[i]);
				pvg_json_add_str(o, "error", r == -EINVAL ? "not a regular file" : strerror(-r));
				cJSON_AddItemToArray(files, o);
			}
			rc = EXIT_NOT_CERTIFIED;
			continue;
		}
		if (!set_ok(set))
			rc = EXIT_NOT_CERTIFIED;
		if (json)
			cJSON_AddItemToArray(files, set_json(set, kernels));
		else
			print_table(stdout, set, kernels);
		pvg_codeobj_set_free(set);
	}
	if (json) {
		_cleanup_free_ char *text = cJSON_Print(all);
		printf("%s\n", text);
	}
	return rc;
}

const struct cli_verb verb_inspect = {
	.name = "inspect",
	.main = inspect_main,
	.synopsis = "inspect [--json] [--kernels] [--digests] FILE...",
	.help = "Lists every device code object in each FILE: HIP offload bundles in .hip_fatbin\n"
		"(plain or CCOB-compressed, every bundle of the section), CUDA fatbins in\n"
		".nv_fatbin / __nv_relfatbin. Columns: SECTION, BUNDLE (container index in the\n"
		"section), ENTRY, ID (bundle entry id), ARCH (target id), CO (code object version),\n"
		"SIZE ('z': from a compressed container), KERNELS (count, '?' unknown or, for a\n"
		"compressed entry not decoded without --kernels: of a CUDA entry only its ELF\n"
		"header is, of a CCOB bundle only its bundle header).\n"
		"  --json      one JSON document\n"
		"  --kernels   list kernel names too (decodes every compressed entry whole, and\n"
		"              checks each CCOB bundle's checksum)\n"
		"  --digests   the sha256 of every loadable device code object as the driver\n"
		"              receives it: a bundle entry's bytes, a cubin's ELF, a PTX text,\n"
		"              decompressed where the container compresses it (gate 6's identity;\n"
		"              none for relocatable __nv_relfatbin cubins)\n"
		"Exit: 0 device code found and readable, 1 none found or damaged, 2 usage.\n",
};
