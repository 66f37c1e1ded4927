/* SPDX-License-Identifier: MIT */
/*
 * libprovgate-witness.so loads into services whose glibc may be as old as 2.17 (the
 * manylinux2014 floor: CentOS 7, the oldest vLLM/ROCm/DTK images). A library linked against
 * a newer glibc asks for the newest version of each symbol it calls (dlopen@GLIBC_2.34,
 * pthread_sigmask@GLIBC_2.32, fcntl64@GLIBC_2.28, stat@GLIBC_2.33 ...), and an older
 * glibc's loader refuses it. meson.build includes this header before anything else in
 * every source of the library (-include) and links libdl.so.2 and libpthread.so.0, where
 * an old glibc keeps these functions; a newer glibc still has each of the versions named
 * here (the same functions, kept for old binaries).
 *
 * The pins: every dl*, pthread_* and sem_* function whose current version is newer than
 * GLIBC_2.17 and that glibc also exports at GLIBC_2.17 or older, at that older version (read
 * from Debian 12's libc.so.6 with readelf --dyn-syms). A pin of a function the library does
 * not call costs nothing. tests/scenario/t-witness-glibc.sh reads the built library's
 * symbol versions and fails on any newer than GLIBC_2.17: a new call that needs another
 * pin shows up there.
 */
#pragma once
#if defined(__x86_64__) && defined(__linux__)
#include <fcntl.h>
#include <sys/stat.h>

