"""Refuse and record every network connection that leaves this machine.

The tests put this folder on PYTHONPATH, so every Python process they start
(Jupyter kernels, the book build) imports it at start-up through
sitecustomize.py; conftest.py imports it into pytest itself. An audit hook sees
each socket connect and each host-name look-up; one that is not for
localhost is refused and written to the file named by $NETGUARD_LOG.
"""

import ipaddress
import os
import socket
import sys

LOCAL_NAMES = {"localhost", "localhost.localdomain", "", None}


def is_local(host):
    if isinstance(host, bytes):
        host = host.decode()
    if host in LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


def record(what):
    log = os.environ.get("NETGUARD_LOG")
    if log:
        with open(log, "a") as f:
            f.write(f"{os.getpid()} {sys.argv[:2]} {what}\n")
    raise ConnectionRefusedError(f"netguard: refused {what}")


def audit(event, args):
    if event == "socket.connect":
        sock, address = args
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            if not is_local(address[0]):
                record(f"connect {address!r}")
    elif event == "socket.getaddrinfo":
        if not is_local(args[0]):
            record(f"getaddrinfo {args[0]!r}")


if os.environ.get("NETGUARD_LOG"):
    sys.addaudithook(audit)
