"""The car-server process: command line, start-up, workers and shutdown.
The protocols have their own test files."""

import signal
import socket
import subprocess

from conftest import HOST, SHOOTOUT_BIN


def test_help_and_bad_options():
    out = subprocess.run([SHOOTOUT_BIN, "car-server", "--help"], capture_output=True, text=True, timeout=10)
    assert out.returncode == 0 and "--rest-port" in out.stdout and "--grpc-port" in out.stdout
    for bad in (["--threads", "0"], ["--rest-port", "70000"], ["--idle-timeout", "x"], ["extra"],
                ["--rest-port", "off", "--grpc-port", "off"]):
        r = subprocess.run([SHOOTOUT_BIN, "car-server"] + bad, capture_output=True, text=True, timeout=10)
        assert r.returncode == 2, (bad, r.stderr)
        assert r.stderr.strip(), bad


def test_port_in_use_exits_1(tmp_path):
    with socket.socket() as s:
        s.bind((HOST, 0))
        s.listen()
        port = s.getsockname()[1]
        r = subprocess.run([SHOOTOUT_BIN, "car-server", "--rest-port", str(port), "--grpc-port", "off"],
                           capture_output=True, text=True, timeout=10)
    assert r.returncode == 1
    assert "cannot listen" in r.stderr and str(port) in r.stderr


def test_listeners_can_be_switched_off(car_server_factory):
    s = car_server_factory("--grpc-port", "off")
    assert s.rest_port and s.grpc_port is None
    socket.create_connection((HOST, s.rest_port), timeout=2).close()


def test_workers_share_the_ports_and_stop_on_sigterm(car_server_factory):
    s = car_server_factory("--threads", "3")
    assert "3 workers" in s.stderr_text()
    for _ in range(6):
        socket.create_connection((HOST, s.rest_port), timeout=2).close()
        socket.create_connection((HOST, s.grpc_port), timeout=2).close()
    assert s.stop(signal.SIGTERM) == 0
    assert "stopped:" in s.stderr_text()


def test_sigint_is_a_clean_stop_too(car_server_factory):
    s = car_server_factory()
    assert s.stop(signal.SIGINT) == 0
