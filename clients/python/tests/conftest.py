"""A real leasehold server for the tests: the binary in ``LEASEHOLD_BIN``,
on a free port, with a fresh database in a temporary folder."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Callable, Iterator, TypeVar

import pytest

from faultproxy import FaultProxy
from leasehold import Client


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """One server process; :meth:`stop` and :meth:`start` keep port and database."""

    def __init__(self, folder: Path, *flags: str) -> None:
        binary = os.environ.get("LEASEHOLD_BIN")
        if not binary:
            raise RuntimeError("set LEASEHOLD_BIN to the leasehold binary to test against")
        self.binary = binary
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.db = folder / "leasehold.db"
        self.log = folder / "server.log"
        self.flags = flags
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> "Server":
        log = open(self.log, "ab")
        self.proc = subprocess.Popen(
            [self.binary, "serve", "--listen", f"127.0.0.1:{self.port}",
             "--db", str(self.db), *self.flags],
            stdout=log, stderr=log,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(self.url + "/readyz", timeout=1).read()
                return self
            except OSError:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"server exited: {self.log.read_text()[-2000:]}")
                time.sleep(0.05)
        raise RuntimeError("server did not become ready")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None

    def pause(self) -> None:
        """SIGSTOP: the server hangs, its connections stay open."""
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self) -> None:
        """SIGCONT after :meth:`pause`."""
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGCONT)

    def metric(self, name: str) -> float:
        """A counter or gauge of ``/metrics`` (summed over its labels)."""
        text = urllib.request.urlopen(self.url + "/metrics", timeout=5).read().decode()
        total = 0.0
        for line in text.splitlines():
            if line.startswith(name) and line[len(name):len(name) + 1] in (" ", "{"):
                total += float(line.rsplit(" ", 1)[1])
        return total

    def client(self, **options: object) -> Client:
        return Client(self.url, **options)  # type: ignore[arg-type]


T = TypeVar("T")


def eventually(read: Callable[[], T], ok: Callable[[T], bool], what: str) -> T:
    """What `read` answers once `ok` holds of it, read every 20 ms for up to
    10 s (what the server counts or lists may trail a write elsewhere)."""
    deadline = time.monotonic() + 10
    while True:
        value = read()
        if ok(value):
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: still {value}")
        time.sleep(0.02)


def new_token(name: str, *flags: str) -> tuple[str, dict[str, object]]:
    """A new API token and its auth-file entry, made by the binary."""
    out = subprocess.run(
        [os.environ["LEASEHOLD_BIN"], "token", "new", "--name", name, *flags],
        check=True, capture_output=True, text=True,
    ).stdout.splitlines()
    return out[0], json.loads(out[1])


def server_with_tokens(folder: Path, *entries: dict[str, object]) -> Server:
    """A server that requires API tokens: these."""
    auth = folder / "auth.json"
    auth.write_text(json.dumps({"tokens": list(entries)}))
    auth.chmod(0o600)
    return Server(folder, "--auth-file", str(auth)).start()


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server shared by the tests that never stop it."""
    srv = Server(tmp_path_factory.mktemp("shared")).start()
    yield srv
    srv.stop()


@pytest.fixture
def own_server(tmp_path: Path) -> Iterator[Server]:
    """A server of the test's own, which it may stop and start again."""
    srv = Server(tmp_path).start()
    yield srv
    srv.stop()


@pytest.fixture
def client(server: Server) -> Iterator[Client]:
    c = server.client()
    yield c
    c.close()


@pytest.fixture
def key(request: pytest.FixtureRequest) -> str:
    """A key of the test's own."""
    return f"test/{request.node.name}/{time.monotonic_ns()}"


@pytest.fixture
def proxies(server: Server) -> Iterator[Callable[..., FaultProxy]]:
    """Makes fault proxies to a server (the shared one unless given)."""
    made: list[FaultProxy] = []

    def make(to: Server | None = None) -> FaultProxy:
        proxy = FaultProxy((to or server).port)
        made.append(proxy)
        return proxy

    yield make
    for proxy in made:
        proxy.close()


#: The figures the fault scenarios measured, printed at the end of the run.
FIGURES: list[str] = []


@pytest.fixture
def figure(request: pytest.FixtureRequest) -> Callable[[str], None]:
    """Records one measured figure of the test (printed now and at the end)."""

    def note(text: str) -> None:
        line = f"{request.node.name}: {text}"
        FIGURES.append(line)
        print(line)

    return note


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if FIGURES:
        terminalreporter.section("figures")
        for line in FIGURES:
            terminalreporter.write_line(line)
    out = os.environ.get("LEASEHOLD_FIGURES")
    if out and FIGURES:
        Path(out).write_text("\n".join(FIGURES) + "\n")
