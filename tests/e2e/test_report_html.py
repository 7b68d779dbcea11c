"""The HTML report in a real browser: headless Chromium (Debian's `chromium`)
renders the report of real runs (`shootout run --quick --only mqtt`, a
closed run long enough for a per-second series, one too short for it, a
run that fails, and a race of contenders orders of magnitude apart: a slow
Python broker and one that dies mid-run, from tests/e2e/data/fake_peers).
The page logs nothing to the console (its Content Security Policy turns any
script or load into a console error), its screenshot is not blank, and its
SVG text has SI-prefixed ticks; bar axes turn logarithmic when the bars
span more than 20x, every chart's legend names every contender, failed and
skipped cells are marked. The checks themselves are checked: a page with a
script logs, a white page is blank.

SHOOTOUT_REPORT_PNG=docs/img/report.png makes the README's screenshot from
the `shootout run` report on the way."""

import os
import re
import shutil
import struct
import subprocess
import zlib

import pytest

from conftest import HERE, HOST, MOSQUITTO_BIN, SANITIZER_MARKERS, SHOOTOUT_BIN, free_port, need, require_shootout

pytestmark = pytest.mark.shootout_only

CHROMIUM = shutil.which("chromium")
HAVE_MOSQUITTO = bool(shutil.which("mosquitto")) or os.access(MOSQUITTO_BIN, os.X_OK)
# Small enough for the pure-Python PNG decoder to read in about a second.
CHECK_SIZE = (800, 1400)
CHECK_SCALE = 0.5
SI_TICK = re.compile(r'<text class="tick"[^>]*>-?[0-9.]+(k|M|G| [nµm]s)</text>')


FAKES = os.path.join(HERE, "data", "fake_peers")
# A contender about 20 to 50 times slower than ours: the fakes' Python broker, not told to die.
SLOW_START = """#!/bin/bash
set -euo pipefail
[ "${1:-}" = --version ] && { echo "fake slow broker 0.1 (Python)"; exit 0; }
port=""
while [ $# -gt 0 ]; do case "$1" in --port) port=$2; shift 2 ;; *) shift ;; esac; done
exec /usr/bin/python3 %s/fake_mqtt.py --port "$port"
""" % FAKES


def shootout(*args, cwd, timeout=50, env=None):
    require_shootout()
    p = subprocess.run([SHOOTOUT_BIN] + [str(a) for a in args], cwd=cwd, stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, timeout=timeout, env=env)
    for marker in SANITIZER_MARKERS:
        assert marker not in p.stderr, "sanitizer report:\n" + p.stderr
    return p


def render(page, png, tmp_path, size=CHECK_SIZE, scale=CHECK_SCALE):
    """Screenshots page into png with headless Chromium; returns the
    console's messages (Chromium logs each as an INFO:CONSOLE line)."""
    need(CHROMIUM, "chromium is not installed (scripts/install-deps.sh)")
    profile = tmp_path / ("chromium-profile-" + png.stem)
    p = subprocess.run([CHROMIUM, "--headless", "--disable-gpu", "--no-sandbox", "--hide-scrollbars",
                        "--no-first-run", "--user-data-dir=%s" % profile, "--enable-logging=stderr",
                        "--v=0", "--window-size=%d,%d" % size, "--force-device-scale-factor=%g" % scale,
                        "--screenshot=%s" % png, "file://%s" % page],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=50)
    assert png.exists(), "no screenshot (exit %d):\n%s" % (p.returncode, p.stderr[-3000:])
    return [line for line in p.stderr.splitlines() if ":CONSOLE" in line]


