/* SPDX-License-Identifier: MIT */
/*
 * The start of provgate in a relocatable bundle (linked only into the bundle's program,
 * ROOT/libexec/provgate/provgate). launcher.c started it with the working directory set to
 * the bundle's library folder (where the kernel finds the program's loader, named
 * relatively in PT_INTERP) and the caller's working directory open as PROVGATE_BUNDLE_CWD.
 * Before anything reads a path: back to the caller's directory, the variable gone (nothing
 * provgate starts sees it), own files under ROOT.
 */
#include <link.h>
#include <limits.h>

#include "cmd/cli.h"
#include "util/own-files.h"

struct foreign_object {
	const char *libdir;
	size_t len;
	char *first; /* the first loaded object from outside libdir */
};

static int find_foreign(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	struct foreign_object *f = data;
	const char *name = info->dlpi_name;
	/* the program itself and the vDSO have no name here */
	if (!name || !name[0] || strncmp(name, "linux-vdso", 10) == 0)
		return 0;
	if (strncmp(name, f->libdir, f->len) == 0 && name[f->len] == '/')
		return 0;
	/* the loader, under the name PT_INTERP gives it: the kernel opened it in libdir */
	if (strcmp(name, "ld-linux-x86-64.so.2") == 0)
		return 0;
	f->first = pvg_strdup(name);
	return 1;
}

int cli_bundle_start(void)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0) {
		fprintf(stderr, "provgate: cannot read /proc/self/exe (%s): the bundle needs /proc\n",
			n < 0 ? strerror(errno) : "empty");
		return EXIT_INTERNAL;
	}
	exe[n] = '\0';
	/* ROOT/libexec/provgate/provgate */
	char *root = exe;
	for (int up = 0; up < 3; up++) {
		char *slash = strrchr(root, '/');
		if (!slash || slash == root) {
			fprintf(stderr, "provgate: %s is not ROOT/libexec/provgate/provgate of a bundle\n", exe);
			return EXIT_INTERNAL;
		}
		*slash = '\0';
	}
	const char *cwd = getenv("PROVGATE_BUNDLE_CWD");
	char *end = NULL;
	long fd = cwd ? strtol(cwd, &end, 10) : -1;
	if (!cwd || !*cwd || *end || fd < 0 || fd > INT_MAX) {
		fprintf(stderr, "provgate: this is the bundle's program itself; start %s/bin/provgate\n",
			root);
		return EXIT_INTERNAL;
	}
	if (fchdir((int)fd) < 0) {
		fprintf(stderr, "provgate: cannot return to the working directory: %s\n", strerror(errno));
		return EXIT_INTERNAL;
	}
	close((int)fd);
	unsetenv("PROVGATE_BUNDLE_CWD");
	/* A library missing from the bundle is found on the host, if the host has it: a mix
	 * that is not the bundle that was tested. Refuse it before anything runs. */
	_cleanup_free_ char *libdir = pvg_asprintf("%s/libexec/provgate/lib", root);
	struct foreign_object f = { libdir, strlen(libdir), NULL };
	dl_iterate_phdr(find_foreign, &f);
	if (f.first) {
		fprintf(stderr, "provgate: the bundle at %s is not whole: %s was loaded from the host "
			"instead of %s\n", root, f.first, libdir);
		free(f.first);
		return EXIT_INTERNAL;
	}
	pvg_own_files_set_root(root);
	return 0;
}

/* --version: what runs, from where, and the bundle's manifest (written by bundle.sh) */
void cli_bundle_version(FILE *f)
{
	const char *root = pvg_own_files_root();
	fprintf(f, "running from the bundle at %s\n", root);
	_cleanup_free_ char *manifest = NULL;
	size_t len = 0;
	_cleanup_free_ char *path = pvg_asprintf("%s/share/provgate/BUNDLE", root);
	int r = pvg_read_file(path, 64 * 1024, &manifest, &len);
	if (r < 0) {
		fprintf(f, "  (its manifest %s cannot be read: %s)\n", path, strerror(-r));
		return;
	}
	for (char *line = manifest, *nl; line < manifest + len; line = nl + 1) {
		nl = memchr(line, '\n', (size_t)(manifest + len - line));
		if (!nl)
			nl = manifest + len;
		fprintf(f, "  %.*s\n", (int)(nl - line), line);
	}
}
