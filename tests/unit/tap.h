/* SPDX-License-Identifier: MIT */
/* Minimal test harness: each TEST prints "ok - name" or "not ok - name"; tests/run counts. */
#pragma once
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tap_case_failed;
static int tap_any_failed;

#define CHECK(cond)                                                                        \
	do {                                                                               \
		if (!(cond)) {                                                             \
			printf("#   %s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond);     \
			tap_case_failed = 1;                                               \
		}                                                                          \
	} while (0)

#define CHECK_STR(a, b)                                                                    \
	do {                                                                               \
		const char *_a = (a), *_b = (b);                                           \
		if (!_a || !_b || strcmp(_a, _b) != 0) {                                   \
			printf("#   %s:%d: %s == \"%s\", expected \"%s\"\n", __FILE__, __LINE__, \
			       #a, _a ? _a : "(null)", _b ? _b : "(null)");                 \
			tap_case_failed = 1;                                               \
		}                                                                          \
	} while (0)

#define CHECK_INT(a, b)                                                                    \
	do {                                                                               \
		long long _a = (long long)(a), _b = (long long)(b);                        \
		if (_a != _b) {                                                            \
			printf("#   %s:%d: %s == %lld, expected %lld\n", __FILE__, __LINE__, #a, \
			       _a, _b);                                                    \
			tap_case_failed = 1;                                               \
		}                                                                          \
	} while (0)

#define RUN(fn)                                                                            \
	do {                                                                               \
		tap_case_failed = 0;                                                       \
		fn();                                                                      \
		printf("%s - %s\n", tap_case_failed ? "not ok" : "ok", #fn);              \
		fflush(stdout);                                                            \
		tap_any_failed |= tap_case_failed;                                         \
	} while (0)

#define TAP_EXIT() return tap_any_failed ? 1 : 0
