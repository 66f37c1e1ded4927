/* SPDX-License-Identifier: MIT */
/*
 * Triton cache entries: the metadata, .source and .py parsers on the files
 * tests/fixtures/triton-cache/make.sh writes in Triton 3.6's layout, and the folder walk on
 * such a tree (a real sm_90 and sm_80 cubin, a real gfx90a code object) with its hostile
 * variants: a truncated json, a link out of the cache, a 5 MiB json; and an autotuned
 * kernel's variants (three real cubins of one name) and one entry in two folders.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "formats/codeobj/codeobj.h"
#include "formats/triton-cache.h"
#include "sys/triton-cache.h"
#include "util/hash.h"
#include "tap.h"

/* a check with its own words: what was seen goes into the line when it fails */
#define ok(c, ...)                                                                          \
	do {                                                                               \
		if (!(c)) {                                                                \
			printf("#   %s:%d: ", __FILE__, __LINE__);                          \
			printf(__VA_ARGS__);                                               \
			printf(" failed\n");                                              \
			tap_case_failed = 1;                                               \
		}                                                                          \
	} while (0)

static const char *src_dir(void)
{
	const char *s = getenv("PVG_SRC");
	return s ? s : ".";
}

static void sha_of(const char *rel, uint8_t out[32])
{
	char path[4096], hex[65];
	snprintf(path, sizeof(path), "%s/tests/fixtures/triton-cache/%s", src_dir(), rel);
	char *buf = NULL;
	size_t len = 0;
	memset(out, 0, 32);
	if (pvg_read_file(path, 1u << 24, &buf, &len) < 0)
		return;
	pvg_sha256_hex(buf, len, hex);
	for (int i = 0; i < 32; i++) {
		unsigned v;
		sscanf(hex + 2 * i, "%2x", &v);
		out[i] = (uint8_t)v;
	}
	free(buf);
}

