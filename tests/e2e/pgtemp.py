"""A throw-away PostgreSQL cluster for the end-to-end tests, started as
tests/unit/test_a2b_store.c starts one: initdb and pg_ctl from bindir() in a
temporary directory, on a given loopback port, fsync off, trust
authentication for user postgres; as the postgres user when the tests run as
root (initdb refuses root). conftest.py's pg_cluster fixture and start_pg()
are the way in; they skip, or fail under CI=true, with PgUnavailable's
reason.

    pg = PgCluster(port)         # raises PgUnavailable (why) if impossible
    pg.uri("db")                 # postgresql://postgres@127.0.0.1:PORT/db
    pg.psql("SELECT 1", db="postgres")
    pg.stop("fast")              # default immediate; pg.start() restarts
    pg.destroy()                 # stop and remove the directory
"""

import os
import pwd
import shutil
import subprocess
import tempfile

import serverlog

HOST = "127.0.0.1"


class PgUnavailable(Exception):
    """No PostgreSQL server can be started here; the message says why."""


def bindir():
    """The directory of initdb, pg_ctl and psql: $SHOOTOUT_PG_BIN, else what
    `pg_config --bindir` says (on Debian 12 /usr/lib/postgresql/15/bin, from
    libpq-dev's pg_config and postgresql-client's alike)."""
    env = os.environ.get("SHOOTOUT_PG_BIN")
    if env:
        where = "SHOOTOUT_PG_BIN"
        d = env
    else:
        where = "pg_config --bindir"
        try:
            r = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True, timeout=30)
        except OSError as e:
            raise PgUnavailable("no pg_config (libpq-dev) to find PostgreSQL with: %s; "
                                "set SHOOTOUT_PG_BIN" % e)
        if r.returncode != 0:
            raise PgUnavailable("pg_config --bindir failed: %s" % r.stderr.strip())
        d = r.stdout.strip()
    if not os.access(os.path.join(d, "initdb"), os.X_OK):
        raise PgUnavailable("no initdb in %s (from %s): install postgresql, or set SHOOTOUT_PG_BIN"
                            % (d, where))
    return d


class PgCluster:
    def __init__(self, port):
        self.bin = bindir()
        self.port = port
        as_postgres = os.geteuid() == 0
        self._prefix = ["runuser", "-u", "postgres", "--"] if as_postgres else []
        self.dir = tempfile.mkdtemp(prefix="shootout_pg_")
        self.data = os.path.join(self.dir, "data")
        self.log = os.path.join(self.dir, "server.log")
        try:
            if as_postgres:
                try:
                    pw = pwd.getpwnam("postgres")
                except KeyError:
                    raise PgUnavailable("running as root without a postgres user")
                os.chown(self.dir, pw.pw_uid, pw.pw_gid)
            r = self._run(["initdb", "-D", self.data, "-A", "trust", "-U", "postgres", "--no-sync",
                           "-E", "UTF8", "--locale=C"], timeout=120)
            if r.returncode != 0:
                raise PgUnavailable("initdb failed: %s" % r.stdout[-500:].strip())
            self.start()
        except BaseException:
            shutil.rmtree(self.dir, ignore_errors=True)
            raise

    def _run(self, args, timeout=90):
        try:
            r = subprocess.run(self._prefix + [os.path.join(self.bin, args[0])] + args[1:],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise PgUnavailable("%s took over %d s" % (args[0], timeout))
        r.stdout = r.stdout.decode(errors="replace")
        return r

    def start(self):
        """Starts the server and waits until it accepts connections;
        PgUnavailable, with the end of its log, if it does not."""
        opts = "-p %d -k %s -c listen_addresses=%s -c fsync=off" % (self.port, self.dir, HOST)
        r = self._run(["pg_ctl", "-D", self.data, "-l", self.log, "-w", "-t", "60", "-o", opts, "start"])
        if r.returncode != 0:
            raise PgUnavailable("the server did not start: %s %s" % (r.stdout[-300:].strip(),
                                                                      self.server_log(500).strip()))

    def stop(self, mode="immediate"):
        r = self._run(["pg_ctl", "-D", self.data, "-m", mode, "-w", "stop"], timeout=60)
        if r.returncode != 0:
            raise RuntimeError("pg_ctl stop failed: %s" % r.stdout)

    def destroy(self):
        """Stops the server if it runs and removes the cluster."""
        try:
            self._run(["pg_ctl", "-D", self.data, "-m", "immediate", "-w", "stop"], timeout=60)
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)

    def postmaster_pid(self):
        with open(os.path.join(self.data, "postmaster.pid")) as f:
            return int(f.readline())

    def server_log(self, last=None):
        return serverlog.read(self.log, last)

    def uri(self, db="postgres"):
        return "postgresql://postgres@%s:%d/%s" % (HOST, self.port, db)

    def psql(self, sql, db="postgres", timeout=60):
        """Runs sql (one string, may hold many statements) with ON_ERROR_STOP;
        returns the output, raises on failure."""
        r = subprocess.run([os.path.join(self.bin, "psql"), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
                            "-h", HOST, "-p", str(self.port), "-U", "postgres", "-d", db],
                           input=sql.encode(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
        out = r.stdout.decode(errors="replace")
        if r.returncode != 0:
            raise RuntimeError("psql failed: %s" % out)
        return out
