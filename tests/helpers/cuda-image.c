/* SPDX-License-Identifier: MIT */
/*
 * A shared object holding a code image in its mapped data, as a CUDA application's library
 * holds its fatbin (tests only, never installed): standin_image is IMAGE's bytes (a cubin),
 * which cuda-sim hands to the stand-in driver's cuLibraryLoadData the way the runtime
 * registers a library's fatbin (or to cuModuleLoadData: the kernels it launches by name). The
 * file is built three times (the artifact's, the vendor's and the named kernels' cubin of
 * tests/fixtures/witness-modules).
 */
#ifndef IMAGE
#error IMAGE: the file to embed
#endif
__asm__(".section .rodata\n"
	".balign 64\n"
	".globl standin_image\n"
	".type standin_image, @object\n"
	"standin_image:\n"
	".incbin \"" IMAGE "\"\n"
	".size standin_image, . - standin_image\n"
	".previous\n");
