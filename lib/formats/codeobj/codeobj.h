/* SPDX-License-Identifier: MIT */
/*
 * Device code objects inside host binaries: HIP offload bundles (plain and CCOB-compressed),
 * AMDGPU code objects, CUDA fatbins and cubins. The parsers read from a byte source (memory,
 * or a file through pread) and check every length against what remains; the file is never
 * read whole, only the headers and notes they need.
 */
#pragma once

#include <pthread.h>

#include "util/util.h"

/* ---- byte source ------------------------------------------------------------------------ */

struct pvg_src {
	const uint8_t *mem; /* memory source, or NULL for the fd */
	int fd;
	uint64_t size;
};

/* 0, or -ENODATA when [off, off+n) is not inside the source, -EIO on a short read. */
int pvg_src_read(const struct pvg_src *s, uint64_t off, void *buf, size_t n);

/* Limits that keep hostile input from costing memory or time. */
#define PVG_CO_MAX_UNCOMPRESSED (512ull << 20) /* one decompressed bundle or entry */
#define PVG_CO_MAX_COMPRESSED (512ull << 20)
#define PVG_CO_MAX_BUNDLE_ENTRIES 4096u
#define PVG_CO_MAX_ID_LEN 4096u
#define PVG_CO_MAX_NOTE_BYTES (64u << 20)
#define PVG_CO_MAX_OBJECTS 65536u
#define PVG_CO_MAX_KERNELS 65536u
#define PVG_CO_MAX_ISSUES 64u
/* What all the decoders of one scan may write in total: 32 times the file's size, or 1 GiB
 * when that is more. Real code objects compress 4 to 12 times (zstd -3 to -19 on Debian's
 * librocsparse and librocrand); a stream of RLE blocks claims 32768 times its size, so a
 * file of many such entries, each under PVG_CO_MAX_UNCOMPRESSED, would otherwise cost
 * hours. Past it, the entries left are not decompressed and their identity is not known. */
#define PVG_CO_DECODE_RATIO 32u
#define PVG_CO_DECODE_FLOOR (1ull << 30)

/* A CCOB header (ccob.c). */
struct pvg_ccob {
	unsigned version;   /* 1, 2, 3 */
	unsigned method;    /* enum pvg_ccob_method */
	uint64_t header_size;
	uint64_t total_size;  /* whole CCOB incl. header; 0 for version 1 (not recorded) */
	uint64_t uncompressed_size;
	uint64_t hash;      /* low 64 bits of the MD5 of the uncompressed bundle */
};

/* ---- results ----------------------------------------------------------------------------- */

enum pvg_co_kind {
	PVG_CO_HOST = 0,  /* the host entry of a bundle */
	PVG_CO_AMDGPU,    /* AMDGPU ELF code object */
	PVG_CO_CUBIN,     /* CUDA ELF (EM_CUDA) */
	PVG_CO_PTX,       /* CUDA PTX text */
	PVG_CO_OTHER,     /* an entry kind this version does not decode */
};

/* xnack / sramecc setting of a code object or of a requested target. */
enum pvg_feature {
	PVG_FEAT_ANY = 0,   /* unspecified: runs with the feature on or off */
	PVG_FEAT_OFF,
	PVG_FEAT_ON,
	PVG_FEAT_UNSUPPORTED, /* the processor does not have it (e_flags V4+) */
};

struct pvg_kernel {
	char *name;
	char *symbol; /* AMDGPU: the kernel descriptor symbol ("name.kd"); NULL otherwise */
	int wavefront_size; /* 0 unknown */
};

struct pvg_code_object {
	char *section;      /* host section (".hip_fatbin"), or "(file)" */
	unsigned bundle;    /* container index within the section */
	unsigned entry;     /* entry index within the container */
	char container[32]; /* "bundle", "ccob-v3-zstd", "fatbin" */
	char *id;           /* bundle entry id; CUDA: "elf sm_90", "ptx compute_90" */
	char *arch;         /* target id as the runtime matches it ("gfx90a:xnack-", "sm_90",
			     * "compute_90"); NULL for the host entry */
	enum pvg_co_kind kind;
	uint64_t offset;    /* file offset of the payload, or of its compressed container */
	uint64_t size;      /* payload size (uncompressed) */
	uint64_t container_offset, container_size; /* the bundle / CCOB / fatbin in the file */
	bool compressed;    /* came out of a compressed container / entry */

