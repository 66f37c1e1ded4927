/* SPDX-License-Identifier: MIT */
/*
 * lib/sys: resolves a Python module to its file by reading the interpreter's files, without
 * running the interpreter or importing anything (SPEC §11: a venv may belong to the service's
 * user, and python -I still runs a .pth file's import lines and a sitecustomize).
 */
#pragma once

#include "util/util.h"

struct pvg_python_opts {
	/* The service's PYTHONPATH, searched first as Python does; NULL: none. Relative entries
	 * are skipped (the service's working folder is not ours). */
	const char *pythonpath;
};

/* Resolves a dotted module name to its file for the interpreter `python` (a path, or a name
 * looked up in PATH), the way its sys.meta_path finders would in isolated mode (-I): the
 * search path is rebuilt from the interpreter's location, pyvenv.cfg, the site folders and
 * the path lines of their .pth files; setuptools' editable finders are read as data (their
 * MAPPING and NAMESPACES literals). Nothing is run: a .pth import line that is not a
 * recognised editable finder is named in the answer when the module is not found. opts may
 * be NULL. On success *path is the file; on failure why->text says what was searched.
 * Returns 0, -ENOENT (not found, not a package, no file, or not a dotted name), -ENOEXEC
 * (the interpreter or its installation cannot be read). */
int pvg_python_module_path(const char *python, const char *module,
			   const struct pvg_python_opts *opts, char **path, struct pvg_msg *why);

/* Who besides root can change what `python` runs or finds: the first of the interpreter (the
 * link and what it names), its folder, the venv and the site folders that is owned by
 * another user or writable by group or others. Returns 1 with *what (the path) and *owner set,
 * 0 when only root can, -errno when the layout cannot be read. */
int pvg_python_writable_by_others(const char *python, char **what, uid_t *owner);

/* ---- the data readers, exposed for tests ------------------------------------------------ */

/* pyvenv.cfg as site.py reads it: "key = value" lines, keys case-insensitive. */
struct pvg_pyvenv {
	char *home;         /* NULL when absent */
	bool system_site;   /* include-system-site-packages; site.py's default is true */
	char version[16];   /* "3.11" from version / version_info, or "" */
};
void pvg_pyvenv_parse(const char *text, struct pvg_pyvenv *out);
void pvg_pyvenv_clear(struct pvg_pyvenv *v);

/* One line of a .pth file (without its newline), as site.addpackage reads it. */
enum pvg_pth_line {
	PVG_PTH_SKIP,   /* a comment or blank */
	PVG_PTH_IMPORT, /* "import ..." (never run) */
	PVG_PTH_PATH,   /* a folder, *dir = sitedir joined and normalised */
};
enum pvg_pth_line pvg_pth_line(const char *sitedir, const char *line, char **dir);
/* The editable finder module that an import line installs ("import X; X.install()" with X a
 * setuptools __editable___*_finder), or NULL. */
char *pvg_pth_editable_finder(const char *line);

/* A setuptools editable finder module, read as data. */
struct pvg_editable_finder {
	enum { PVG_EF_PREFIX, PVG_EF_EXACT } style; /* setuptools' two find_spec versions */
	size_t n_mapping;
	char **mapping; /* name, path, name, path, ... in the literal's order */
	size_t n_namespaces;
	char **ns_names;
	struct pvg_strv *ns_paths;
	char *placeholder; /* the name of its path hook's sys.path entry */
};
/* 0, or -EINVAL when text is not a finder whose literals can be read. */
int pvg_editable_finder_parse(const char *text, struct pvg_editable_finder *out);
void pvg_editable_finder_clear(struct pvg_editable_finder *f);
/* A Python str literal at *p ('...' or "...", with escapes); advances *p. NULL when it is not
 * one. */
char *pvg_py_str_literal(const char **p);
/* posixpath.normpath of an absolute path. */
char *pvg_py_normpath(const char *path);
