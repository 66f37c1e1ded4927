/* SPDX-License-Identifier: MIT */
/*
 * Where provgate's own files are (schemas, hooks, the witness library): under the prefix
 * meson was configured with, or, for a relocatable bundle, under the folder the bundle was
 * unpacked into (the command sets it at start; see cmd/dist/). Knows nothing of a run.
 */
#pragma once

/* The bundle's root folder, from now on the prefix of every own file; NULL: the configured
 * prefix. Copied. */
void pvg_own_files_set_root(const char *root);
/* The bundle's root, NULL when provgate is not running from a bundle. */
const char *pvg_own_files_root(void);
/* PREFIX/share/provgate/NAME (NULL: the folder itself); owned here, valid until exit. */
const char *pvg_own_data_file(const char *name);
/* PREFIX/LIBDIR/provgate/libprovgate-witness.so (in a bundle: ROOT/lib/provgate/...). */
const char *pvg_own_witness_library(void);