	/* AMDGPU */
	int co_version;     /* code object version (2..6), 0 unknown */
	uint8_t osabi, abi_version;
	uint32_t e_flags;
	unsigned mach;      /* EF_AMDGPU_MACH (AMDGPU) or SM number (cubin) */
	const char *mach_name; /* processor the e_flags value names; NULL: not in the public table */
	enum pvg_feature xnack, sramecc;
	char *note_target;  /* amdhsa.target from NT_AMDGPU_METADATA */
	char *id_target;    /* target id taken from the bundle entry id */

	bool kernels_known; /* false: compressed and not decoded, or no metadata */
	bool not_decoded;   /* compressed: only its header was decoded (names not asked for) */
	bool names_dropped; /* kernels counted in n_kernels, names not kept (kernels NULL) */
	char *kernels_why;  /* why kernels_known is false */
	struct pvg_kernel *kernels;
	size_t n_kernels;

	/* CCOB: was the whole bundle decompressed and its MD5 checked? Only the part of the
	 * stream that the entries asked for is decompressed (see pvg_hip_decode_deferred). */
	enum pvg_co_checksum {
		PVG_CSUM_NONE = 0,   /* not a CCOB entry */
		PVG_CSUM_VERIFIED,   /* the whole bundle decompressed, its hash matches */
		PVG_CSUM_UNCHECKED,  /* not all of it decompressed: the hash was not checked */
		PVG_CSUM_FAILED,     /* the stream or its hash is bad (an issue says which) */
	} checksum;
	uint64_t ccob_decoded, ccob_bundle_size; /* CCOB: bytes of its bundle decompressed, of
						  * how many */

	/* Identity: the sha256 of the image as the driver or loader receives it (the ELF, after
	 * decompression where the container compresses it). Computed for the objects of the
	 * scan's digest_arch (pvg_codeobj_opts), or of every loadable object with all_digests. */
	bool digest_known;
	uint8_t sha256[32];
	uint64_t digest_size; /* bytes hashed: size, or the length of a PTX text */
	char *error;        /* the object is malformed: what is wrong */
	char *mismatch;     /* bundle id, note and e_flags disagree: how */
};

struct pvg_co_issue {
	char *where;   /* ".hip_fatbin bundle 3" */
	char *message; /* "entry 2 ends at 0x... past the end of the bundle (0x...)" */
};

struct pvg_co_section {
	char *name;
	uint64_t offset, size;
	unsigned n_containers;
};

/* What a scan keeps: kernel names cost memory (Debian's librocsparse has 88 000 kernels
 * across its 777 code objects), so by default only counts are kept. */
struct pvg_codeobj_opts {
	bool kernel_names;        /* keep every object's kernel names */
	const char *names_arch;   /* or only those of objects matching this arch */
	const char *digest_arch;  /* sha256 of the objects matching this arch (code identity) */
	bool all_digests;         /* sha256 of every loadable object */
};

/* A compressed CUDA entry whose decoding waits for the end of the walk, when every one is
 * decoded in parallel (pvg_cuda_decode_deferred): the object's index and where its bytes are. */
struct pvg_co_deferred {
	size_t obj;
	uint64_t payload, clen, usize;
	bool lz4;
};

/* A CCOB (version 2 or 3) whose bundle header the walk read from a prefix of its stream:
 * the objects of its entries, and how much of the stream their decoding needs. */
struct pvg_ccob_deferred {
	struct pvg_ccob h;
	uint64_t off;           /* the CCOB in the file */
	size_t first_obj, n_objs;
	uint64_t *ent;          /* per object: offset and size in the bundle (2 values) */
	uint64_t want;          /* bytes of the bundle to decompress: uncompressed_size, or
				 * the furthest end of an entry the options ask for */
	char *where;            /* "SECTION bundle N (CCOB)", for an issue */
	char *err;              /* the decoder's complaint, recorded after the join */
};

