/* SPDX-License-Identifier: MIT */
/*
 * The dispatch witness file: what libprovgate-witness.so, loaded into a GPU process, writes
 * about the kernels that process launched, and the bounded parser provgate reads it with.
 * Defined once here for both sides; this header and witness.c depend on nothing but libc so
 * the injection library can compile them without the rest of libprovgate.
 *
 * Layout (little-endian, every field naturally aligned):
 *   struct pvg_witness_header              header_size bytes (>= sizeof, for later versions)
 *   struct pvg_witness_record[n_records]   record_size bytes each
 *   struct pvg_witness_module[n_modules]   module_size bytes each (version 3; none before)
 *   string area                            strings_size bytes; names are not NUL-terminated
 * checksum: FNV-1a 64 over the whole file with the checksum field read as zero. The writer
 * replaces the file by rename, so a reader sees an old file or a new one, never a mix; the
 * checksum and the exact size catch anything else (a copy cut short, a disk full).
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PVG_WITNESS_MAGIC "PVGWITN1"
/* 2: the header grew (answered, the graph replay counters); a reader takes version 1 too,
 * with those fields 0.
 * 3: code identity: a table of the code modules the process loaded (each with the sha256 of
 * the bytes the driver or loader received), and each record names its module. A reader takes
 * versions 1 and 2 too: no modules, every record's module unknown ("linked by name only"). */
#define PVG_WITNESS_VERSION 3u
#define PVG_WITNESS_V1_HEADER_SIZE 288u
#define PVG_WITNESS_V2_HEADER_SIZE 336u
#define PVG_WITNESS_V2_RECORD_SIZE 80u
#define PVG_WITNESS_SUFFIX ".pvgw"
/* environment of the service: the folder to write to */
#define PVG_WITNESS_DIR_ENV "PROVGATE_WITNESS_DIR"
/* A request to write now: a file of this name plus 16 hex digits (the requester's token,
 * CLOCK_BOOTTIME nanoseconds when it asked) made in the witness folder. Each writer answers
 * by writing its file with header.answered set to the largest token it has seen. */
#define PVG_WITNESS_REQUEST_PREFIX ".pvgw-request-"

/* Bounds the writer keeps and the reader enforces. */
#define PVG_WITNESS_MAX_RECORDS 4096u       /* distinct kernel x grid x block entries */
#define PVG_WITNESS_MAX_NAME 4096u          /* bytes of one name (longer: cut, flagged) */
#define PVG_WITNESS_MAX_STRINGS (4u << 20)  /* bytes of the string area */
#define PVG_WITNESS_MAX_MODULES 16384u      /* code modules loaded (more: counted, dropped) */
#define PVG_WITNESS_MAX_FILE (8u << 20)

enum pvg_witness_api {
	PVG_WITNESS_API_NONE = 0, /* loaded, but no GPU runtime called it (yet) */
	PVG_WITNESS_API_CUDA = 1, /* CUPTI callbacks */
	PVG_WITNESS_API_HSA = 2,  /* ROCr HSA_TOOLS_LIB queue interception */
};

/* header flags */
#define PVG_WITNESS_F_FINAL 0x1u      /* written at exit: the process is gone or going */
#define PVG_WITNESS_F_RECORDING 0x2u  /* the launch hooks are installed */
#define PVG_WITNESS_F_TABLE_FULL 0x4u /* launches were seen that no record could hold */
#define PVG_WITNESS_F_GRAPH_TABLE_FULL 0x8u /* a graph exec or its kernels found no room:
					       * its replays are counted as opaque */
#define PVG_WITNESS_F_MODULES 0x10u   /* version 3: module loads are being recorded; without it
				       * (an API that cannot say) every record's module is unknown */
#define PVG_WITNESS_F_MODULE_TABLE_FULL 0x20u /* modules were loaded that no record could hold */

/* what made a record */
enum pvg_witness_via {
	PVG_WITNESS_VIA_DRIVER = 1,      /* cuLaunchKernel, cuLaunchKernelEx, cuLaunchCooperativeKernel */
	PVG_WITNESS_VIA_RUNTIME = 2,     /* cudaLaunchKernel* with no driver launch inside it */
	PVG_WITNESS_VIA_HSA_PACKET = 3,  /* an AQL kernel-dispatch packet */
	PVG_WITNESS_VIA_GRAPH = 4,       /* a kernel node of a CUDA graph exec, run by cuGraphLaunch:
					  * count = replays x the exec's nodes with this key */
};
/* why graph execs were opaque (graph_opaque_why) */
#define PVG_WITNESS_OPAQUE_UNREAD 0x1u   /* its nodes could not be read (a query failed) */
#define PVG_WITNESS_OPAQUE_UPDATE 0x2u   /* an update could not be followed */
#define PVG_WITNESS_OPAQUE_CHANGED 0x4u  /* CUPTI said a node changed outside the calls followed */
#define PVG_WITNESS_OPAQUE_FULL 0x8u     /* no room in the exec or kernel tables */
#define PVG_WITNESS_OPAQUE_UNKNOWN 0x10u /* launched, but never seen instantiated */

