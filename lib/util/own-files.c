/* SPDX-License-Identifier: MIT */
/* Where provgate's own files are; see own-files.h. */
#include "util/own-files.h"
#include "util/util.h"
#include "pvg-version.h"

static char *bundle_root;

/* the names handed out, kept until exit: callers keep them as long as they like */
static char *kept[8];
static unsigned n_kept;

static const char *keep(char *s)
{
	if (n_kept < ARRAY_SIZE(kept))
		kept[n_kept++] = s;
	return s; /* past the table (never, for the few names provgate asks for): leaked */
}

void pvg_own_files_set_root(const char *root)
{
	free(bundle_root);
	bundle_root = root ? pvg_strdup(root) : NULL;
}

const char *pvg_own_files_root(void)
{
	return bundle_root;
}

const char *pvg_own_data_file(const char *name)
{
	const char *dir = PVG_DATADIR "/provgate";
	if (bundle_root)
		return keep(name ? pvg_asprintf("%s/share/provgate/%s", bundle_root, name)
				 : pvg_asprintf("%s/share/provgate", bundle_root));
	return name ? keep(pvg_asprintf("%s/%s", dir, name)) : dir;
}

const char *pvg_own_witness_library(void)
{
	if (bundle_root)
		return keep(pvg_asprintf("%s/lib/provgate/libprovgate-witness.so", bundle_root));
	return PVG_WITNESS_LIB;
}