static void meta_cases(void)
{
	struct pvg_triton_meta m;
	char *why = NULL;
	const char *cuda = "{\"hash\": \"ab\", \"target\": {\"backend\": \"cuda\", \"arch\": 90, "
			   "\"warp_size\": 32}, \"name\": \"add_kernel\", \"triton_version\": \"3.6.0\"}";
	ok(pvg_triton_meta_parse(cuda, strlen(cuda), &m, &why) == 0 && strcmp(m.arch, "sm_90") == 0 &&
		   strcmp(m.name, "add_kernel") == 0 && m.warp_size == 32,
	   "meta_cuda_arch_90_is_sm_90 (%s)", m.arch);
	free(why);
	const char *hip = "{\"target\": {\"backend\": \"hip\", \"arch\": \"gfx936:xnack-\", "
			  "\"warp_size\": 64}, \"name\": \"k\"}";
	int r = pvg_triton_meta_parse(hip, strlen(hip), &m, &why);
	ok(r < 0 || strcmp(m.arch, "gfx936:xnack-") == 0, "meta_hip_keeps_target_id_features (%s)",
	   r == 0 ? m.arch : why);
	free(why);
	const char *hip90a = "{\"target\": {\"backend\": \"hip\", \"arch\": \"gfx90a\"}, \"name\": \"k\"}";
	ok(pvg_triton_meta_parse(hip90a, strlen(hip90a), &m, &why) == 0 &&
		   !pvg_target_compatible("gfx936", m.arch) && pvg_target_compatible("gfx90a:xnack-", m.arch),
	   "meta_hip_gfx90a_serves_gfx90a_not_gfx936");
	free(why);
	/* the options that tell an autotuner's variants apart */
	const char *opts = "{\"target\": {\"backend\": \"cuda\", \"arch\": 90}, \"name\": \"k\", "
			   "\"num_warps\": 8, \"num_stages\": 2, \"maxnreg\": 32}";
	ok(pvg_triton_meta_parse(opts, strlen(opts), &m, &why) == 0 && m.num_warps == 8 &&
		   m.num_stages == 2 && m.maxnreg == 32,
	   "meta_options (%ld %ld %ld)", m.num_warps, m.num_stages, m.maxnreg);
	free(why);
	const char *nocap = "{\"target\": {\"backend\": \"cuda\", \"arch\": 90}, \"name\": \"k\", "
			    "\"num_warps\": 4, \"maxnreg\": null}";
	ok(pvg_triton_meta_parse(nocap, strlen(nocap), &m, &why) == 0 && m.num_warps == 4 &&
		   m.num_stages == 0 && m.maxnreg == 0,
	   "meta_maxnreg_null_is_no_cap");
	free(why);
	const char *bad[] = {
		"{\"target\": {\"backend\": \"cuda\", \"arch\": 90}, \"name\": \"k\", \"num_warps\": 0}",
		"{\"target\": {\"backend\": \"cuda\", \"arch\": 90}, \"name\": \"k\", \"num_warps\": \"8\"}",
		"{\"target\": {\"backend\": \"cuda\", \"arch\": 90}, \"name\": \"k\", \"num_stages\": 1e300}",
		"{\"target\": {\"backend\": \"cuda\", \"arch\": 90}, \"name\": \"k\", \"num_warps\": null}",
		"{\"target\": {\"backend\": \"cuda\", \"arch\": 90}, \"name\": \"k\", \"maxnreg\": 2.5}",
		"{\"target\": {\"backend\": \"cuda\", \"arch\": 90}, \"name\": \"add_ker",
		"[1,2]",
		"{\"target\": {\"backend\": \"cuda\", \"arch\": \"90; rm\"}, \"name\": \"k\"}",
		"{\"target\": {\"backend\": \"cuda\", \"arch\": 90}, \"name\": 5}",
		"{\"target\": {\"backend\": \"vulkan\", \"arch\": 90}, \"name\": \"k\"}",
		"{\"target\": {\"backend\": \"hip\", \"arch\": 906}, \"name\": \"k\"}",
		"{\"target\": \"cuda\", \"name\": \"k\"}",
		"{\"target\": {\"backend\": \"cuda\", \"arch\": 90.5}, \"name\": \"k\"}",
		"{\"target\": {\"backend\": \"cuda\", \"arch\": 90}, \"name\": \"a\\u0007b\"}",
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		why = NULL;
		r = pvg_triton_meta_parse(bad[i], strlen(bad[i]), &m, &why);
		ok(r == -EBADMSG && why, "meta_refuses_bad_%zu (%s)", i, why ? why : "accepted");
		free(why);
	}
}

static void loc_cases(void)
{
	char *p = NULL;
	unsigned long line = 0;
	const char *s = "#loc = loc(\"/opt/venv/lib/x \\22q\\22.py\":42:0)\nmodule {}\n";
	ok(pvg_triton_first_loc(s, strlen(s), &p, &line) == 0 && p &&
		   strcmp(p, "/opt/venv/lib/x \"q\".py") == 0 && line == 42,
	   "first_loc_unescapes_path (%s:%lu)", p ? p : "-", line);
	free(p);
	const char *cut = "#loc = loc(\"/opt/venv/lib/x.py";
	ok(pvg_triton_first_loc(cut, strlen(cut), &p, &line) == -EBADMSG, "first_loc_cut_short");
	ok(pvg_triton_first_loc("module {}", 9, &p, &line) == -ENOENT, "first_loc_none");
	const char *nul = "loc(\"/a\\00b\":1:0)";
	ok(pvg_triton_first_loc(nul, strlen(nul), &p, &line) == -EBADMSG, "first_loc_refuses_nul");
}

