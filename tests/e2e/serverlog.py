"""A throw-away server's log file as text, for the fixtures that start one
(natsd.py's nats-server, pgtemp.py's PostgreSQL) to put its end into the
message when the server does not come up, and for tests to show it when an
assertion about the server fails."""


def read(path, last=None):
    """The text of the log at path (undecodable bytes replaced), only its
    last `last` characters if given; "" while there is none: the server has
    not written it yet, or the fixture's directory is already gone."""
    try:
        with open(path, errors="replace") as f:
            text = f.read()
    except OSError:
        return ""
    return text[-last:] if last else text