/* eager: launched one by one (every via but GRAPH); graph: inside a graph replay */
#define PVG_WITNESS_VIA_IS_GRAPH(v) ((v) == PVG_WITNESS_VIA_GRAPH)

/* record flags */
#define PVG_WITNESS_R_NAME_CUT 0x1u     /* the name was longer than PVG_WITNESS_MAX_NAME */
#define PVG_WITNESS_R_NO_NAME 0x2u      /* the API gave no name (HSA: kernel object unknown) */
#define PVG_WITNESS_R_COUNT_SATURATED 0x4u

struct pvg_witness_header {
	char magic[8];
	uint32_t version;
	uint32_t header_size;
	uint32_t record_size;
	uint32_t n_records;
	uint32_t strings_size;
	uint32_t api;   /* enum pvg_witness_api */
	uint32_t flags; /* PVG_WITNESS_F_* */
	int32_t pid;    /* first NSpid entry: the pid in the outermost namespace the writer sees */
	int32_t nspid;  /* last NSpid entry: the pid in the process's own namespace (getpid) */
	uint32_t nspid_levels; /* entries in NSpid (1: not in a child pid namespace) */
	uint64_t start_ticks;  /* /proc/self/stat field 22: clock ticks since boot */
	uint64_t init_ns;      /* CLOCK_REALTIME when the library started recording */
	uint64_t written_ns;   /* CLOCK_REALTIME of this write */
	uint64_t launches;     /* every launch seen, recorded or not */
	uint64_t launches_dropped; /* launches of entries that found no free record */
	uint64_t graph_launches;   /* cuGraphLaunch / cudaGraphLaunch calls that ran (not captured) */
	uint64_t nested_driver;    /* runtime launches whose driver launch was seen inside them */
	uint64_t captured;         /* launches into a stream being captured into a graph: not run */
	uint64_t checksum;
	char boot_id[40];      /* /proc/sys/kernel/random/boot_id, NUL-terminated */
	char note[128];        /* how it records ("cuda: libcupti.so.13") or why not */
	/* version 2 */
	uint64_t answered;     /* the largest request token this writer had seen when it took the
				* table for this write (0: none); see PVG_WITNESS_REQUEST_PREFIX */
	uint64_t graph_replays_itemized; /* graph launches whose kernels are in the VIA_GRAPH records */
	uint64_t graph_replays_opaque;   /* graph launches of an exec whose kernels are not known
					  * (not read, unreadable, an update not followed) */
	uint64_t graph_replays_partial;  /* of the itemized, launches of an exec with kernels that
					  * may run but are not counted (conditional bodies, a
					  * device-launchable exec, nesting too deep) */
	uint64_t graph_kernel_launches;  /* the sum of the VIA_GRAPH records' counts */
	uint32_t graph_execs;            /* graph execs whose kernels were read */
	uint32_t graph_opaque_why;       /* PVG_WITNESS_OPAQUE_*: why execs became opaque */
	/* version 3 */
	uint32_t n_modules;              /* module records after the launch records */
	uint32_t module_size;            /* bytes of one module record (>= sizeof) */
	uint64_t modules_loaded;         /* every module load seen, recorded or not */
	uint64_t modules_dropped;        /* loads that found no free module record */
	uint64_t reserved[4];
};

struct pvg_witness_record {
	uint32_t name_off, name_len;           /* mangled name */
	uint32_t demangled_off, demangled_len; /* 0 length: not demangled (or not C++) */
	uint32_t module_off, module_len;       /* shared object or code object, when known */
	uint32_t grid[3];  /* blocks (CUDA gridDim) or workgroups (HSA: ceil(grid / workgroup)) */
	uint32_t block[3]; /* threads per block / work-items per workgroup */
	uint32_t via;      /* enum pvg_witness_via */
	uint32_t flags;    /* PVG_WITNESS_R_* */
	uint64_t count;    /* saturates at UINT64_MAX */
	uint64_t first_ns, last_ns; /* CLOCK_REALTIME of the first and last launch */
	/* version 3 */
	uint32_t module;   /* 1 + index of the launched code's module record; 0: not known */
	uint32_t bind;     /* enum pvg_witness_bind: how the module was learnt */
};