static void py_cases(void)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/tests/fixtures/triton-cache/add_kernel.py", src_dir());
	char *text = NULL;
	size_t len = 0;
	struct pvg_strv k = { 0 };
	if (pvg_read_file(path, 1u << 20, &text, &len) == 0)
		pvg_triton_py_kernels(text, len, &k);
	ok(k.n == 2 && pvg_strv_has(&k, "add_kernel") && pvg_strv_has(&k, "scale_kernel") &&
		   !pvg_strv_has(&k, "add"),
	   "py_kernels_jit_and_autotuned (%zu)", k.n);
	pvg_strv_clear(&k);
	free(text);
	const char *plain = "from triton import jit\n@jit\ndef k1(x):\n  pass\n@other\ndef k2():\n"
			    "  pass\n@triton.jit\n\nx = 1\ndef k3():\n  pass\n@triton.jitter\ndef k4(): pass\n";
	pvg_triton_py_kernels(plain, strlen(plain), &k);
	ok(k.n == 1 && pvg_strv_has(&k, "k1"), "py_kernels_only_decorated_defs (%zu)", k.n);
	pvg_strv_clear(&k);
	/* a text that ends in blanks with no newline, in a buffer of exactly its size: the scan
	 * reads nothing past it (found by fuzz-triton) */
	static const char tail[] = "@triton.jit\ndef k(x):\n  pass\n  ";
	char *exact = pvg_xcalloc(sizeof(tail) - 1, 1);
	memcpy(exact, tail, sizeof(tail) - 1);
	pvg_triton_py_kernels(exact, sizeof(tail) - 1, &k);
	ok(k.n == 1 && pvg_strv_has(&k, "k"), "py_kernels_text_ending_in_blanks (%zu)", k.n);
	pvg_strv_clear(&k);
	free(exact);
}

/* Spellings of real Triton code (vLLM, Triton's own libraries, kernels of other projects):
 * each text defines one kernel, which the scan must name. */
