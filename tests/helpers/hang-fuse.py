#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""hang-fuse.py MOUNTPOINT HANGFLAG FILE...: a FUSE file system, spoken over /dev/fuse with no
library, that serves read-only files (each FILE's bytes, under its base name) at MOUNTPOINT
until the file HANGFLAG exists; from then on it reads requests and answers none, as a hung
FUSE daemon (sshfs to a dead host) does: every stat, open or read there waits. Attributes are
never cached, so each stat asks. Needs root (mount(2)); prints "ready" once mounted, and
exits (the mount gone) on SIGTERM."""
import ctypes
import errno
import os
import signal
import struct
import sys

mnt, flag = sys.argv[1:3]
files = [(os.path.basename(f).encode(), open(f, "rb").read()) for f in sys.argv[3:]]
fd = os.open("/dev/fuse", os.O_RDWR)
libc = ctypes.CDLL(None, use_errno=True)
opts = f"fd={fd},rootmode=40000,user_id=0,group_id=0".encode()
if libc.mount(b"hangfs", mnt.encode(), b"fuse", 0, opts) != 0:
    sys.exit(f"mount: {os.strerror(ctypes.get_errno())}")


def bye(*_):
    libc.umount2(mnt.encode(), 2)  # MNT_DETACH
    os._exit(0)


signal.signal(signal.SIGTERM, bye)


def attr(ino):
    if ino == 1:
        mode, size, nlink = 0o040755, 0, 2
    else:
        mode, size, nlink = 0o100755, len(files[ino - 2][1]), 1
    # ino size blocks atime mtime ctime atimensec mtimensec ctimensec mode nlink uid gid rdev
    # blksize flags
    return struct.pack("<QQQQQQIIIIIIIIII", ino, size, (size + 511) // 512, 0, 0, 0, 0, 0, 0,
                       mode, nlink, 0, 0, 0, 4096, 0)


def reply(unique, err=0, body=b""):
    os.write(fd, struct.pack("<IiQ", 16 + len(body), -err, unique) + body)


print("ready", flush=True)
while True:
    try:
        req = os.read(fd, 1 << 20)
    except OSError as e:
        if e.errno in (errno.EINTR, errno.EAGAIN, errno.ENOENT):
            continue
        sys.exit(0)  # unmounted
    length, op, unique, node = struct.unpack_from("<IIQQ", req)
    arg = req[40:length]
    if op in (2, 42, 36):  # FORGET, BATCH_FORGET, INTERRUPT: no answer
        continue
    if os.path.exists(flag):
        continue  # hung
    if op == 26:  # INIT
        major, minor, readahead, flags = struct.unpack_from("<IIII", arg)
        reply(unique, 0, struct.pack("<IIIIHHIIHHII", 7, 31, readahead, 0, 1, 1, 1 << 17, 1, 32,
                                     0, 0, 0) + b"\0" * 24)
    elif op == 1:  # LOOKUP
        names = [n for n, _ in files]
        want = arg.rstrip(b"\0")
        if node == 1 and want in names:
            ino = 2 + names.index(want)
            reply(unique, 0, struct.pack("<QQQQII", ino, 0, 0, 0, 0, 0) + attr(ino))
        else:
            reply(unique, errno.ENOENT)
    elif op == 3:  # GETATTR
        reply(unique, 0, struct.pack("<QII", 0, 0, 0) + attr(node))
    elif op in (14, 27):  # OPEN, OPENDIR
        reply(unique, 0, struct.pack("<QII", 0, 0, 0))
    elif op == 15:  # READ
        fh, off, size = struct.unpack_from("<QQI", arg)
        reply(unique, 0, files[node - 2][1][off:off + size])
    elif op in (18, 25, 29, 34):  # RELEASE, FLUSH, RELEASEDIR, ACCESS
        reply(unique)
    else:
        reply(unique, errno.ENOSYS)
