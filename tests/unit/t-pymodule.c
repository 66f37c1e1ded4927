/* SPDX-License-Identifier: MIT */
/* lib/sys/pymodule.c's data readers: pyvenv.cfg, .pth lines, setuptools' editable finder
 * literals, and the module resolution over a fake installation built here (no Python runs). */
#include <fcntl.h>
#include <sys/stat.h>

#include "sys/pymodule.h"
#include "tap.h"

static void pyvenv_cfg_as_site_reads_it(void)
{
	struct pvg_pyvenv v;
	pvg_pyvenv_parse("home = /usr/bin\ninclude-system-site-packages = false\n"
			 "version = 3.11.2\nexecutable = /usr/bin/python3.11\n", &v);
	CHECK_STR(v.home, "/usr/bin");
	CHECK(!v.system_site);
	CHECK_STR(v.version, "3.11");
	pvg_pyvenv_clear(&v);
	/* uv writes version_info; keys are case-insensitive; the default is true */
	pvg_pyvenv_parse("HOME=/opt/py/bin\r\nversion_info = 3.12.4\nno equals sign\n", &v);
	CHECK_STR(v.home, "/opt/py/bin");
	CHECK(v.system_site);
	CHECK_STR(v.version, "3.12");
	pvg_pyvenv_clear(&v);
	pvg_pyvenv_parse("include-system-site-packages = TRUE\n", &v);
	CHECK(v.system_site);
	CHECK(v.home == NULL);
	CHECK_STR(v.version, "");
	pvg_pyvenv_clear(&v);
	/* getpath keeps the first home of the '\n' lines; site.py's text mode ends a line at a
	 * lone \r too; both strip what str.strip does (\x1c-\x1f, U+3000, ...) */
	pvg_pyvenv_parse("home = /a\rinclude-system-site-packages = false\nhome = /b\n", &v);
	CHECK_STR(v.home, "/a\rinclude-system-site-packages = false");
	CHECK(!v.system_site);
	pvg_pyvenv_clear(&v);
	pvg_pyvenv_parse("home =\x1c/opt/bin\xe3\x80\x80\n", &v);
	CHECK_STR(v.home, "/opt/bin");
	pvg_pyvenv_clear(&v);
}

static void pth_lines_are_paths_or_never_run_imports(void)
{
	char *d = NULL;
	CHECK_INT(pvg_pth_line("/s", "# a comment", &d), PVG_PTH_SKIP);
	CHECK_INT(pvg_pth_line("/s", "  \t ", &d), PVG_PTH_SKIP);
	CHECK_INT(pvg_pth_line("/s", "import os; os.system('id')", &d), PVG_PTH_IMPORT);
	CHECK(d == NULL);
	CHECK_INT(pvg_pth_line("/s", "import\tos", &d), PVG_PTH_IMPORT);
	/* " import" is not an import line for site.py: a (strange) relative path */
	CHECK_INT(pvg_pth_line("/s/site", " import x", &d), PVG_PTH_PATH);
	CHECK_STR(d, "/s/site/ import x");
	free(d);
	CHECK_INT(pvg_pth_line("/s/site", "../src  \r", &d), PVG_PTH_PATH);
	CHECK_STR(d, "/s/src");
	free(d);
	CHECK_INT(pvg_pth_line("/s/site", "/abs//x/./y/", &d), PVG_PTH_PATH);
	CHECK_STR(d, "/abs/x/y");
	free(d);
	CHECK_INT(pvg_pth_line("/s", "\x1e\xc2\xa0", &d), PVG_PTH_SKIP);
	CHECK_INT(pvg_pth_line("/s/site", "../src\x1f\xe2\x80\xa9", &d), PVG_PTH_PATH);
	CHECK_STR(d, "/s/src");
	free(d);
	char *f = pvg_pth_editable_finder(
		"import __editable___pvgedit_0_1_finder; __editable___pvgedit_0_1_finder.install()");
	CHECK_STR(f, "__editable___pvgedit_0_1_finder");
	free(f);
	/* anything more, or another module, is not setuptools' line */
	CHECK(pvg_pth_editable_finder("import __editable___a_finder; __editable___a_finder.install(); "
				      "import os") == NULL);
	CHECK(pvg_pth_editable_finder("import __editable___a_finder; __editable___b_finder.install()") == NULL);
	CHECK(pvg_pth_editable_finder("import _virtualenv") == NULL);
}