struct pvg_codeobj_set {
	char *path;
	struct pvg_codeobj_opts opts;
	char *names_arch;
	bool elf;          /* the input is an ELF file */
	struct pvg_co_section *sections;
	size_t n_sections;
	struct pvg_code_object *objs;
	size_t n_objs;
	struct pvg_co_issue *issues;
	size_t n_issues;
	bool issues_truncated;
	bool objs_truncated;
	struct pvg_co_deferred *deferred;
	size_t n_deferred;
	struct pvg_ccob_deferred *ccobs;
	size_t n_ccobs;
	char *digest_arch;           /* the options' digest_arch, owned */
	size_t *by_digest;           /* the objects with a digest, in the order of their sha256 */
	size_t n_by_digest;
	uint64_t decode_left;        /* bytes the decoders may still write (atomic) */
	uint64_t decode_limit;       /* ... of how many */
	unsigned n_over_budget;      /* compressed entries / CCOBs left compressed for it (atomic) */
	char *incomplete;            /* why code objects may be missing from the set (a walk
				      * stopped without a damaged container to blame), or NULL */
	unsigned n_wrappers;         /* .hipFatBinSegment / .nvFatBinSegment records */
	unsigned n_wrappers_located; /* whose pointer names a container that was found */
};

struct pvg_codeobj_set *pvg_codeobj_set_new(const char *path, const struct pvg_codeobj_opts *opts);
/* Takes n bytes of the scan's decode budget (decode_left): true, or false (nothing taken, and
 * n_over_budget counted) when fewer are left. Thread-safe. */
bool pvg_co_decode_take(struct pvg_codeobj_set *set, uint64_t n);
/* Why an object was not decompressed for the budget (kernels_why), for the caller to free. */
char *pvg_co_over_budget_why(const struct pvg_codeobj_set *set);
/* Called once an object is complete: drops kernel names the options do not ask for. */
void pvg_co_finish(struct pvg_codeobj_set *set, struct pvg_code_object *co);
/* Do the options ask for co's kernel names (every object's, or those of names_arch)? A
 * compressed entry is decompressed whole only then; otherwise its headers are enough. */
bool pvg_co_names_wanted(const struct pvg_codeobj_set *set, const struct pvg_code_object *co);
void pvg_codeobj_set_free(struct pvg_codeobj_set *set);
void pvg_codeobj_set_freep(void *p); /* for pvg_ctx_set_slot */
void pvg_co_issue(struct pvg_codeobj_set *set, const char *where, const char *fmt, ...)
	PVG_PRINTF(3, 4);
/* Appends a zeroed object (NULL past PVG_CO_MAX_OBJECTS, with an issue recorded). */
struct pvg_code_object *pvg_co_add(struct pvg_codeobj_set *set, const char *section,
				   unsigned bundle, unsigned entry);
/* n bytes of p (which need not be NUL-terminated) as a string; aborts on OOM. */
char *pvg_co_strndup(const void *p, size_t n);
void pvg_co_set_error(struct pvg_code_object *co, const char *fmt, ...) PVG_PRINTF(2, 3);
void pvg_co_add_kernel(struct pvg_code_object *co, const char *name, size_t name_len,
		       const char *symbol, size_t symbol_len, int wavefront_size);

/* ---- digest.c: code identity ---------------------------------------------------------------- */

/* Device code the runtime can load: an AMDGPU code object, a cubin or PTX, not held in
 * __nv_relfatbin (relocatable code, which only a device link makes loadable). */
bool pvg_co_loadable(const struct pvg_code_object *co);
/* Do the options ask for co's sha256? Loadable, not malformed, and all_digests, or of
 * digest_arch: a code object pvg_codeobj_matches_arch accepts, or (sm_NN) PTX the driver
 * could compile for it (compute_MM, MM <= NN). */
bool pvg_co_digest_wanted(const struct pvg_codeobj_set *set, const struct pvg_code_object *co);
/* The same question, malformed or not: would the options ask for co's sha256 if it could be
 * taken? An object whose ELF could not be read is judged by its bundle id's target, which is
 * what the runtime picks it by. Who lists identities counts these as not known. */