def png_pixels(path):
    """(width, height, bytes per pixel, rows) of an 8-bit RGB or RGBA PNG,
    its scanlines unfiltered."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, ihdr = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, color, _, _, interlace = ihdr
    assert depth == 8 and color in (2, 6) and interlace == 0, ihdr
    bpp = 3 if color == 2 else 4
    raw, stride = zlib.decompress(idat), width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if kind == 2:
            line = bytearray((a + b) & 255 for a, b in zip(line, prev))
        elif kind in (1, 3, 4):
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                up, corner = prev[i], prev[i - bpp] if i >= bpp else 0
                if kind == 1:
                    pred = left
                elif kind == 3:
                    pred = (left + up) >> 1
                else:
                    pa, pb, pc = abs(up - corner), abs(left - corner), abs(left + up - 2 * corner)
                    pred = left if pa <= pb and pa <= pc else up if pb <= pc else corner
                line[i] = (line[i] + pred) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, bpp, rows


def ink(path):
    """The share of pixels that differ from the most common one (the page's
    background), and how many colours there are."""
    width, height, bpp, rows = png_pixels(path)
    counts = {}
    for row in rows:
        for x in range(0, width * bpp, bpp):
            px = row[x:x + 3]
            counts[px] = counts.get(px, 0) + 1
    background = max(counts.values())
    return 1 - background / (width * height), len(counts)


def assert_renders_clean(page, tmp_path):
    png = tmp_path / (page.stem + ".png")
    console = render(page, png, tmp_path)
    assert console == [], "the page logged to the console:\n" + "\n".join(console)
    share, colours = ink(png)
    assert share > 0.02 and colours > 16, "blank screenshot: %.3f of pixels drawn, %d colours" % (share, colours)


def test_checks_catch_console_errors_and_blank_pages(tmp_path):
    html = tmp_path / "report.html"
    # The head of a real report (a failed run's: quick), so that the pages
    # checked here have the report's Content Security Policy.
    shootout("bench", "mqtt-load", "--target", "%s:%d" % (HOST, free_port()), "--conns", "2",
             "--messages", "1", "--timeout", "1", "--html", html, cwd=tmp_path)
    head = html.read_text().split("<title>")[0]
    assert "Content-Security-Policy" in head
    bad = tmp_path / "bad.html"
    bad.write_text(head + "<title>x</title></head><body><p>x</p><script>1</script></body></html>")
    assert any("Content Security Policy" in line for line in render(bad, tmp_path / "bad.png", tmp_path))
    white = tmp_path / "white.html"
    white.write_text(head + "<title>x</title></head><body></body></html>")
    assert render(white, tmp_path / "white.png", tmp_path) == []
    assert ink(tmp_path / "white.png")[0] == 0


def test_run_report_renders_with_si_ticks_and_spectra(tmp_path):
    need(CHROMIUM, "chromium is not installed (scripts/install-deps.sh)")
    # Mosquitto only: the other contenders would take the test past its time.
    peer = ("--peers", "mosquitto") if HAVE_MOSQUITTO else ("--no-peer",)
    p = shootout("run", "--quick", "--runs", "2", "--scale", "0.05", "--only", "mqtt", *peer,
                 "--json", tmp_path / "r.json", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    page = tmp_path / "shootout-report.html"
    html = page.read_text()
    assert "<script" not in html and "src=" not in html and "href=" not in html
    ticks = SI_TICK.findall(html)
    assert "k" in ticks or "M" in ticks, "no k/M throughput ticks"
    assert " µs" in ticks or " ms" in ticks, "no µs/ms latency or CPU ticks"
    assert not re.search(r'class="tick"[^>]*>[0-9]{5,}<', html), "a tick without an SI prefix"
    # mqtt-ping has latency: a spectrum per grid point, p50 .. p99.99.
    ping = html.split("<h2>mqtt-ping</h2>")[1]
    assert ping.count("Latency by percentile") == 3
    assert ">p50</text>" in ping and ">p99.99</text>" in ping
    assert_renders_clean(page, tmp_path)
    shot = os.environ.get("SHOOTOUT_REPORT_PNG")
    if shot:  # the README's picture: the top of the page, full size
        assert render(page, tmp_path / "shot.png", tmp_path, size=(860, 1100), scale=1) == []
        shutil.copy(tmp_path / "shot.png", shot)


def figures(html):
    """{caption: the figure's HTML} of every chart of a page section."""
    out = {}
    for fig in html.split("<figure><figcaption>")[1:]:
        caption, rest = fig.split("</figcaption>", 1)
        out[caption] = rest.split("</figure>")[0]
    return out


def legend(fig):
    """The names in a figure's legend, in order, each with its note."""
    items = re.findall(r'<li><span class="swatch"[^>]*></span>(.*?)</li>', fig.split("</ul>")[0])
    return [re.sub(r"<[^>]+>", "", item) for item in items]


def test_contenders_far_apart_get_log_axes_and_full_legends(tmp_path):
    need(CHROMIUM, "chromium is not installed (scripts/install-deps.sh)")
    peers = tmp_path / "peers"
    peers.mkdir()
    os.symlink(os.path.join(FAKES, "works"), peers / "mosquitto")  # our broker: as fast as ours
    os.symlink(os.path.join(FAKES, "dies"), peers / "rabbitmq")    # dies on its 150th connection
    (peers / "aedes").mkdir()
    (peers / "aedes" / "start").write_text(SLOW_START)
    os.chmod(peers / "aedes" / "start", 0o755)
    env = dict(os.environ, SHOOTOUT_PEERS_DIR=str(peers), FAKE_SHOOTOUT_BIN=SHOOTOUT_BIN)
    p = shootout("run", "--quick", "--runs", "1", "--scale", "0.05", "--timeout", "5", "--only", "mqtt",
                 "--peers", "mosquitto,rabbitmq,aedes", "--json", tmp_path / "r.json", cwd=tmp_path, env=env,
                 timeout=120)
    assert p.returncode == 0, p.stderr
    page = tmp_path / "shootout-report.html"
    html = page.read_text()
    load = html.split("<h2>mqtt-load</h2>")[1].split("<section>")[0]
    figs = figures(load)
    # Ours hundreds of k msg/s, the Python broker a few k, over four grid points: far over 20x.
    throughput = figs["Throughput (msg/s, log scale)"]
    assert ">log scale</text>" in throughput
    ticks = re.findall(r'<text class="tick"[^>]*>([^<]*)</text>', throughput)
    assert "10k" in ticks and "100k" in ticks, ticks
    assert all(re.fullmatch(r"1(0|00)?[kM]?", t) for t in ticks), "not decades: %s" % ticks
    bars = throughput.count('class="bar"')
    assert bars >= 8 and throughput.count('class="barval') == bars  # every bar says its value
    # Every chart names every contender, in the table's order; rabbitmq died at
    # 500c or before, so some chart marks it and its cells after are not run.
    for caption, fig in figs.items():
        names = [n.split(" (")[0] for n in legend(fig)]
        assert names == ["shootout", "mosquitto", "rabbitmq", "aedes"], (caption, names)
    assert '<g class="failed">' in throughput and '<td class="failed"' in load
    assert "rabbitmq, 1000c: not run" in throughput and ">n/a</text>" in throughput
    assert any("rabbitmq (not run)" in legend(fig) for fig in figs.values())
    assert_renders_clean(page, tmp_path)


def test_series_and_failed_runs_render(broker, tmp_path):
    # A closed run of about two seconds, sampled each second.
    page = tmp_path / "ping.html"
    p = shootout("bench", "mqtt-ping", "--target", "%s:%d" % (broker.host, broker.port), "--pairs", "10",
                 "--messages", "30000", "--html", page, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    html = page.read_text()
    assert "second by second" in html
    series = re.split(r"Rate \(msg/s\), 10p\d+w, second by second", html)[1].split("</figure>")[0]
    assert series.count("<polyline") == 1 and " s</text>" in series
    assert "no per-second series" not in html
    assert_renders_clean(page, tmp_path)
    # A run of a few milliseconds: a line saying so, not an empty chart.
    short = tmp_path / "short.html"
    p = shootout("bench", "mqtt-ping", "--target", "%s:%d" % (broker.host, broker.port), "--pairs", "2",
                 "--messages", "10", "--html", short, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    text = short.read_text()
    assert re.search(r"2p\d+w: the longest run took [0-9.]+ [mµ]s, shorter than 1 s: no per-second series.", text)
    assert "second by second" not in text
    assert_renders_clean(short, tmp_path)
    # Nothing listens: the run fails, and the page says so where its figures would be.
    failed = tmp_path / "failed.html"
    p = shootout("bench", "mqtt-load", "--target", "%s:%d" % (HOST, free_port()), "--conns", "2",
                 "--messages", "1", "--timeout", "1", "--html", failed, cwd=tmp_path)
    assert p.returncode != 0
    text = failed.read_text()
    assert '<td class="failed"' in text and "failed: " in text
    assert_renders_clean(failed, tmp_path)
