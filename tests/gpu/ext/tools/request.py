# SPDX-License-Identifier: MIT
"""Sends one request "M N [t] [g R]" to the service and prints the reply ("t": a transposed,
non-contiguous input of the same shape; "g R": the call captured in a CUDA graph and replayed
R times). Usage: request.py PORT M N [t] [g R]"""
import socket
import sys
import time

port, rest = int(sys.argv[1]), " ".join(sys.argv[2:])
deadline = time.time() + 180
while True:
    try:
        c = socket.create_connection(("127.0.0.1", port), timeout=180)
        break
    except OSError:
        if time.time() > deadline:
            raise
        time.sleep(0.2)
c.sendall(f"{rest}\n".encode())
reply = c.makefile().readline().strip()
print(reply)
sys.exit(0 if reply.startswith("ok") else 1)