bool pvg_co_identity_expected(const struct pvg_codeobj_set *set,
			      const struct pvg_code_object *co);
/* Sets co's sha256 from its image in memory (a decoder's buffer; PTX: up to its NUL). */
void pvg_co_digest_mem(struct pvg_code_object *co, const uint8_t *p, size_t n);
/* Hashes the wanted objects that lie uncompressed in src ([offset, offset+size)), with pread
 * in chunks, on a thread per CPU; an object whose bytes cannot be read gets an error. */
void pvg_co_digest_plain(struct pvg_codeobj_set *set, const struct pvg_src *src);
/* Builds set->by_digest once every digest is known (the scan's last step). */
void pvg_co_index_digests(struct pvg_codeobj_set *set);
/* Is sha256 the identity of one of set's code objects (digest_known)? *which (when not NULL):
 * the first such object in the file, or NULL. Any kind: a PTX entry's digest is of its text,
 * which no cubin module has. NULL set: false. O(log n). */
bool pvg_codeobj_has_digest(const struct pvg_codeobj_set *set, const uint8_t sha256[32],
			    const struct pvg_code_object **which);

/* ---- elf-sections.c: the host file --------------------------------------------------------- */

/* Scans an open file (pread; libelf reads the section headers only). 0 with *out filled
 * (problems inside are issues / object errors), or -errno when the file cannot be read. */
int pvg_codeobj_scan_fd(int fd, const char *path, const struct pvg_codeobj_opts *opts,
			struct pvg_codeobj_set **out);
int pvg_codeobj_scan_path(const char *path, const struct pvg_codeobj_opts *opts,
			  struct pvg_codeobj_set **out);
/* The same on bytes in memory (tests, fuzzing). */
int pvg_codeobj_scan_mem(const uint8_t *data, size_t size, const char *name,
			 const struct pvg_codeobj_opts *opts, struct pvg_codeobj_set **out);

/* ---- offload-bundle.c ------------------------------------------------------------------------ */

#define PVG_BUNDLE_MAGIC "__CLANG_OFFLOAD_BUNDLE__"
#define PVG_BUNDLE_MAGIC_LEN 24

struct pvg_bundle_entry {
	uint64_t offset; /* from the bundle's start */
	uint64_t size;
	char *id;
};

struct pvg_bundle {
	uint64_t n_entries;
	struct pvg_bundle_entry *entries;
	uint64_t header_size;
	uint64_t end; /* the furthest byte any entry or the header reaches, from the start */
};

/* Parses the bundle header at off; every entry must lie within [off, off+limit).
 * 0, or -EBADMSG with *err saying what is wrong. */
int pvg_bundle_parse(const struct pvg_src *src, uint64_t off, uint64_t limit,
		     struct pvg_bundle *b, char **err);
void pvg_bundle_clear(struct pvg_bundle *b);
/* Walks every bundle (plain or CCOB) in [off, off+size) of src; adds their entries. Of a
 * CCOB of version 2 or 3 only a prefix of the stream is decompressed here, its bundle
 * header; the rest waits for pvg_hip_decode_deferred. */
void pvg_hip_scan_section(struct pvg_codeobj_set *set, const struct pvg_src *src,
			  const char *section, uint64_t off, uint64_t size);
/* Decompresses the CCOBs the walks deferred, in parallel on the usable CPUs (at most
 * PVG_CO_DECODE_BUDGET bytes of buffers at a time, or one bundle when it alone is more):
 * each up to the furthest end of the entries pvg_co_names_wanted asks for, or whole (and
 * hash-checked) when that is the end of the bundle; nothing of one whose entries are not
 * asked for. Every entry inside the decompressed part is read; the others keep the arch of
 * their bundle id, kernels unknown (not_decoded). Issues are recorded in the bundles' order
 * once all are done. */
void pvg_hip_decode_deferred(struct pvg_codeobj_set *set, const struct pvg_src *src);
/* The part of an offload target string that names the target id ("gfx90a:xnack-"):
 * from the first '-'-separated component that starts with "gfx" or "sm_". NULL if none. */
