"""Start sphinxcontrib-katex's Node.js server without a race.

Sphinx extension. sphinxcontrib-katex 0.9.11 starts a Node.js process that
typesets the formulas, waits for its Unix socket file to appear, then
connects once. Node creates the file (bind) a moment before it accepts
connections (listen), so on a busy machine, say while the notebooks run,
that one connect can be refused and the whole build fails with
ConnectionRefusedError. This extension tries the connect again until the
extension's own startup timeout, as its network-socket path already does.
"""

import socket
import time
from subprocess import PIPE, Popen

from sphinxcontrib.katex import KaTeXServer


def start_server_process(cls, rundir, timeout):
    """KaTeXServer.start_server_process, retrying a refused connect."""
    socket_path = rundir / "katex.sock"
    command = cls.build_command(socket=socket_path)
    process = Popen(command, stdin=PIPE, stdout=PIPE, cwd=rundir)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if socket_path.is_socket():
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(max(deadline - time.monotonic(), 0.001))
            try:
                sock.connect(str(socket_path))
            except (ConnectionRefusedError, TimeoutError):  # not listening yet
                sock.close()
            else:
                sock.settimeout(None)
                return process, sock
        time.sleep(0.001)
    process.kill()
    raise cls.timeout_error(timeout)


def setup(app):
    KaTeXServer.start_server_process = classmethod(start_server_process)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
