# SPDX-License-Identifier: MIT
"""The command that ``provgate.benchmark`` gives ``provgate exec``: it stands for the block
of Python code that runs meanwhile in the process that started provgate.

    python -I _block.py --pid PID --fds STATUS,STARTED -- LABEL...

provgate exec starts it only once the chain is certified and the report ("state": "running")
is written; it says so on STARTED, then waits for the block's exit status on STATUS and exits
with it, so that exec re-checks and writes its report as for any command. Signals that
provgate passes on (SIGTERM, SIGINT, ... sent to provgate) go to PID, the block's process.
When PID closes STATUS without a status (it died), the exit status is 128 + the last signal
passed on, else 1. Standard library only: it runs isolated (-I), not through the package.
"""
import os
import signal
import sys

FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1,
             signal.SIGUSR2)


def main(argv):
    try:
        sep = argv.index("--")
        opts = dict(zip(argv[:sep:2], argv[1:sep:2]))
        pid = int(opts["--pid"])
        status_fd, started_fd = (int(x) for x in opts["--fds"].split(","))
    except (ValueError, KeyError):
        sys.stderr.write("usage: _block.py --pid PID --fds STATUS,STARTED -- LABEL...\n")
        return 2
    last = [0]

    def forward(sig, frame):
        last[0] = sig
        try:
            os.kill(pid, sig)
        except OSError:
            pass

    for s in FORWARDED:
        signal.signal(s, forward)
    try:
        os.write(started_fd, b"started\n")
    except OSError:
        pass  # the block's process is gone: the read below ends at once
    os.close(started_fd)
    data = b""
    while not data.endswith(b"\n"):
        chunk = os.read(status_fd, 16)  # retried after a signal's handler (PEP 475)
        if not chunk:
            break
        data += chunk
    try:
        return max(0, min(255, int(data)))
    except ValueError:
        return 128 + last[0] if last[0] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