const char *pvg_target_id_of(const char *triple_or_id);
/* The processor a GPU runs, "gfxNNN", from KFD's gfx_target_version (major * 10000 + minor *
 * 100 + stepping: 90306 -> "gfx936", 90010 -> "gfx90a", 100300 -> "gfx1030") or from
 * HSA_OVERRIDE_GFX_VERSION's "MAJOR.MINOR.STEPPING" ("9.3.6"). 0, or -EINVAL (0, a minor
 * or stepping over 15, text that is not three numbers). */
int pvg_gfx_name_of_version(unsigned long v, char *out, size_t size);
int pvg_gfx_name_of_override(const char *s, char *out, size_t size);

/* ---- ccob.c ----------------------------------------------------------------------------------- */

#define PVG_CCOB_MAGIC "CCOB"

enum pvg_ccob_method { PVG_CCOB_ZLIB = 0, PVG_CCOB_ZSTD = 1 };


/* Parses a CCOB header from n bytes at p. 0, or -EBADMSG / -ENOTSUP with *err. */
int pvg_ccob_parse_header(const uint8_t *p, size_t n, struct pvg_ccob *h, char **err);
/* Decompresses data (the bytes after the header; for version 1 possibly more than the
 * stream) into exactly h->uncompressed_size bytes, refusing more, and checks the hash.
 * *consumed tells how many input bytes the stream used. 0, or negative with *err. */
int pvg_ccob_decompress(const struct pvg_ccob *h, const uint8_t *data, size_t n, uint8_t **out,
			size_t *consumed, char **err);
/* The streaming form: decompresses the stream at [in_off, in_off+in_len) of src (read in
 * 64 KiB pieces, or in place from memory) into out until it holds want bytes. want below
 * h->uncompressed_size: only that prefix of the bundle is decoded, and neither the stream's
 * end nor the hash is checked (they cannot be without the rest). want of the whole bundle:
 * the checks of pvg_ccob_decompress. 0, or negative with *err. */
int pvg_ccob_inflate(const struct pvg_ccob *h, const struct pvg_src *src, uint64_t in_off,
		     uint64_t in_len, uint8_t *out, size_t want, size_t *consumed, char **err);
const char *pvg_ccob_method_name(unsigned method);
uint64_t pvg_md5_low64(const uint8_t *p, size_t n);

/* ---- amdgpu.c --------------------------------------------------------------------------------- */

#define PVG_EM_AMDGPU 224
#define PVG_EM_CUDA 190

/* Name of an EF_AMDGPU_MACH value, NULL when not in the public table. */
const char *pvg_amdgpu_mach_name(unsigned mach);
/* Reads the AMDGPU code object at [off, off+size) of src into co (e_flags, note, kernels);
 * problems go to co->error. */
void pvg_amdgpu_parse(const struct pvg_src *src, uint64_t off, uint64_t size,
		      struct pvg_code_object *co);
/* Parses NT_AMDGPU_METADATA msgpack: target and kernels. 0, or -EBADMSG with *err. */
int pvg_amdgpu_metadata_parse(const uint8_t *p, size_t n, struct pvg_code_object *co,
			      char **err);
/* Fills co->mismatch when the bundle id, the metadata note and a known e_flags value
 * disagree on processor or features. */
void pvg_amdgpu_check_consistency(struct pvg_code_object *co);

/* A parsed target id: "gfx90a:sramecc+:xnack-". */
struct pvg_target {
	char processor[48];
	enum pvg_feature xnack, sramecc;
	bool other_features; /* a feature other than xnack/sramecc was named */
};
int pvg_target_parse(const char *s, struct pvg_target *t);
void pvg_target_format(const struct pvg_target *t, char *out, size_t size);
/* Would the HIP runtime, asked for `want`, load a code object built for `have`?
 * Same processor; a feature the code object leaves unspecified fits either setting,
 * a feature it fixes must be the one asked for (when one is asked for). */
bool pvg_target_accepts(const struct pvg_target *want, const struct pvg_target *have);
/* The one target-id rule, on strings, for build-log compile lines, code objects and init:
 * does a code object (or an --offload-arch value) for `have` serve `want` (an arch, a GPU)?
 * Processor equal; per feature, unspecified in either is "any" (a gfx90a build serves
 * gfx90a:xnack-; gfx90a:xnack+ does not). False when either is not a target id. */