/* How a launch record's module was learnt (record.bind). */
enum pvg_witness_bind {
	PVG_WITNESS_BIND_NONE = 0,    /* not known: module is 0 (why: the record's flags) */
	PVG_WITNESS_BIND_HANDLE = 1,  /* from the launched function's handle: the driver's
				       * function -> module query, or the HSA kernel object ->
				       * loaded code object table built at freeze */
	PVG_WITNESS_BIND_LOADED_IN_CALL = 2, /* the module was loaded inside this very launch
					      * call (lazy loading) on the same thread */
	PVG_WITNESS_BIND_ONLY_NAME = 3,  /* the one module loaded at the time that defines a
					  * kernel of this name */
	PVG_WITNESS_BIND_AMBIGUOUS = 4,  /* several loaded modules with different bytes define
					  * this name and nothing said which: module names one */
};

/* How a module came to the driver or loader (module.origin). */
enum pvg_witness_origin {
	PVG_WITNESS_ORIGIN_UNKNOWN = 0,
	PVG_WITNESS_ORIGIN_FILE = 1,    /* the image lies in a mapped file (path: that file;
					 * file_offset: where in it) or was loaded from one
					 * (cuModuleLoad, an HSA file:// code object) */
	PVG_WITNESS_ORIGIN_MEMORY = 2,  /* handed over from memory (cuModuleLoadData,
					 * cuLibraryLoadData, memory://): JIT code, Triton */
	PVG_WITNESS_ORIGIN_PTX_JIT = 3, /* compiled by the driver from PTX: the bytes hashed are
					 * the driver's output, found in no file */
	PVG_WITNESS_ORIGIN_EMBEDDED = 4,/* registered by a shared object's constructor (the CUDA
					 * runtime's fatbins, HIP's __hipRegisterFatBinary);
					 * path: that shared object when the loader can say */
};
/* Its word in reports, e.g. "ptx-jit"; "unknown" past the table. */
const char *pvg_witness_origin_name(uint32_t origin);

/* module flags */
#define PVG_WITNESS_M_NOT_HASHED 0x1u /* larger than the writer hashes, or unreadable */
#define PVG_WITNESS_M_PATH_CUT 0x2u   /* path longer than PVG_WITNESS_MAX_NAME */
#define PVG_WITNESS_M_COMPRESSED 0x4u /* the image handed over was compressed; sha256 is of the
				       * bytes after decompression */

/* One code module the process loaded: a CUDA module or library image (the cubin the driver
 * received), an HSA loaded code object. */
struct pvg_witness_module {
	uint8_t sha256[32];  /* of the image: size bytes (all zero with M_NOT_HASHED) */
	uint64_t size;
	uint64_t load_ns;    /* CLOCK_REALTIME of the load */
	uint64_t unload_ns;  /* of the unload; 0: still loaded when written */
	uint64_t handle;     /* CUmodule / CUlibrary / HSA loaded code object, 0 when unknown */
	uint64_t file_offset;/* ORIGIN_FILE / EMBEDDED: the image's offset in path's file */
	uint32_t api_id;     /* CUPTI's moduleId; HSA: the executable's index */
	uint32_t origin;     /* enum pvg_witness_origin */
	uint32_t flags;      /* PVG_WITNESS_M_* */
	uint32_t arch;       /* CUDA: SM number of the cubin (90); AMDGPU: EF_AMDGPU_MACH; 0 */
	uint32_t path_off, path_len; /* the file, or the HSA URI; 0 length: none */
	uint32_t names;      /* kernels the image defines (informational) */
	uint32_t unhashed;   /* with M_NOT_HASHED: why (enum pvg_witness_unhashed); else 0 */
};

/* Why a module has no digest (module.unhashed). A file of a writer that did not say has 0. */
enum pvg_witness_unhashed {
	PVG_WITNESS_UNHASHED_NOT_SAID = 0,
	PVG_WITNESS_UNHASHED_TOO_LARGE = 1,    /* larger than the writer hashes */
	PVG_WITNESS_UNHASHED_NO_IMAGE = 2,     /* the runtime gave no bytes for it */
	PVG_WITNESS_UNHASHED_QUERY_FAILED = 3, /* a query of the runtime about it failed (HSA:
						* the loader extension's get_info) */
	PVG_WITNESS_UNHASHED_UNREADABLE = 4,   /* its memory or file could not be read */
	PVG_WITNESS_UNHASHED_BAD_URI = 5,      /* HSA: a file code object's URI is not a valid
						* file:// URI (a range without size=, say) */
	PVG_WITNESS_UNHASHED_BAD_RANGE = 6,    /* HSA: the URI's range is empty or passes the
						* end of the file the loader holds */
	PVG_WITNESS_UNHASHED_NO_MEMORY = 7,    /* the writer ran out of memory */
	PVG_WITNESS_UNHASHED_STORAGE = 8,      /* HSA: a storage type neither memory nor file */
};
#define PVG_WITNESS_UNHASHED_N 9
/* A word for why, e.g. "bad-range"; "unknown" past the table. */
const char *pvg_witness_unhashed_name(uint32_t why);