static void normpath_matches_posixpath(void)
{
	static const char *const cases[][2] = {
		{ "/a/b/../c", "/a/c" }, { "/../a", "/a" },   { "//a/b", "//a/b" },
		{ "///a//b/", "/a/b" },  { "/a/./b/.", "/a/b" }, { "/", "/" },
		{ "/a/..", "/" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char *n = pvg_py_normpath(cases[i][0]);
		CHECK_STR(n, cases[i][1]);
		free(n);
	}
}

static void str_literals_as_repr_writes_them(void)
{
	const char *p = "'a\\'b\\\\c\\x41\\u00e9\\udcff' rest";
	char *s = pvg_py_str_literal(&p);
	CHECK_STR(s, "a'b\\cA\xc3\xa9\xff");
	CHECK_STR(p, " rest");
	free(s);
	p = "\"it's\"";
	s = pvg_py_str_literal(&p);
	CHECK_STR(s, "it's");
	free(s);
	static const char *const bad[] = { "'open", "'\\q'", "'\\x0'", "'a\\x00b'", "noquote",
					   "'two\nlines'" };
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		p = bad[i];
		CHECK(pvg_py_str_literal(&p) == NULL);
	}
}

static const char finder_old[] =
	"import sys\n"
	"MAPPING = {'pvgedit': '/tmp/proj/code_dir', 'other.sub': \"/x/y\"}\n"
	"NAMESPACES = {'ns': ['/n1', '/n2'], 'empty': []}\n"
	"PATH_PLACEHOLDER = '__editable__.pvgedit-0.1.finder' + \".__path_hook__\"\n"
	"class _EditableFinder:  # MetaPathFinder\n"
	"        for pkg, pkg_path in reversed(list(MAPPING.items())):\n";

static const char finder_new[] =
	"MAPPING: dict[str, str] = {'a': '/src/a'}\n"
	"NAMESPACES: dict[str, list[str]] = {}\n"
	"PATH_PLACEHOLDER = '__editable__.a-1.finder' + \".__path_hook__\"\n"
	"class _EditableFinder:  # MetaPathFinder\n"
	"        if fullname in MAPPING:\n"
	"        if parent and parent in MAPPING:\n";

