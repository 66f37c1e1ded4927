/* SPDX-License-Identifier: MIT */
/* provgate exec --witness DIR (exec-witness.c). */
#pragma once
#include "run-opts.h"

/* Prints the witness's environment and checks the live service's. An exit code. */
int cli_exec_witness(const struct run_opts *o, const char *dir);