/* ---- writing (the library) ------------------------------------------------------------------ */

/* FNV-1a 64, continued from h (start with PVG_FNV_INIT). */
#define PVG_FNV_INIT 0xcbf29ce484222325ull
uint64_t pvg_witness_fnv(uint64_t h, const void *p, size_t n);
/* Sets the size fields and the checksum of a complete image buf[0..len). 0, or -EINVAL when
 * len does not match the header's counts. */
int pvg_witness_seal(uint8_t *buf, size_t len);

/* ---- reading (provgate) ------------------------------------------------------------------------ */

struct pvg_witness_str {
	const char *p; /* into the file's bytes; not NUL-terminated */
	size_t n;
};

struct pvg_witness_entry {
	struct pvg_witness_str name, demangled, module;
	uint32_t grid[3], block[3];
	uint32_t via, flags;
	uint64_t count, first_ns, last_ns;
	uint32_t code;  /* 1 + index into the file's modules; 0: not known */
	uint32_t bind;  /* enum pvg_witness_bind */
};

struct pvg_witness_mod {
	uint8_t sha256[32];
	uint64_t size, load_ns, unload_ns, handle, file_offset;
	uint32_t api_id, origin, flags, arch, names;
	uint32_t unhashed; /* enum pvg_witness_unhashed */
	struct pvg_witness_str path;
};

struct pvg_witness_file {
	struct pvg_witness_header h; /* copied; boot_id and note NUL-terminated by the parser */
	struct pvg_witness_entry *entries; /* n entries, caller-provided (see pvg_witness_parse) */
	size_t n;
	struct pvg_witness_mod *modules;   /* n_modules, caller-provided; NULL: not wanted */
	size_t n_modules;
};

enum pvg_witness_error {
	PVG_WITNESS_OK = 0,
	PVG_WITNESS_E_SHORT,     /* fewer bytes than a header, or than the header's counts */
	PVG_WITNESS_E_MAGIC,     /* not a witness file */
	PVG_WITNESS_E_VERSION,   /* a later version */
	PVG_WITNESS_E_LAYOUT,    /* sizes or counts out of bounds */
	PVG_WITNESS_E_CHECKSUM,  /* bytes changed or torn */
	PVG_WITNESS_E_RECORD,    /* a record points outside the string area or is inconsistent */
	PVG_WITNESS_E_TRAILING,  /* bytes after the string area */
};

const char *pvg_witness_strerror(enum pvg_witness_error e);

/* Parses a whole file held in memory. entries must have room for PVG_WITNESS_MAX_RECORDS and
 * modules (when not NULL) for PVG_WITNESS_MAX_MODULES (the parser never allocates); names
 * point into buf, which must outlive *out. A record's module index past n_modules is an
 * E_RECORD error. Returns
 * PVG_WITNESS_OK or the first error found; *at is the byte offset of the problem. */
enum pvg_witness_error pvg_witness_parse(const uint8_t *buf, size_t len,
					 struct pvg_witness_file *out, size_t *at);

/* ---- attribution ------------------------------------------------------------------------------ */

#include <sys/types.h>

/* A live target process as provgate sees it. */
struct pvg_witness_target {
	pid_t pid;            /* in provgate's pid namespace */
	pid_t nspid;          /* in the process's own namespace (last NSpid entry) */
	uint64_t start_ticks; /* /proc/PID/stat field 22 */
};

enum pvg_witness_attr {
	PVG_WITNESS_LIVE,        /* written by a live target: same own-namespace pid, start, boot */
	PVG_WITNESS_OTHER_BOOT,  /* another boot id (or none) */
	PVG_WITNESS_PID_REUSED,  /* a target's pid, but a process that started at another time */
	PVG_WITNESS_FOREIGN_NS,  /* a target's pid number, but in another pid namespace */
	PVG_WITNESS_NOT_TARGET,  /* no target has this pid */
};
#define PVG_WITNESS_ATTR_N 5

/* Decides whose file h is. boot_id: this machine's. *which: the target's index when LIVE. */
enum pvg_witness_attr pvg_witness_attribute(const struct pvg_witness_header *h,
					    const char *boot_id,
					    const struct pvg_witness_target *targets, size_t n,
					    size_t *which);
const char *pvg_witness_attr_name(enum pvg_witness_attr a);
