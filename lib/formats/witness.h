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
 * with those fields 0 */
#define PVG_WITNESS_VERSION 2u
#define PVG_WITNESS_V1_HEADER_SIZE 288u
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
};

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
};

struct pvg_witness_file {
	struct pvg_witness_header h; /* copied; boot_id and note NUL-terminated by the parser */
	struct pvg_witness_entry *entries; /* n entries, caller-provided (see pvg_witness_parse) */
	size_t n;
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

/* Parses a whole file held in memory. entries must have room for PVG_WITNESS_MAX_RECORDS
 * (the parser never allocates); names point into buf, which must outlive *out. Returns
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