static void py_spelling_cases(void)
{
	static const struct {
		const char *what, *text, *kernel;
	} spelled[] = {
		{ "alias", "import triton as tr\nimport triton.language as tl\n\n@tr.jit\n"
			   "def k_alias(x, N: tl.constexpr):\n    pass\n", "k_alias" },
		{ "runtime_jit", "from triton.runtime.jit import jit\n@jit\ndef k_rt(x):\n  pass\n",
		  "k_rt" },
		{ "import_in_brackets", "from triton import (\n    autotune,\n    jit,\n)\n\n@jit\n"
					"def k_paren(x):\n    pass\n", "k_paren" },
		{ "import_as", "from triton import jit as tjit\n@tjit\ndef k_as(x):\n  pass\n",
		  "k_as" },
		{ "call_form", "import triton\n\ndef _impl(x_ptr, n):\n    pass\n\n"
			       "impl = triton.jit(_impl)\n", "_impl" },
		{ "call_form_args", "import triton\ndef _impl2(x):\n  pass\n"
				    "k = triton.jit(_impl2, do_not_specialize=[\"x\"])\n", "_impl2" },
		{ "space_after_at", "import triton\n@ triton.jit\ndef k_space(x):\n  pass\n",
		  "k_space" },
		{ "autotune_alone", "import triton\n@triton.autotune(\n    configs=[],\n    "
				    "key=[\"n\"],\n)\ndef k_auto(x, n):\n  pass\n", "k_auto" },
		{ "heuristics_lines", "import triton\n@triton.heuristics(\n    {\"EVEN\": lambda a: "
				      "a[\"n\"] % 2 == 0}\n)\n# a note\n@triton.jit(\n    "
				      "do_not_specialize=[\"n\"],\n)\ndef k_heur(x, n):\n  pass\n",
		  "k_heur" },
		{ "vllm_utils", "from vllm.triton_utils import tl, triton\n\n\n@triton.jit\n"
				"def k_vllm(x, B: tl.constexpr):\n    pass\n", "k_vllm" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(spelled); i++) {
		struct pvg_strv k = { 0 };
		pvg_triton_py_kernels(spelled[i].text, strlen(spelled[i].text), &k);
		ok(k.n == 1 && pvg_strv_has(&k, spelled[i].kernel), "py_kernels_spelled_%s (%zu%s%s)",
		   spelled[i].what, k.n, k.n ? ": " : "", k.n ? k.v[0] : "");
		pvg_strv_clear(&k);
	}
	/* jit of other libraries, and look-alike names, are no Triton kernel */
	static const char *const not_triton[] = {
		"import numba\n@numba.jit\ndef n1(x):\n  pass\n",
		"from numba import jit\n@jit\ndef n2(x):\n  pass\n",
		"import jax\n@jax.jit\ndef n3(x):\n  pass\n",
		"import torch\n@torch.jit.script\ndef n4(x):\n  pass\n",
		"import triton as tr\n@tr.jitter\ndef n5(x):\n  pass\n",
		"import triton\nf = numba.jit(g)\nh = triton.jit(self.kernel)\n",
		"from triton import jit\nimport numba as triton2\n@triton2.jit\ndef n6(x):\n  pass\n",
	};
	for (size_t i = 0; i < ARRAY_SIZE(not_triton); i++) {
		struct pvg_strv k = { 0 };
		pvg_triton_py_kernels(not_triton[i], strlen(not_triton[i]), &k);
		ok(k.n == 0, "py_kernels_not_triton_%zu (%zu%s%s)", i, k.n, k.n ? ": " : "",
		   k.n ? k.v[0] : "");
		pvg_strv_clear(&k);
	}
	/* a file that imports triton and defines no kernel the scan knows (tl helpers called
	 * from elsewhere, a kernel spelled some other way) is told apart from one that has
	 * nothing of triton */
	static const struct {
		const char *text;
		bool imports;
	} imports[] = {
		{ "import triton.language as tl\n\ndef helper(x):\n    return tl.abs(x)\n", true },
		{ "import torch, triton\n", true },
		{ "from vllm.triton_utils import tl\n", true },
		{ "from triton.language.extra import libdevice\n", true },
		{ "import tritonclient.grpc as g\nfrom numba import jit\n", false },
		{ "# import triton\nx = 'import triton'\n", false },
	};
	for (size_t i = 0; i < ARRAY_SIZE(imports); i++) {
		struct pvg_strv k = { 0 };
		bool imp = !imports[i].imports;
		size_t n = pvg_triton_py_scan(imports[i].text, strlen(imports[i].text), &k, &imp);
		ok(n == 0 && imp == imports[i].imports, "py_scan_imports_triton_%zu (%d)", i, imp);
		pvg_strv_clear(&k);
	}
}

static void index_cases(void)
{
	char tmpl[] = "/tmp/pvg-triton-XXXXXX";
	if (!mkdtemp(tmpl)) {
		ok(false, "mkdtemp");
		return;
	}
	char cmd[8192];
	snprintf(cmd, sizeof(cmd), "sh %s/tests/fixtures/triton-cache/make.sh cache %s /opt/svc/add_kernel.py",
		 src_dir(), tmpl);
	ok(system(cmd) == 0, "make_sh_writes_cache");
	int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct pvg_triton_where w = { .root_fd = root };
	struct pvg_triton_index idx = { 0 };
	const char *trees[] = { "good", "old-arch", "hip", "truncated", "mismatch", "link-out", "huge",
				"variants", "twins" };
	for (size_t i = 0; i < ARRAY_SIZE(trees); i++) {
		snprintf(cmd, sizeof(cmd), "%s/%s", tmpl, trees[i]);
		pvg_triton_index_add(&idx, &w, cmd, "test");
	}
	uint8_t sm90[32], sm80[32], gfx[32];
	sha_of("add_kernel.sm_90.cubin", sm90);
	sha_of("add_kernel.sm_80.cubin", sm80);
	sha_of("add_kernel.gfx90a.hsaco", gfx);
	const struct pvg_triton_entry *e = pvg_triton_index_find(&idx, sm90);
	ok(e && e->meta_ok && strcmp(e->meta.arch, "sm_90") == 0 && e->src_path &&
		   strcmp(e->src_path, "/opt/svc/add_kernel.py") == 0 && e->src_line == 7,
	   "index_finds_sm90_entry_with_source");
	e = pvg_triton_index_find(&idx, gfx);
	ok(e && e->meta_ok && strcmp(e->meta.arch, "gfx90a") == 0, "index_finds_hip_entry");
	size_t n80 = 0, bad_meta = 0, in_link = 0;
	for (size_t i = 0; i < idx.n; i++) {
		n80 += memcmp(idx.v[i].sha256, sm80, 32) == 0;
		bad_meta += !idx.v[i].meta_ok;
		in_link += strstr(idx.v[i].folder, "link-out") != NULL;
	}
	/* old-arch (arch 80) and mismatch (arch 90 naming the sm_80 bytes) */
	ok(n80 == 2, "index_old_arch_and_mismatch_entries (%zu)", n80);
	ok(bad_meta == 2, "index_truncated_and_huge_json_not_taken (%zu)", bad_meta);
	ok(in_link == 0, "index_never_follows_link_out_of_cache");
	/* scale_kernel's variants: one name, three keys, three cubins, each with its options */
	const char *vbin[] = { "scale_kernel.b128.sm_90.cubin", "scale_kernel.b256.sm_90.cubin",
			       "scale_kernel.b256r32.sm_90.cubin" };
	const long vwarps[] = { 4, 8, 8 }, vnreg[] = { 0, 0, 32 };
	const char *vkey[3] = { 0 };
	for (int v = 0; v < 3; v++) {
		uint8_t sha[32];
		sha_of(vbin[v], sha);
		const struct pvg_triton_entry *x = NULL;
		for (e = pvg_triton_index_find(&idx, sha); e; e = pvg_triton_index_next(&idx, sha, e))
			if (strstr(e->folder, "/variants"))
				x = e;
		vkey[v] = x ? x->key : NULL;
		ok(x && x->meta_ok && strcmp(x->meta.name, "scale_kernel") == 0 &&
			   x->meta.num_warps == vwarps[v] && x->meta.maxnreg == vnreg[v] &&
			   x->src_line == 16,
		   "index_variant_%d_with_its_options", v);
	}
	ok(vkey[0] && vkey[1] && vkey[2] && strcmp(vkey[0], vkey[1]) != 0 &&
		   strcmp(vkey[1], vkey[2]) != 0 && strcmp(vkey[0], vkey[2]) != 0,
	   "index_variants_have_their_own_keys");
	/* entries two levels down (vLLM's per-rank triton_cache folders): a folder that is
	 * no entry is read again from its start */
	const struct pvg_triton_folder *tw = &idx.folders[idx.n_folders - 1];
	ok(strstr(tw->path, "/twins") && tw->entries == 2,
	   "index_walks_folders_below_the_first_level (%zu)", tw->entries);
	/* the b128 bytes: its variant entry and the entry kept in two per-rank folders, each
	 * found (the first alone would hide the others) */
	uint8_t b128[32];
	sha_of("scale_kernel.b128.sm_90.cubin", b128);
	size_t same = 0, twins = 0;
	for (e = pvg_triton_index_find(&idx, b128); e; e = pvg_triton_index_next(&idx, b128, e)) {
		same++;
		twins += strstr(e->folder, "/twins") != NULL;
	}
	ok(same == 3 && twins == 2, "index_next_finds_every_entry_of_the_bytes (%zu, %zu)", same,
	   twins);
	pvg_triton_index_clear(&idx);
	close(root);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpl);
	if (system(cmd) != 0)
		printf("#   cannot remove %s\n", tmpl);
}

int main(void)
{
	RUN(meta_cases);
	RUN(loc_cases);
	RUN(py_cases);
	RUN(py_spelling_cases);
	RUN(index_cases);
	TAP_EXIT();
}
