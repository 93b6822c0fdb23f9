"""Shared fixtures: the shipped synthetic clinic dataset, the reference-data folder, and a
PostgreSQL server for the ledger tests."""

import glob
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

#: The AppTest fixtures (``apptest_workarounds``, ``ledger_path``, ``app``) of the page tests.
pytest_plugins = ["tests.support.apptest_support"]

REPO_ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def clinic_dataset():
    """sample_data/clinic loaded with dpcore.data.loading.load_dataset (public demo data)."""
    from dpcore.data.loading import load_dataset

    return load_dataset(REPO_ROOT / "sample_data" / "clinic")


@pytest.fixture(scope="session")
def shared_data_dir():
    """The reference datasets folder ../shared/data next to the repository (present in CI)."""
    path = (REPO_ROOT / ".." / "shared" / "data").resolve()
    if not path.is_dir():
        pytest.skip(f"reference data folder {path} is absent (a fresh checkout has no "
                    f"../shared/data; CI provides it)")
    return path


@pytest.fixture(scope="session", autouse=True)
def compiled_kernels():
    """Compile every miner's kernels once per test session, before the first test.

    The suite starts from an empty numba cache (tests/run.sh), so this is also the cold
    start-up check; afterwards no test pays for compilation, and timings stay comparable.
    """
    from dpcore.redescriptions.warmup import warm_kernels

    return warm_kernels()


@pytest.fixture(autouse=True)
def real_main_module():
    """Put back ``sys.modules["__main__"]`` after every test.

    Streamlit's script runner (AppTest included) installs the page script as ``__main__`` and
    leaves it there; a later test that starts ``spawn`` processes would then make every child
    re-run that temporary page script (``NameError: __args``) instead of pytest's entry point.
    """
    main = sys.modules["__main__"]
    yield
    sys.modules["__main__"] = main


# --------------------------------------------------------------------------- PostgreSQL ledger

def _running_in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


class PostgresServer:
    """A throw-away PostgreSQL server for the test session (Debian's ``postgresql`` package).

    ``initdb`` and ``pg_ctl`` from ``/usr/lib/postgresql/*/bin`` build and start a cluster in
    a temporary folder, listening on 127.0.0.1 at a free port (trust authentication, no
    fsync: a test server). ``initdb`` refuses to run as root, so as root the cluster belongs
    to the ``postgres`` system user (created by the package) and is run through ``runuser``.
    """

    SUPERUSER = "dprm"

    def __init__(self):
        bins = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"),
                      key=lambda p: int(Path(p).parent.parent.name)
                      if Path(p).parent.parent.name.isdigit() else 0)
        if not bins:
            raise RuntimeError("no /usr/lib/postgresql/*/bin/pg_ctl: install Debian's "
                               "postgresql package (tests/run.sh does)")
        self.bin = Path(bins[-1]).parent
        self.folder = Path(tempfile.mkdtemp(prefix="dprm-pg-"))
        self.prefix: list[str] = []
        if os.geteuid() == 0:
            try:
                owner = pwd.getpwnam("postgres")
            except KeyError:
                raise RuntimeError("running as root and there is no 'postgres' user to run "
                                   "the server as") from None
            runuser = shutil.which("runuser")
            if runuser is None:
                raise RuntimeError("running as root and runuser is missing")
            os.chown(self.folder, owner.pw_uid, owner.pw_gid)
            self.prefix = [runuser, "-u", "postgres", "--"]
        self.data = self.folder / "data"
        self._run("initdb", "-D", str(self.data), "-U", self.SUPERUSER, "--auth=trust",
                  "--no-sync", "--encoding=UTF8", "--locale=C.UTF-8")
        self.port = self._start()
        self._counter = itertools.count()
        self._admin = f"postgresql://{self.SUPERUSER}@127.0.0.1:{self.port}/postgres"

    def _run(self, tool: str, *args: str) -> None:
        done = subprocess.run([*self.prefix, str(self.bin / tool), *args], capture_output=True,
                              text=True, timeout=120, cwd=self.folder)
        if done.returncode != 0:
            raise RuntimeError(f"{tool} failed ({done.returncode}): "
                               f"{(done.stderr or done.stdout).strip()[-2000:]}")

    def _start(self) -> int:
        last = None
        for _ in range(5):
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", 0))
                port = probe.getsockname()[1]
            options = (f"-p {port} -k {self.folder} -c listen_addresses=127.0.0.1 "
                       "-c fsync=off -c synchronous_commit=off -c full_page_writes=off "
                       "-c max_connections=300 -c shared_buffers=32MB")
            try:
                self._run("pg_ctl", "-D", str(self.data), "-l", str(self.folder / "server.log"),
                          "-o", options, "-w", "-t", "60", "start")
                return port
            except RuntimeError as exc:          # the port was taken meanwhile: try another
                last = exc
        raise RuntimeError(f"the PostgreSQL server did not start: {last}")

    def new_database(self) -> str:
        """A fresh, empty database; its URL (``postgresql://dprm@127.0.0.1:PORT/NAME``)."""
        import psycopg

        name = f"ledger_{os.getpid()}_{next(self._counter)}"
        with psycopg.connect(self._admin, autocommit=True) as con:
            con.execute(f'CREATE DATABASE "{name}"')      # a copy of the empty template1
        return f"postgresql://{self.SUPERUSER}@127.0.0.1:{self.port}/{name}"

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_server():
    """The session's PostgreSQL server; skips (outside CI) or fails (in CI) if it cannot start."""
    try:
        server = PostgresServer()
    except Exception as exc:  # noqa: BLE001 - any reason the server cannot run is reported
        if _running_in_ci():
            pytest.fail(f"PostgreSQL ledger tests need a server, and it did not start: {exc}")
        pytest.skip(f"no PostgreSQL server for the ledger tests: {exc}")
    # A PostgreSQL ledger refuses charges without a results store; every test database
    # (and every process a test starts) shares this one, as an operator's app servers would.
    results = Path(tempfile.mkdtemp(prefix="dprm-results-"))
    before = os.environ.get("DPRM_RESULTS_DIR")
    os.environ["DPRM_RESULTS_DIR"] = str(results)
    yield server
    if before is None:
        os.environ.pop("DPRM_RESULTS_DIR", None)
    else:
        os.environ["DPRM_RESULTS_DIR"] = before
    shutil.rmtree(results, ignore_errors=True)
    server.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def ledger_location(request, tmp_path):
    """A new, empty ledger location on each backend: a SQLite file or a fresh PostgreSQL
    database of the session's server (the same tests run on both)."""
    if request.param == "sqlite":
        return tmp_path / "ledger.sqlite"
    return request.getfixturevalue("postgres_server").new_database()


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """Print the privacy mutation score (tests/dpcore/privacy/test_privacy_mutants.py) even
    under ``-q``."""
    import sys

    module = sys.modules.get("tests.dpcore.privacy.test_privacy_mutants")
    line = config.stash.get(module.SCORE_KEY, None) if module else None
    if line:
        terminalreporter.write_sep("=", line)
