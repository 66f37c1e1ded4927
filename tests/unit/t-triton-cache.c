/* SPDX-License-Identifier: MIT */
/*
 * Triton cache entries: the metadata, .source and .py parsers on the files
 * tests/fixtures/triton-cache/make.sh writes in Triton 3.6's layout, and the folder walk on
 * such a tree (a real sm_90 and sm_80 cubin, a real gfx90a code object) with its hostile
 * variants: a truncated json, a link out of the cache, a 5 MiB json; and an autotuned
 * kernel's variants (three real cubins of one name) and one entry in two folders.
 * Then the real caches Triton 3.6 wrote on an H200 (tests/fixtures/triton-cache/
 * h200-2026-12-05, its README says which key is which) with the witness files of the same
 * runs: each launched module's bytes find the entry of the kern.py that was installed, and
 * copies of the real entries with a wrong arch, a cut json and a changed cubin.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "formats/codeobj/codeobj.h"
#include "formats/triton-cache.h"
#include "formats/witness.h"
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

/* ---- the real caches recorded on an H200 (record-jit.sh) ---------------------------------- */

#define REAL "tests/fixtures/triton-cache/h200-2026-12-05"
#define KEY_V1 "ZDAJQLSDN67ZA6QSQQGBTVQE5E4T3C266W22M54QKIXUHCUNSWLQ"
#define KEY_V2 "AN7TXGJENUWZO3LZKVOBPCEH75PHZHL7ILK2Y5IOZ7KQ3EIRVMSA"
#define KEY_SM80 "PZGPUDVNR52VOJUU3SDXAMPQUOOGTSRZ2MJHEOZWTNRB2PPFE7OA"
#define KEY_IND "OSN6YIFOKUEOSNX3AM4POJXY3W7FCNTXVUWFRGKXPVN7ZCWU4MUQ"
#define KEY_IND2 "F5VC4XCPDNI6GGPHBKPYL53TZ2G3WKQEXRGDZGICBSDVATQP2YOQ"
#define IND_NAME "triton_red_fused__softmax_add_amax_mul_sub_0"
#define IND_PY "inductor-cache/ks/cks7jsfrzuqoe5pewmztlmqa4ou6yge6t73v2gnwlwohwraaht5p.py"
#define KERN_PY "/tmp/pvgjit/site/pvgjit/kern.py"

static char *real_path(const char *rel)
{
	return pvg_asprintf("%s/" REAL "/%s", src_dir(), rel);
}

static char *real_read(const char *rel, size_t *len)
{
	char *p = real_path(rel), *buf = NULL;
	size_t n = 0;
	if (pvg_read_file(p, 1u << 24, &buf, &n) < 0)
		buf = NULL;
	free(p);
	if (len)
		*len = n;
	return buf;
}

/* The 1-based line of the first line of a file of the fixture that starts with prefix; 0 if
 * none. prev: the line before it, copied (size 128). */
