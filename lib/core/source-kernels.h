/* SPDX-License-Identifier: MIT */
/*
 * The kernels of a changed device source, read from the objects a build log compiled from it:
 * its compile lines' -o outputs (a hipified .cu: its .hip copy's), found in the build folders
 * the log names, each read as a host object (HIP offload bundle, CUDA fatbin) for the kernels
 * of one arch. Gate 7's default requirement (checks/dispatch-sources.c) and init's proposal of
 * witness.changed_sources (discover.c) ask it.
 */
#pragma once
#include "formats/buildlog.h"
#include "util/util.h"

/* .cu and .hip: translation units with device code of their own */
bool pvg_is_device_source(const char *path);
/* .cuh (and .hiph): device headers, compiled only through the sources that include them */
bool pvg_is_device_header(const char *path);

/* An object the log compiled from the source. */
struct pvg_source_object {
	char *path;      /* as found (absolute), or as the log writes it when not found */
	size_t line;     /* the compile line */
	int err;         /* finding, opening or scanning it: 0 or -errno */
	char *why;       /* what is wrong with it, else NULL */
	size_t n_kernels;
};

struct pvg_source_kernels {
	struct pvg_strv kernels;   /* every kernel of arch, no duplicates */
	struct pvg_source_object *objs;
	size_t n_objs;
	bool device_code;          /* some object holds device code (for any arch) */
	struct pvg_strv linked_into; /* the outputs the log links its objects into (as written);
				      * empty: the log does not show it */
	int err;                   /* 0; -ENOENT: no compile line writes an object from it;
				    * -ENODATA: its objects hold no device code at all (a device
				    * compile leaves a bundle or fatbin even without kernels);
				    * else an object could not be read (why) */
	char *why;
};

/* Reads rel's (repo-relative) objects: roots are the log's build folders (absolute),
 * workdir the checkout; both are tried for relative object paths. */
void pvg_source_kernels_read(const struct pvg_buildlog *log, const struct pvg_linkgraph *g,
			     const struct pvg_strv *roots, const char *workdir, const char *rel,
			     const char *arch, struct pvg_source_kernels *out);
void pvg_source_kernels_clear(struct pvg_source_kernels *k);