static void editable_finder_literals_are_read_as_data(void)
{
	struct pvg_editable_finder f;
	CHECK_INT(pvg_editable_finder_parse(finder_old, &f), 0);
	CHECK_INT(f.style, PVG_EF_PREFIX);
	CHECK_INT(f.n_mapping, 2);
	if (f.n_mapping == 2) {
		CHECK_STR(f.mapping[0], "pvgedit");
		CHECK_STR(f.mapping[1], "/tmp/proj/code_dir");
		CHECK_STR(f.mapping[3], "/x/y");
	}
	CHECK_INT(f.n_namespaces, 2);
	if (f.n_namespaces == 2) {
		CHECK_STR(f.ns_names[0], "ns");
		CHECK_INT(f.ns_paths[0].n, 2);
		CHECK_STR(f.ns_paths[0].v[1], "/n2");
		CHECK_INT(f.ns_paths[1].n, 0);
	}
	CHECK_STR(f.placeholder, "__editable__.pvgedit-0.1.finder.__path_hook__");
	pvg_editable_finder_clear(&f);

	CHECK_INT(pvg_editable_finder_parse(finder_new, &f), 0);
	CHECK_INT(f.style, PVG_EF_EXACT);
	CHECK_INT(f.n_mapping, 1);
	pvg_editable_finder_clear(&f);

	/* a value that is code, not a literal, and a finder of unknown shape: refused */
	static const char *const bad[] = {
		"class _EditableFinder:\nreversed(list(MAPPING.items()))\nMAPPING = {'a': __import__('os').getcwd()}\n",
		"class _EditableFinder:\nreversed(list(MAPPING.items()))\nMAPPING = {'a': '/x'\n",
		"class _EditableFinder:\nreversed(list(MAPPING.items()))\nMAPPING = {'a': '/x'}\nNAMESPACES = {'n': '/x'}\n",
		"class Other:\nMAPPING = {}\n",
		"class _EditableFinder:\n    def find_spec(): return custom()\nMAPPING = {}\nNAMESPACES = {}\n",
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		CHECK_INT(pvg_editable_finder_parse(bad[i], &f), -EINVAL);
}

/* ---- a fake installation: PREFIX/bin/python3.11 (a file, never run) and its stdlib ---- */

static void put(const char *path, const char *text)
{
	char *dir = pvg_strdup(path);
	for (char *s = dir + 1; (s = strchr(s, '/')); s++) {
		*s = '\0';
		mkdir(dir, 0755);
		*s = '/';
	}
	free(dir);
	FILE *f = fopen(path, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static void resolution_reads_a_fake_installation(void)
{
	char tmpl[] = "/tmp/pvg-pymodule-XXXXXX";
	char *root = mkdtemp(tmpl);
	CHECK(root != NULL);
	if (!root)
		return;
	char *p;
#define AT(rel) (free(p), p = pvg_asprintf("%s/%s", root, rel))
	p = NULL;
	/* an interpreter that exits with a marker if anyone ever runs it */
	put(AT("base/bin/python3.11"), "#!/bin/sh\ntouch \"$0.ran\"\n");
	chmod(p, 0755);
	put(AT("base/lib/python3.11/os.py"), "");
	put(AT("base/lib/python3.11/site.py"), "# upstream: site-packages\n");
	put(AT("base/lib/python3.11/lib-dynload/_ssl.cpython-311-x86_64-linux-gnu.so"), "");
	put(AT("base/lib/python3.11/json/__init__.py"), "");
	put(AT("base/lib/python3.11/site-packages/sysmod.py"), "");
	/* a venv without system site-packages, with a .pth path line and an editable finder */
	char *cfg = pvg_asprintf("home = %s/base/bin\ninclude-system-site-packages = false\n"
				 "version = 3.11.9\n", root);
	put(AT("venv/pyvenv.cfg"), cfg);
	free(cfg);
	put(AT("venv/bin/python3"), "#!/bin/sh\ntouch \"$0.ran\"\n");
	chmod(p, 0755);
	const char *sp = "venv/lib/python3.11/site-packages";
	char *t = pvg_asprintf("%s/%s/pkg/ops/_C.abi3.so", root, sp);
	put(t, "");
	free(t);
	t = pvg_asprintf("%s/%s/pkg/ops/_C.so", root, sp); /* .abi3.so comes first */
	put(t, "");
	free(t);
	t = pvg_asprintf("%s/%s/pkg/__init__.py", root, sp);
	put(t, "");
	free(t);
	t = pvg_asprintf("%s/%s/pkg/ops/__init__.py", root, sp);
	put(t, "");
	free(t);
	t = pvg_asprintf("%s/%s/a.pth", root, sp);
	char *line = pvg_asprintf("import os; os.system('touch %s/pth.ran')\n../../../../extra\n", root);
	put(t, line);
	free(line);
	free(t);
	put(AT("extra/viapth/_e.cpython-311-x86_64-linux-gnu.so"), "");
	put(AT("edit/src/edpkg/__init__.py"), "");
	put(AT("edit/src/edpkg/_k.abi3.so"), "");
	t = pvg_asprintf("%s/%s/__editable__.edpkg-1.pth", root, sp);
	put(t, "import __editable___edpkg_1_finder; __editable___edpkg_1_finder.install()\n");
	free(t);
	t = pvg_asprintf("%s/%s/__editable___edpkg_1_finder.py", root, sp);
	char *finder = pvg_asprintf(
		"MAPPING = {'edpkg': '%s/edit/src/edpkg'}\nNAMESPACES = {}\n"
		"PATH_PLACEHOLDER = '__editable__.edpkg-1.finder' + \".__path_hook__\"\n"
		"class _EditableFinder:\n    reversed(list(MAPPING.items()))\n", root);
	put(t, finder);
	free(finder);
	free(t);

	char *py = pvg_asprintf("%s/venv/bin/python3", root);
	char *got = NULL;
	struct pvg_msg why = { 0 };
	CHECK_INT(pvg_python_module_path(py, "pkg.ops._C", NULL, &got, &why), 0);
	t = pvg_asprintf("%s/%s/pkg/ops/_C.abi3.so", root, sp);
	CHECK_STR(got, t);
	free(t);
	free(got);
	CHECK_INT(pvg_python_module_path(py, "viapth._e", NULL, &got, &why), 0);
	t = pvg_asprintf("%s/extra/viapth/_e.cpython-311-x86_64-linux-gnu.so", root);
	CHECK_STR(got, t);
	free(t);
	free(got);
	CHECK_INT(pvg_python_module_path(py, "edpkg._k", NULL, &got, &why), 0);
	t = pvg_asprintf("%s/edit/src/edpkg/_k.abi3.so", root);
	CHECK_STR(got, t);
	free(t);
	free(got);
	CHECK_INT(pvg_python_module_path(py, "json", NULL, &got, &why), 0);
	t = pvg_asprintf("%s/base/lib/python3.11/json/__init__.py", root);
	CHECK_STR(got, t);
	free(t);
	free(got);
	/* no system site-packages in this venv; the import line is named, not run */
	CHECK_INT(pvg_python_module_path(py, "sysmod", NULL, &got, &why), -ENOENT);
	CHECK(why.text && strstr(why.text, "No module named 'sysmod'"));
	CHECK(why.text && strstr(why.text, "a.pth line 1"));
	CHECK(why.hint != NULL);
	/* PYTHONPATH, when the caller passes it, comes first */
	char *pp = pvg_asprintf("relative/skipped:%s/base/lib/python3.11/site-packages", root);
	struct pvg_python_opts o = { .pythonpath = pp };
	CHECK_INT(pvg_python_module_path(py, "sysmod", &o, &got, &why), 0);
	free(got);
	free(pp);
	CHECK_INT(pvg_python_module_path(py, "pkg.ops._C.x", NULL, &got, &why), -ENOENT);
	CHECK(why.text && strstr(why.text, "is a module, not a package"));
	CHECK_INT(pvg_python_module_path(py, "pkg..x", NULL, &got, &why), -ENOENT);
	/* the base interpreter itself, found by its name's version */
	free(py);
	py = pvg_asprintf("%s/base/bin/python3.11", root);
	CHECK_INT(pvg_python_module_path(py, "sysmod", NULL, &got, &why), 0);
	free(got);
	/* an interpreter outside any installation (no lib/python3.99 at or above it; a
	 * "python3" there would find a merged-/usr system's /lib/python3.X, as getpath does):
	 * -ENOEXEC with a hint */
	free(py);
	py = pvg_asprintf("%s/venv/bin/python3", root);
	t = pvg_asprintf("%s/lone/python3.99", root);
	put(t, "#!/bin/sh\ntouch \"$0.ran\"\n");
	chmod(t, 0755);
	CHECK_INT(pvg_python_module_path(t, "x", NULL, &got, &why), -ENOEXEC);
	CHECK(why.text && strstr(why.text, "is a script, not the interpreter"));
	CHECK(why.hint != NULL);
	free(t);
	/* nothing ran */
	CHECK(access(AT("pth.ran"), F_OK) < 0);
	CHECK(access(AT("venv/bin/python3.ran"), F_OK) < 0);
	CHECK(access(AT("base/bin/python3.11.ran"), F_OK) < 0);
	/* root owns all of it: nobody else can change what it finds */
	char *what = NULL;
	uid_t owner = 1;
	if (geteuid() == 0) {
		CHECK_INT(pvg_python_writable_by_others(py, &what, &owner), 0);
		CHECK(chown(AT("venv/lib/python3.11/site-packages"), 65534, 65534) == 0);
		CHECK_INT(pvg_python_writable_by_others(py, &what, &owner), 1);
		CHECK_INT(owner, 65534);
		t = pvg_asprintf("%s/%s", root, sp);
		CHECK_STR(what, t);
		free(t);
		free(what);
	}
	pvg_msg_clear(&why);
	free(py);
	free(p);
	char *rm = pvg_asprintf("rm -rf '%s'", root);
	CHECK(system(rm) == 0);
	free(rm);
#undef AT
}

int main(void)
{
	RUN(pyvenv_cfg_as_site_reads_it);
	RUN(pth_lines_are_paths_or_never_run_imports);
	RUN(normpath_matches_posixpath);
	RUN(str_literals_as_repr_writes_them);
	RUN(editable_finder_literals_are_read_as_data);
	RUN(resolution_reads_a_fake_installation);
	TAP_EXIT();
}