static unsigned long line_of(const char *rel, const char *prefix, char prev[128])
{
	size_t len = 0;
	char *t = real_read(rel, &len);
	unsigned long line = 0, at = 0;
	prev[0] = 0;
	for (const char *p = t; p && p < t + len && !at;) {
		const char *nl = memchr(p, '\n', (size_t)(t + len - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(t + len - p);
		line++;
		if (strncmp(p, prefix, strlen(prefix)) == 0)
			at = line;
		else
			snprintf(prev, 128, "%.*s", (int)(n < 127 ? n : 127), p);
		p += n + 1;
	}
	free(t);
	return at;
}

static void sha_of_real(const char *rel, uint8_t out[32])
{
	char *p = pvg_asprintf("h200-2026-12-05/%s", rel);
	sha_of(p, out);
	free(p);
}

/* Each real entry's json, .source and cubin, read with the parsers gate 7 uses. */
static void real_entry_cases(void)
{
	char prev[128];
	unsigned long def_v1 = line_of("kern-v1.py", "def pvg_jit_scale(", prev);
	ok(def_v1 && strcmp(prev, "@triton.jit") == 0, "real_kern_v1_def_below_decorator (%lu, %s)",
	   def_v1, prev);
	unsigned long def_v2 = line_of("kern-v2.py", "def pvg_jit_scale(", prev);
	ok(def_v2 == def_v1, "real_kern_v2_def_same_line (%lu)", def_v2);
	unsigned long def_ind = line_of(IND_PY, "def " IND_NAME "(", prev);
	ok(def_ind && strcmp(prev, "@triton.jit") == 0, "real_inductor_def_below_decorator (%lu)",
	   def_ind);
	static const struct {
		const char *key, *name, *arch, *src;
		long warps, stages;
		bool inductor;
	} want[] = {
		{ KEY_V1, "pvg_jit_scale", "sm_90", KERN_PY, 4, 3, false },
		{ KEY_V2, "pvg_jit_scale", "sm_90", KERN_PY, 4, 3, false },
		{ KEY_SM80, "pvg_jit_scale", "sm_80", KERN_PY, 4, 3, false },
		{ KEY_IND, IND_NAME, "sm_90", "/tmp/pvgjit/rec/" IND_PY, 16, 1, true },
		{ KEY_IND2, IND_NAME, "sm_90", "/tmp/pvgjit/rec/" IND_PY, 16, 1, true },
	};
	for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
		char *rel = pvg_asprintf("triton-cache/%s/%s.json", want[i].key, want[i].name);
		size_t len = 0;
		char *json = real_read(rel, &len), *why = NULL;
		struct pvg_triton_meta m = { 0 };
		int r = json ? pvg_triton_meta_parse(json, len, &m, &why) : -ENOENT;
		ok(r == 0 && strcmp(m.backend, "cuda") == 0 && strcmp(m.arch, want[i].arch) == 0 &&
			   strcmp(m.name, want[i].name) == 0 && strcmp(m.triton_version, "3.6.0") == 0 &&
			   m.warp_size == 32 && m.num_warps == want[i].warps &&
			   m.num_stages == want[i].stages && m.maxnreg == 0,
		   "real_meta_%.8s (%d %s: %s %s warps %ld stages %ld)", want[i].key, r,
		   why ? why : "", m.name, m.arch, m.num_warps, m.num_stages);
		free(why);
		free(json);
		free(rel);
		/* the .source: the file Triton was given and the line of the def */
		rel = pvg_asprintf("triton-cache/%s/%s.source", want[i].key, want[i].name);
		char *src = real_read(rel, &len), *path = NULL;
		unsigned long line = 0;
		r = src ? pvg_triton_first_loc(src, len, &path, &line) : -ENOENT;
		unsigned long def = want[i].inductor ? def_ind : def_v1;
		ok(r == 0 && path && strcmp(path, want[i].src) == 0 && line == def,
		   "real_source_%.8s (%d %s:%lu, the def at %lu)", want[i].key, r, path ? path : "-",
		   line, def);
		free(path);
		free(src);
		free(rel);
		/* the cubin is for the arch the json says, and defines the kernel: gate 6's reading
		 * of a code object */
		rel = pvg_asprintf("%s/" REAL "/triton-cache/%s/%s.cubin", src_dir(), want[i].key,
				   want[i].name);
		struct pvg_codeobj_set *set = NULL;
		size_t match = 0, other = 0, named = 0;
		struct pvg_codeobj_opts opts = { .kernel_names = true };
		if (pvg_codeobj_scan_path(rel, &opts, &set) == 0) {
			for (size_t k = 0; k < set->n_objs; k++) {
				const struct pvg_code_object *co = &set->objs[k];
				if (co->error)
					continue;
				match += pvg_codeobj_matches_arch(co, want[i].arch);
				other += pvg_codeobj_matches_arch(co, strcmp(want[i].arch, "sm_90") == 0
									? "sm_80"
									: "sm_90");
				named += pvg_codeobj_has_kernel(co, want[i].name);
			}
			pvg_codeobj_set_free(set);
		}
		ok(match == 1 && other == 0 && named == 1, "real_cubin_%.8s_is_%s (%zu %zu %zu)",
		   want[i].key, want[i].arch, match, other, named);
		free(rel);
	}
}

/* The module a witness file binds the launches of kernel to: 0, or -1. */
static int launched_module(const char *pvgw, const char *kernel, struct pvg_witness_mod *out,
			   struct pvg_witness_file *wf_out)
{
	size_t len = 0, at = 0;
	char *buf = real_read(pvgw, &len);
	struct pvg_witness_file wf = { 0 };
	wf.entries = pvg_xcalloc(PVG_WITNESS_MAX_RECORDS, sizeof(*wf.entries));
	wf.modules = pvg_xcalloc(PVG_WITNESS_MAX_MODULES, sizeof(*wf.modules));
	int r = -1;
	enum pvg_witness_error e = buf ? pvg_witness_parse((const uint8_t *)buf, len, &wf, &at)
				       : PVG_WITNESS_E_SHORT;
	ok(e == PVG_WITNESS_OK, "real_witness_parses_%s (%s at %zu)", pvgw, pvg_witness_strerror(e),
	   at);
	size_t hits = 0;
	for (size_t i = 0; e == PVG_WITNESS_OK && i < wf.n; i++) {
		const struct pvg_witness_entry *en = &wf.entries[i];
		if (en->name.n != strlen(kernel) || memcmp(en->name.p, kernel, en->name.n) != 0)
			continue;
		hits++;
		if (en->code == 0 || en->code > wf.n_modules)
			continue;
		*out = wf.modules[en->code - 1];
		out->path.p = NULL; /* into buf, freed below */
		r = 0;
	}
	ok(hits == 1 && r == 0, "real_witness_%s_binds_%s (%zu records)", pvgw, kernel, hits);
	if (wf_out)
		*wf_out = (struct pvg_witness_file){ .h = wf.h, .n = wf.n, .n_modules = wf.n_modules };
	free(wf.entries);
	free(wf.modules);
	free(buf);
	return r;
}

static bool has_key(const struct pvg_triton_index *idx, const uint8_t sha[32], const char *key)
{
	for (const struct pvg_triton_entry *e = pvg_triton_index_find(idx, sha); e;
	     e = pvg_triton_index_next(idx, sha, e))
		if (strcmp(e->key, key) == 0)
			return true;
	return false;
}

/* The witness's module of each launch of pvg_jit_scale finds, by its sha256, the entry of
 * the kern.py that was installed when it ran, and not the other one. */
static void real_witness_cases(void)
{
	int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct pvg_triton_where w = { .root_fd = root };
	struct pvg_triton_index idx = { 0 };
	char *dir = real_path("triton-cache");
	pvg_triton_index_add(&idx, &w, dir, "test");
	free(dir);
	/* five kernel entries; the launcher's and cuda_utils' folders hold no binary */
	ok(idx.n == 5 && idx.n_folders == 1 && idx.folders[0].err == 0,
	   "real_index_has_five_entries (%zu, folders %zu)", idx.n, idx.n_folders);
	static const struct {
		const char *pvgw, *key, *other;
		uint64_t size;
	} runs[] = {
		{ "1-triton.pvgw", KEY_V1, KEY_V2, 6416 },
		{ "3-triton-changed.pvgw", KEY_V2, KEY_V1, 6800 },
	};
	char prev[128];
	unsigned long def = line_of("kern-v1.py", "def pvg_jit_scale(", prev);
	for (size_t i = 0; i < ARRAY_SIZE(runs); i++) {
		struct pvg_witness_mod mod = { 0 };
		struct pvg_witness_file wf = { 0 };
		if (launched_module(runs[i].pvgw, "pvg_jit_scale", &mod, &wf) < 0)
			continue;
		ok(mod.origin == PVG_WITNESS_ORIGIN_MEMORY && mod.arch == 90 &&
			   mod.size == runs[i].size,
		   "real_module_from_memory_%s (origin %u arch %u size %" PRIu64 ")", runs[i].pvgw,
		   mod.origin, mod.arch, mod.size);
		const struct pvg_triton_entry *e = pvg_triton_index_find(&idx, mod.sha256);
		ok(e && strcmp(e->key, runs[i].key) == 0 && e->size == mod.size && e->meta_ok &&
			   strcmp(e->meta.name, "pvg_jit_scale") == 0 && e->src_path &&
			   strcmp(e->src_path, KERN_PY) == 0 && e->src_line == def,
		   "real_module_finds_its_entry_%s (%s)", runs[i].pvgw, e ? e->key : "none");
		ok(e && !pvg_triton_index_next(&idx, mod.sha256, e) &&
			   !has_key(&idx, mod.sha256, runs[i].other),
		   "real_module_not_the_other_version_%s", runs[i].pvgw);
		ok(e && pvg_triton_arch_runs("sm_90", &e->meta) && !pvg_triton_arch_runs("sm_80", &e->meta),
		   "real_entry_runs_on_sm_90_only_%s", runs[i].pvgw);
		/* the cubin on disk has the bytes the witness hashed */
		char *rel = pvg_asprintf("triton-cache/%s/pvg_jit_scale.cubin", runs[i].key);
		uint8_t sha[32];
		sha_of_real(rel, sha);
		ok(memcmp(sha, mod.sha256, 32) == 0, "real_cubin_sha256_is_module_%s", runs[i].pvgw);
		free(rel);
	}
	/* the AOT entry: indexed, for sm_80, refused on the H200 by gate 7's rule */
	uint8_t sha[32];
	sha_of_real("triton-cache/" KEY_SM80 "/pvg_jit_scale.cubin", sha);
	const struct pvg_triton_entry *e = pvg_triton_index_find(&idx, sha);
	ok(e && strcmp(e->key, KEY_SM80) == 0 && strcmp(e->meta.arch, "sm_80") == 0 &&
		   !pvg_triton_arch_runs("sm_90", &e->meta) && pvg_triton_arch_runs("sm_80", &e->meta),
	   "real_aot_sm80_entry_refused_on_sm_90 (%s)", e ? e->meta.arch : "none");
	/* Inductor's kernel: its two configs, one name, two keys */
	uint8_t a[32], b[32];
	sha_of_real("triton-cache/" KEY_IND "/" IND_NAME ".cubin", a);
	sha_of_real("triton-cache/" KEY_IND2 "/" IND_NAME ".cubin", b);
	const struct pvg_triton_entry *ea = pvg_triton_index_find(&idx, a),
				      *eb = pvg_triton_index_find(&idx, b);
	ok(ea && eb && ea != eb && strcmp(ea->key, KEY_IND) == 0 && strcmp(eb->key, KEY_IND2) == 0 &&
		   ea->meta_ok && strcmp(ea->meta.name, IND_NAME) == 0 && ea->meta.num_warps == 16 &&
		   pvg_triton_arch_runs("sm_90", &ea->meta) && ea->src_path &&
		   strstr(ea->src_path, "/inductor-cache/ks/"),
	   "real_inductor_entries (%s, %s)", ea ? ea->key : "none", eb ? eb->key : "none");
	/* torch.compile's runs: the witness recorded no module, as the README says */
	struct pvg_witness_file wf = { 0 };
	size_t len = 0, at = 0;
	char *buf = real_read("4a-compile.pvgw", &len);
	wf.entries = pvg_xcalloc(PVG_WITNESS_MAX_RECORDS, sizeof(*wf.entries));
	wf.modules = pvg_xcalloc(PVG_WITNESS_MAX_MODULES, sizeof(*wf.modules));
	enum pvg_witness_error we = buf ? pvg_witness_parse((const uint8_t *)buf, len, &wf, &at)
					: PVG_WITNESS_E_SHORT;
	ok(we == PVG_WITNESS_OK && wf.n == 0 && wf.n_modules == 0,
	   "real_compile_witness_empty (%s, %zu, %zu)", pvg_witness_strerror(we), wf.n,
	   wf.n_modules);
	free(wf.entries);
	free(wf.modules);
	free(buf);
	pvg_triton_index_clear(&idx);
	close(root);
}

static int write_all(const char *path, const char *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	size_t w = fwrite(p, 1, n, f);
	return fclose(f) == 0 && w == n ? 0 : -1;
}

/* Copies of the v1 entry changed at test time: the json's arch 80, the json cut short, one
 * byte of the cubin flipped. */
static void real_variant_cases(void)
{
	char tmpl[] = "/tmp/pvg-triton-real-XXXXXX";
	if (!mkdtemp(tmpl)) {
		ok(false, "mkdtemp");
		return;
	}
	const char *kinds[] = { "arch80", "truncated", "flipped" };
	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++) {
		char *cmd = pvg_asprintf("mkdir -p %s/%s && cp -r %s/" REAL "/triton-cache/" KEY_V1
					 " %s/%s/", tmpl, kinds[i], src_dir(), tmpl, kinds[i]);
		ok(system(cmd) == 0, "real_copy_%s", kinds[i]);
		free(cmd);
	}
	size_t len = 0;
	char *json = real_read("triton-cache/" KEY_V1 "/pvg_jit_scale.json", &len);
	char *at = json ? strstr(json, "\"arch\": 90") : NULL;
	ok(at != NULL, "real_json_has_arch_90");
	char *p;
	if (at) {
		at[8] = '8'; /* "arch": 80 */
		p = pvg_asprintf("%s/arch80/" KEY_V1 "/pvg_jit_scale.json", tmpl);
		ok(write_all(p, json, len) == 0, "real_write_arch80");
		free(p);
		at[8] = '9';
	}
	p = pvg_asprintf("%s/truncated/" KEY_V1 "/pvg_jit_scale.json", tmpl);
	ok(json && write_all(p, json, len / 2) == 0, "real_write_truncated");
	free(p);
	struct pvg_triton_meta m;
	char *why = NULL;
	ok(json && pvg_triton_meta_parse(json, len / 2, &m, &why) == -EBADMSG && why,
	   "real_truncated_json_refused (%s)", why ? why : "accepted");
	free(why);
	free(json);
	size_t blen = 0;
	char *bin = real_read("triton-cache/" KEY_V1 "/pvg_jit_scale.cubin", &blen);
	if (bin && blen) {
		bin[blen / 2] ^= 0x01;
		p = pvg_asprintf("%s/flipped/" KEY_V1 "/pvg_jit_scale.cubin", tmpl);
		ok(write_all(p, bin, blen) == 0, "real_write_flipped");
		free(p);
	}
	free(bin);
	uint8_t v1[32];
	sha_of_real("triton-cache/" KEY_V1 "/pvg_jit_scale.cubin", v1);
	int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct pvg_triton_where w = { .root_fd = root };
	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++) {
		struct pvg_triton_index idx = { 0 };
		p = pvg_asprintf("%s/%s", tmpl, kinds[i]);
		pvg_triton_index_add(&idx, &w, p, "test");
		free(p);
		const struct pvg_triton_entry *e = pvg_triton_index_find(&idx, v1);
		if (strcmp(kinds[i], "arch80") == 0)
			/* the bytes are the v1 module's, the json says sm_80: gate 7 refuses it on
			 * the H200 */
			ok(idx.n == 1 && e && e->meta_ok && strcmp(e->meta.arch, "sm_80") == 0 &&
				   !pvg_triton_arch_runs("sm_90", &e->meta),
			   "real_arch80_copy_refused_on_sm_90 (%s)", e ? e->meta.arch : "none");
		else if (strcmp(kinds[i], "truncated") == 0)
			ok(idx.n == 1 && e && !e->meta_ok && e->why,
			   "real_truncated_copy_unreadable (%s)", e && e->why ? e->why : "read");
		else
			ok(idx.n == 1 && !e && memcmp(idx.v[0].sha256, v1, 32) != 0 &&
				   idx.v[0].meta_ok,
			   "real_flipped_cubin_no_longer_the_module (%zu, %s)", idx.n,
			   e ? "found" : "not found");
		pvg_triton_index_clear(&idx);
	}
	close(root);
	p = pvg_asprintf("rm -rf %s", tmpl);
	if (system(p) != 0)
		printf("#   cannot remove %s\n", tmpl);
	free(p);
}

int main(void)
{
	RUN(meta_cases);
	RUN(loc_cases);
	RUN(py_cases);
	RUN(py_spelling_cases);
	RUN(index_cases);
	RUN(real_entry_cases);
	RUN(real_witness_cases);
	RUN(real_variant_cases);
	TAP_EXIT();
}
