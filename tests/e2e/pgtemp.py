"""A throw-away PostgreSQL cluster for end-to-end tests, started the way
tests/unit/test_a2b_store.c starts one: initdb and pg_ctl from
/usr/lib/postgresql/15/bin in a temporary directory, on a free loopback
port, fsync off, trust authentication for user postgres; as the postgres
user when the tests run as root (initdb refuses root).

    pg = PgTemp.start()          # None (and pg_skip_reason()) if impossible
    pg.uri("postgres")           # postgres://postgres@127.0.0.1:PORT/postgres
    pg.psql("SELECT 1", db="postgres")
    pg.stop()                    # immediate stop; pg.start_again() restarts
    pg.destroy()                 # stop and remove the directory
"""

import os
import pwd
import shutil
import socket
import subprocess
import tempfile

PG_BIN = os.environ.get("PG_BIN", "/usr/lib/postgresql/15/bin")
HOST = "127.0.0.1"
_skip_reason = ""


def pg_skip_reason():
    """Why the last PgTemp.start() returned None."""
    return _skip_reason


def _free_port():
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


class PgTemp:
    def __init__(self, base, port, as_postgres):
        self.base = base
        self.port = port
        self.data = os.path.join(base, "data")
        self.log = os.path.join(base, "server.log")
        self._prefix = ["runuser", "-u", "postgres", "--"] if as_postgres else []

    def _run(self, args, timeout=60, **kw):
        return subprocess.run(self._prefix + args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              timeout=timeout, **kw)

    @classmethod
    def start(cls):
        """A running cluster, or None (see pg_skip_reason())."""
        global _skip_reason
        if not os.access(os.path.join(PG_BIN, "initdb"), os.X_OK):
            _skip_reason = "no %s/initdb" % PG_BIN
            return None
        as_postgres = os.geteuid() == 0
        base = tempfile.mkdtemp(prefix="pgtemp_")
        if as_postgres:
            try:
                pw = pwd.getpwnam("postgres")
            except KeyError:
                shutil.rmtree(base, ignore_errors=True)
                _skip_reason = "running as root without a postgres user"
                return None
            os.chown(base, pw.pw_uid, pw.pw_gid)
        pg = cls(base, _free_port(), as_postgres)
        r = pg._run([os.path.join(PG_BIN, "initdb"), "-D", pg.data, "-A", "trust", "-U", "postgres",
                     "--no-sync", "-E", "UTF8", "--locale=C"], timeout=120)
        if r.returncode != 0:
            _skip_reason = "initdb failed: %s" % r.stdout.decode(errors="replace")[-500:]
            shutil.rmtree(base, ignore_errors=True)
            return None
        if not pg.start_again():
            _skip_reason = "the server did not start: %s" % pg.server_log()[-500:]
            pg.destroy()
            return None
        return pg

    def start_again(self):
        opts = "-p %d -k %s -c listen_addresses=%s -c fsync=off" % (self.port, self.base, HOST)
        r = self._run([os.path.join(PG_BIN, "pg_ctl"), "-D", self.data, "-l", self.log, "-w", "-t", "60",
                       "-o", opts, "start"], timeout=90)
        return r.returncode == 0

    def stop(self, mode="immediate"):
        self._run([os.path.join(PG_BIN, "pg_ctl"), "-D", self.data, "-m", mode, "-w", "stop"], timeout=60)

    def destroy(self):
        try:
            self.stop()
        finally:
            shutil.rmtree(self.base, ignore_errors=True)

    def server_log(self):
        try:
            with open(self.log, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def uri(self, db="postgres"):
        return "postgres://postgres@%s:%d/%s" % (HOST, self.port, db)

    def psql(self, sql, db="postgres", timeout=60):
        """Runs sql (one string, may hold many statements) with ON_ERROR_STOP;
        returns the output, raises on failure."""
        r = subprocess.run([os.path.join(PG_BIN, "psql"), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
                            "-h", HOST, "-p", str(self.port), "-U", "postgres", "-d", db],
                           input=sql.encode(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
        out = r.stdout.decode(errors="replace")
        if r.returncode != 0:
            raise RuntimeError("psql failed: %s" % out)
        return out
