/* SPDX-License-Identifier: MIT */
/* lib/sys: resolves a Python module to its file without importing it. */
#pragma once

#include "util/util.h"


/* Resolves a dotted module name to its file with `python` (name or path), in a clean
 * environment, without importing the module or any parent package. On success *path is
 * the file; on failure why->text holds the interpreter's answer. Returns 0, -ENOENT (not found),
 * -ENOEXEC (interpreter failed / could not run), -ETIMEDOUT. */
int pvg_python_module_path(const char *python, const char *module, char **path,
			   struct pvg_msg *why);

