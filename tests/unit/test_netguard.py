"""The guard that keeps the tests offline does refuse the network."""

import socket
import subprocess
import sys

import pytest

from conftest import LOG


def _forget_attempts(before):
    LOG.write_text(before)


def test_guard_refuses_remote_hosts_in_this_process():
    before = LOG.read_text()
    with pytest.raises(ConnectionRefusedError, match="netguard"):
        socket.create_connection(("example.com", 80), timeout=1)
    assert "example.com" in LOG.read_text()[len(before) :]
    _forget_attempts(before)


def test_guard_refuses_remote_hosts_in_child_processes():
    before = LOG.read_text()
    code = "import socket; socket.create_connection(('192.0.2.1', 80), 1)"
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True
    )
    assert run.returncode != 0
    assert "netguard: refused" in run.stderr
    assert "192.0.2.1" in LOG.read_text()[len(before) :]
    _forget_attempts(before)


def test_guard_lets_localhost_through():
    before = LOG.read_text()
    server = socket.create_server(("127.0.0.1", 0))
    with server, socket.create_connection(server.getsockname(), 1) as conn:
        accepted, _ = server.accept()
        with accepted:
            conn.sendall(b"ping")
            assert accepted.recv(4) == b"ping"
    assert LOG.read_text() == before  # nothing refused, nothing logged
