/* SPDX-License-Identifier: MIT */
/*
 * ROOT/bin/provgate of the relocatable bundle: a static program (nothing of the host but the
 * kernel) that starts the bundle's provgate, ROOT/libexec/provgate/provgate, with the
 * bundle's own loader and libraries (ROOT/libexec/provgate/lib), wherever ROOT is.
 *
 * The program is exec'd itself, not through its loader as "ld.so PROGRAM": so its
 * /proc/PID/exe is provgate (gate 5 tells its own runs apart by that file), its comm is
 * "provgate" and its command line is the caller's argv, unchanged. Its PT_INTERP names the
 * loader relatively ("ld-linux-x86-64.so.2"), which the kernel opens from the working
 * directory: the launcher changes to the library folder for the exec and hands the caller's
 * working directory over open, as PROVGATE_BUNDLE_CWD=FD; the program returns to it before
 * it reads any path (cmd/dist/bundle.c). Its DT_RPATH, $ORIGIN/lib, finds the libraries.
 *
 * It refuses, with a message and exit status 3, before anything of provgate runs: on a
 * machine that is not x86-64 (a 32-bit personality; an ARM kernel cannot exec this file at
 * all), on a kernel older than PVG_MIN_KERNEL, without /proc, or when the bundle is not
 * whole.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

/* The bundle's glibc needs 3.2; provgate reads NSpid from /proc/PID/status (4.1) to match
 * pids across pid namespaces (containers). */
#define PVG_MIN_KERNEL_MAJOR 4
#define PVG_MIN_KERNEL_MINOR 1
#define EXIT_CANNOT_RUN 3

static int refuse(const char *fmt, const char *a, const char *b)
{
	fputs("provgate: ", stderr);
	fprintf(stderr, fmt, a, b);
	fputs("\n", stderr);
	return EXIT_CANNOT_RUN;
}

int main(int argc, char **argv)
{
	(void)argc;
	struct utsname u;
	if (uname(&u) < 0)
		return refuse("uname: %s%s", strerror(errno), "");
	if (strcmp(u.machine, "x86_64") != 0)
		return refuse("this bundle is for x86_64 Linux; this machine is %s (uname -m)%s",
			      u.machine, "");
	unsigned major = 0, minor = 0;
	if (sscanf(u.release, "%u.%u", &major, &minor) != 2)
		return refuse("cannot read the kernel's version from \"%s\"%s", u.release, "");
	if (major < PVG_MIN_KERNEL_MAJOR ||
	    (major == PVG_MIN_KERNEL_MAJOR && minor < PVG_MIN_KERNEL_MINOR)) {
		char need[32];
		snprintf(need, sizeof(need), "%d.%d", PVG_MIN_KERNEL_MAJOR, PVG_MIN_KERNEL_MINOR);
		return refuse("Linux %s is too old: this bundle needs Linux %s or newer", u.release, need);
	}

	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return refuse("cannot find the bundle: /proc/self/exe: %s%s",
			      n < 0 ? strerror(errno) : "empty", " (is /proc mounted?)");
	self[n] = '\0';
	/* ROOT/bin/provgate */
	for (int up = 0; up < 2; up++) {
		char *slash = strrchr(self, '/');
		if (!slash)
			return refuse("%s is not ROOT/bin/provgate of a bundle%s", self, "");
		*slash = '\0';
	}
	const char *root = self[0] ? self : "/";
	char prog[PATH_MAX], libdir[PATH_MAX], loader[PATH_MAX];
	if (snprintf(prog, sizeof(prog), "%s/libexec/provgate/provgate", root) >= (int)sizeof(prog) ||
	    snprintf(libdir, sizeof(libdir), "%s/libexec/provgate/lib", root) >= (int)sizeof(libdir) ||
	    snprintf(loader, sizeof(loader), "%s/ld-linux-x86-64.so.2", libdir) >= (int)sizeof(loader))
		return refuse("the bundle's path is too long: %s%s", root, "");
	if (access(prog, X_OK) < 0)
		return refuse("the bundle at %s is not whole: libexec/provgate/provgate: %s", root,
			      strerror(errno));
	if (access(loader, R_OK) < 0)
		return refuse("the bundle at %s is not whole: libexec/provgate/lib/ld-linux-x86-64.so.2: %s",
			      root, strerror(errno));

	/* the caller's working directory, for the program to return to (no O_CLOEXEC) */
	int cwd = open(".", O_PATH | O_DIRECTORY);
	if (cwd < 0)
		return refuse("cannot open the working directory: %s%s", strerror(errno), "");
	char fd[16];
	snprintf(fd, sizeof(fd), "%d", cwd);
	if (setenv("PROVGATE_BUNDLE_CWD", fd, 1) < 0 || chdir(libdir) < 0)
		return refuse("cannot enter %s: %s", libdir, strerror(errno));
	execv(prog, argv);
	int e = errno;
	if (fchdir(cwd) < 0) { /* only for the message's sake */ }
	return refuse("cannot start %s: %s", prog, strerror(e));
}