#ifdef __cplusplus
extern "C" {
#endif
__asm__(".symver dladdr,dladdr@GLIBC_2.2.5");
__asm__(".symver dladdr1,dladdr1@GLIBC_2.3.3");
__asm__(".symver dlclose,dlclose@GLIBC_2.2.5");
__asm__(".symver dlerror,dlerror@GLIBC_2.2.5");
__asm__(".symver dlinfo,dlinfo@GLIBC_2.3.3");
__asm__(".symver dlmopen,dlmopen@GLIBC_2.3.4");
__asm__(".symver dlopen,dlopen@GLIBC_2.2.5");
__asm__(".symver dlsym,dlsym@GLIBC_2.2.5");
__asm__(".symver dlvsym,dlvsym@GLIBC_2.2.5");
__asm__(".symver pthread_attr_getaffinity_np,pthread_attr_getaffinity_np@GLIBC_2.3.3");
__asm__(".symver pthread_attr_getguardsize,pthread_attr_getguardsize@GLIBC_2.2.5");
__asm__(".symver pthread_attr_getstack,pthread_attr_getstack@GLIBC_2.2.5");
__asm__(".symver pthread_attr_getstackaddr,pthread_attr_getstackaddr@GLIBC_2.2.5");
__asm__(".symver pthread_attr_getstacksize,pthread_attr_getstacksize@GLIBC_2.2.5");
__asm__(".symver pthread_attr_setaffinity_np,pthread_attr_setaffinity_np@GLIBC_2.3.3");
__asm__(".symver pthread_attr_setguardsize,pthread_attr_setguardsize@GLIBC_2.2.5");
__asm__(".symver pthread_attr_setstack,pthread_attr_setstack@GLIBC_2.2.5");
__asm__(".symver pthread_attr_setstackaddr,pthread_attr_setstackaddr@GLIBC_2.2.5");
__asm__(".symver pthread_attr_setstacksize,pthread_attr_setstacksize@GLIBC_2.2.5");
__asm__(".symver pthread_barrier_destroy,pthread_barrier_destroy@GLIBC_2.2.5");
__asm__(".symver pthread_barrier_init,pthread_barrier_init@GLIBC_2.2.5");
__asm__(".symver pthread_barrier_wait,pthread_barrier_wait@GLIBC_2.2.5");
__asm__(".symver pthread_barrierattr_destroy,pthread_barrierattr_destroy@GLIBC_2.2.5");
__asm__(".symver pthread_barrierattr_getpshared,pthread_barrierattr_getpshared@GLIBC_2.3.3");
__asm__(".symver pthread_barrierattr_init,pthread_barrierattr_init@GLIBC_2.2.5");
__asm__(".symver pthread_barrierattr_setpshared,pthread_barrierattr_setpshared@GLIBC_2.2.5");
__asm__(".symver pthread_cancel,pthread_cancel@GLIBC_2.2.5");
__asm__(".symver pthread_condattr_getclock,pthread_condattr_getclock@GLIBC_2.3.3");
__asm__(".symver pthread_condattr_getpshared,pthread_condattr_getpshared@GLIBC_2.2.5");
__asm__(".symver pthread_condattr_setclock,pthread_condattr_setclock@GLIBC_2.3.3");
__asm__(".symver pthread_condattr_setpshared,pthread_condattr_setpshared@GLIBC_2.2.5");
__asm__(".symver pthread_create,pthread_create@GLIBC_2.2.5");
__asm__(".symver pthread_detach,pthread_detach@GLIBC_2.2.5");
__asm__(".symver pthread_getaffinity_np,pthread_getaffinity_np@GLIBC_2.3.3");
__asm__(".symver pthread_getattr_np,pthread_getattr_np@GLIBC_2.2.5");
__asm__(".symver pthread_getconcurrency,pthread_getconcurrency@GLIBC_2.2.5");
__asm__(".symver pthread_getcpuclockid,pthread_getcpuclockid@GLIBC_2.2.5");
__asm__(".symver pthread_getname_np,pthread_getname_np@GLIBC_2.12");
__asm__(".symver pthread_getspecific,pthread_getspecific@GLIBC_2.2.5");
__asm__(".symver pthread_join,pthread_join@GLIBC_2.2.5");
__asm__(".symver pthread_key_create,pthread_key_create@GLIBC_2.2.5");
__asm__(".symver pthread_key_delete,pthread_key_delete@GLIBC_2.2.5");
__asm__(".symver pthread_kill,pthread_kill@GLIBC_2.2.5");
__asm__(".symver pthread_mutex_consistent,pthread_mutex_consistent@GLIBC_2.12");
__asm__(".symver pthread_mutex_getprioceiling,pthread_mutex_getprioceiling@GLIBC_2.4");
__asm__(".symver pthread_mutex_setprioceiling,pthread_mutex_setprioceiling@GLIBC_2.4");
__asm__(".symver pthread_mutex_timedlock,pthread_mutex_timedlock@GLIBC_2.2.5");
__asm__(".symver pthread_mutex_trylock,pthread_mutex_trylock@GLIBC_2.2.5");
__asm__(".symver pthread_mutexattr_destroy,pthread_mutexattr_destroy@GLIBC_2.2.5");
__asm__(".symver pthread_mutexattr_getprioceiling,pthread_mutexattr_getprioceiling@GLIBC_2.4");
__asm__(".symver pthread_mutexattr_getprotocol,pthread_mutexattr_getprotocol@GLIBC_2.4");
__asm__(".symver pthread_mutexattr_getpshared,pthread_mutexattr_getpshared@GLIBC_2.2.5");
__asm__(".symver pthread_mutexattr_getrobust,pthread_mutexattr_getrobust@GLIBC_2.12");
__asm__(".symver pthread_mutexattr_gettype,pthread_mutexattr_gettype@GLIBC_2.2.5");
__asm__(".symver pthread_mutexattr_init,pthread_mutexattr_init@GLIBC_2.2.5");
__asm__(".symver pthread_mutexattr_setprioceiling,pthread_mutexattr_setprioceiling@GLIBC_2.4");
__asm__(".symver pthread_mutexattr_setprotocol,pthread_mutexattr_setprotocol@GLIBC_2.4");
__asm__(".symver pthread_mutexattr_setpshared,pthread_mutexattr_setpshared@GLIBC_2.2.5");
__asm__(".symver pthread_mutexattr_setrobust,pthread_mutexattr_setrobust@GLIBC_2.12");
__asm__(".symver pthread_mutexattr_settype,pthread_mutexattr_settype@GLIBC_2.2.5");
__asm__(".symver pthread_once,pthread_once@GLIBC_2.2.5");
__asm__(".symver pthread_rwlock_destroy,pthread_rwlock_destroy@GLIBC_2.2.5");
__asm__(".symver pthread_rwlock_init,pthread_rwlock_init@GLIBC_2.2.5");
__asm__(".symver pthread_rwlock_rdlock,pthread_rwlock_rdlock@GLIBC_2.2.5");
__asm__(".symver pthread_rwlock_timedrdlock,pthread_rwlock_timedrdlock@GLIBC_2.2.5");
__asm__(".symver pthread_rwlock_timedwrlock,pthread_rwlock_timedwrlock@GLIBC_2.2.5");
__asm__(".symver pthread_rwlock_tryrdlock,pthread_rwlock_tryrdlock@GLIBC_2.2.5");
__asm__(".symver pthread_rwlock_trywrlock,pthread_rwlock_trywrlock@GLIBC_2.2.5");
__asm__(".symver pthread_rwlock_unlock,pthread_rwlock_unlock@GLIBC_2.2.5");
__asm__(".symver pthread_rwlock_wrlock,pthread_rwlock_wrlock@GLIBC_2.2.5");
__asm__(".symver pthread_rwlockattr_destroy,pthread_rwlockattr_destroy@GLIBC_2.2.5");
__asm__(".symver pthread_rwlockattr_getkind_np,pthread_rwlockattr_getkind_np@GLIBC_2.2.5");
__asm__(".symver pthread_rwlockattr_getpshared,pthread_rwlockattr_getpshared@GLIBC_2.2.5");
__asm__(".symver pthread_rwlockattr_init,pthread_rwlockattr_init@GLIBC_2.2.5");
__asm__(".symver pthread_rwlockattr_setkind_np,pthread_rwlockattr_setkind_np@GLIBC_2.2.5");
__asm__(".symver pthread_rwlockattr_setpshared,pthread_rwlockattr_setpshared@GLIBC_2.2.5");
__asm__(".symver pthread_setaffinity_np,pthread_setaffinity_np@GLIBC_2.3.3");
__asm__(".symver pthread_setconcurrency,pthread_setconcurrency@GLIBC_2.2.5");
__asm__(".symver pthread_setname_np,pthread_setname_np@GLIBC_2.12");
__asm__(".symver pthread_setschedprio,pthread_setschedprio@GLIBC_2.3.4");
__asm__(".symver pthread_setspecific,pthread_setspecific@GLIBC_2.2.5");
__asm__(".symver pthread_sigmask,pthread_sigmask@GLIBC_2.2.5");
__asm__(".symver pthread_sigqueue,pthread_sigqueue@GLIBC_2.11");
__asm__(".symver pthread_spin_destroy,pthread_spin_destroy@GLIBC_2.2.5");
__asm__(".symver pthread_spin_init,pthread_spin_init@GLIBC_2.2.5");
__asm__(".symver pthread_spin_lock,pthread_spin_lock@GLIBC_2.2.5");
__asm__(".symver pthread_spin_trylock,pthread_spin_trylock@GLIBC_2.2.5");
__asm__(".symver pthread_spin_unlock,pthread_spin_unlock@GLIBC_2.2.5");
__asm__(".symver pthread_testcancel,pthread_testcancel@GLIBC_2.2.5");
__asm__(".symver pthread_timedjoin_np,pthread_timedjoin_np@GLIBC_2.3.3");
__asm__(".symver pthread_tryjoin_np,pthread_tryjoin_np@GLIBC_2.3.3");
__asm__(".symver sem_close,sem_close@GLIBC_2.2.5");
__asm__(".symver sem_destroy,sem_destroy@GLIBC_2.2.5");
__asm__(".symver sem_getvalue,sem_getvalue@GLIBC_2.2.5");
__asm__(".symver sem_init,sem_init@GLIBC_2.2.5");
__asm__(".symver sem_open,sem_open@GLIBC_2.2.5");
__asm__(".symver sem_post,sem_post@GLIBC_2.2.5");
__asm__(".symver sem_timedwait,sem_timedwait@GLIBC_2.2.5");
__asm__(".symver sem_trywait,sem_trywait@GLIBC_2.2.5");
__asm__(".symver sem_unlink,sem_unlink@GLIBC_2.2.5");
__asm__(".symver sem_wait,sem_wait@GLIBC_2.2.5");

/* fcntl: 2.28 made fcntl64 the symbol that <fcntl.h> calls; the same function is fcntl. */
__asm__(".symver fcntl64,fcntl@GLIBC_2.2.5");

/* stat and friends became symbols of their own in 2.33; before, they were inline calls of
 * __xstat and friends, whose first argument is the layout version (1 on x86-64). */
int __xstat(int ver, const char *path, struct stat *st);
int __lxstat(int ver, const char *path, struct stat *st);
int __fxstat(int ver, int fd, struct stat *st);
int __fxstatat(int ver, int dirfd, const char *path, struct stat *st, int flags);
__asm__(".symver __xstat,__xstat@GLIBC_2.2.5");
__asm__(".symver __lxstat,__lxstat@GLIBC_2.2.5");
__asm__(".symver __fxstat,__fxstat@GLIBC_2.2.5");
__asm__(".symver __fxstatat,__fxstatat@GLIBC_2.4");
#define stat(path, st) __xstat(1, (path), (st))
#define lstat(path, st) __lxstat(1, (path), (st))
#define fstat(fd, st) __fxstat(1, (fd), (st))
#define fstatat(dirfd, path, st, flags) __fxstatat(1, (dirfd), (path), (st), (flags))
#ifdef __cplusplus
}
#endif
#endif
