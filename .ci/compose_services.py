"""Starts each leasehold service of docker-compose.yml as Compose would configure
it, and checks that it passes its own healthcheck.

Usage: python compose_services.py docker-compose.yml LEASEHOLD_BINARY POSTGRES_URL

No Docker engine is needed: the binary runs with exactly the service's
environment, except where the container's world differs from this host's:
the database (a fresh SQLite file for `/data/…`; for a `postgres://` URL a
fresh database of the server POSTGRES_URL names) and the port (a free one, on
the same address the service listens on). The healthcheck's command then runs
as written, with the port replaced. A service that would not start in its
container (a setting the server refuses) fails here.
"""

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse

import yaml


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def database(value: str, work: str, name: str, postgres: str) -> str:
    if value.startswith(("postgres://", "postgresql://")):
        db = f"compose_{name.replace('-', '_')}_{os.getpid()}"
        subprocess.run(["psql", postgres, "-qc", f"CREATE DATABASE {db}"], check=True)
        parts = urllib.parse.urlsplit(postgres)
        return urllib.parse.urlunsplit(parts._replace(path=f"/{db}"))
    return os.path.join(work, os.path.basename(value))


def check(name: str, service: dict, binary: str, postgres: str) -> None:
    env = {k: str(v) for k, v in (service.get("environment") or {}).items()}
    listen_host, _, inner_port = env["LEASEHOLD_LISTEN"].rpartition(":")
    port = free_port()
    work = tempfile.mkdtemp(prefix=f"compose-{name}-")
    env["LEASEHOLD_LISTEN"] = f"{listen_host}:{port}"
    env["LEASEHOLD_DB"] = database(env["LEASEHOLD_DB"], work, name, postgres)
    env["PATH"] = os.environ["PATH"]
    command = [binary] + [a for a in service.get("command", ["serve"])]
    log = open(os.path.join(work, "server.log"), "w")
    server = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    test = service["healthcheck"]["test"]
    assert test[0] == "CMD", f"{name}: a healthcheck of the form [CMD, …] is expected"
    probe = [a.replace(f":{inner_port}/", f":{port}/") for a in test[1:]]
    try:
        deadline = time.monotonic() + 15
        while True:
            if server.poll() is not None:
                log.close()
                print(open(log.name).read(), file=sys.stderr)
                raise SystemExit(f"{name}: the server exited with {server.returncode} under its Compose environment")
            if subprocess.run(probe, capture_output=True).returncode == 0:
                break
            if time.monotonic() > deadline:
                raise SystemExit(f"{name}: its healthcheck {' '.join(probe)} did not pass within 15 s")
            time.sleep(0.2)
        print(f"{name}: started with its Compose environment, healthcheck passed")
    finally:
        server.terminate()
        server.wait(timeout=10)
        shutil.rmtree(work, ignore_errors=True)


def main(compose: str, binary: str, postgres: str) -> None:
    with open(compose, encoding="utf-8") as f:
        services = yaml.safe_load(f)["services"]
    checked = 0
    for name, service in services.items():
        if service.get("image", "").startswith("leasehold"):
            check(name, service, binary, postgres)
            checked += 1
    if checked == 0:
        raise SystemExit("no leasehold service found in the Compose file")


if __name__ == "__main__":
    main(*sys.argv[1:])