bool pvg_target_compatible(const char *want, const char *have);
/* Why arch (a config's GPU target id) is refused, as text the caller frees: empty, a virtual
 * PTX architecture, a target not in the table of known ones (with the closest known name),
 * a feature other than xnack+/- or sramecc+/-. NULL when it is valid. */
char *pvg_target_id_problem(const char *arch);
bool pvg_arch_valid(const char *arch);
/* An NVIDIA target (sm_NN). */
bool pvg_arch_is_cuda(const char *arch);

/* ---- cuda-fatbin.c ---------------------------------------------------------------------------- */

#define PVG_FATBIN_MAGIC 0xBA55ED50u
#define PVG_FATBIN_WRAPPER_MAGIC 0x466243b1u
#define PVG_HIPF_MAGIC 0x48495046u /* "FPIH" in the file: the HIP fat binary wrapper */

/* Walks every fatbin container in [off, off+size) of src and adds its entries. */
void pvg_cuda_scan_section(struct pvg_codeobj_set *set, const struct pvg_src *src,
			   const char *section, uint64_t off, uint64_t size);
/* Reads a cubin (EM_CUDA ELF) at [off, off+size): SM from e_flags by ABI version, kernels
 * from the symbol table (STO_CUDA_ENTRY functions). Problems go to co->error. */
void pvg_cubin_parse(const struct pvg_src *src, uint64_t off, uint64_t size,
		     struct pvg_code_object *co);
/* Decodes the compressed entries the walk deferred, in parallel on the usable CPUs (at most
 * PVG_CO_DECODE_BUDGET bytes of buffers at a time, or one entry when it alone is more): each
 * one's ELF header (arch, e_flags) from the first bytes of its stream, and the whole entry
 * (kernels, and that it decodes to its declared size) where pvg_co_names_wanted says so. */
#define PVG_CO_DECODE_BUDGET (128ull << 20)
void pvg_cuda_decode_deferred(struct pvg_codeobj_set *set, const struct pvg_src *src);
/* The decoders' memory bound, shared by their workers. */
struct pvg_co_budget {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint64_t in_use;
};
void pvg_co_budget_init(struct pvg_co_budget *b);
void pvg_co_budget_destroy(struct pvg_co_budget *b);
/* Waits until n more bytes fit in PVG_CO_DECODE_BUDGET (or nothing else is held). */
void pvg_co_budget_take(struct pvg_co_budget *b, uint64_t n);
void pvg_co_budget_give(struct pvg_co_budget *b, uint64_t n);
/* Runs fn(&pool) on one thread per usable CPU, at most max_threads of them (and at least
 * one), until it returns on each: the decoders' pools, whose workers take items in turn. */
void pvg_co_run_workers(void (*fn)(void *), void *pool, size_t max_threads);
/* Kernel names from PTX text (".entry NAME"). */
void pvg_ptx_kernels(const char *text, size_t n, struct pvg_code_object *co);

/* ---- matching (arch and kernel questions asked of a set) ------------------------------------ */

/* Does code object co carry device code for arch ("gfx936", "gfx90a:xnack-", "sm_90")? */
bool pvg_codeobj_matches_arch(const struct pvg_code_object *co, const char *arch);
/* Is a kernel named `want` in co? Exact name or symbol, or an Itanium-mangled name whose
 * identifier is `want` ("_Z8wvSplitKPf" has "wvSplitK"). */
bool pvg_codeobj_has_kernel(const struct pvg_code_object *co, const char *want);
const char *pvg_co_kind_name(enum pvg_co_kind k);
/* CCOB bundles of the set decompressed only in part (their checksum not verified): a
 * bundle's entries share one checksum, so each bundle counts once. */
size_t pvg_codeobj_unchecked_bundles(const struct pvg_codeobj_set *set);
cJSON *pvg_codeobj_json(const struct pvg_code_object *co, bool with_kernels);
/* The host sections that held device code: name, offset, size, containers. */
cJSON *pvg_codeobj_sections_json(const struct pvg_codeobj_set *set);
