"""The HTML report in a real browser: headless Chromium (Debian's `chromium`)
renders the report of real runs (`shootout run --quick --only mqtt`, a
closed run long enough for a per-second series, a run that fails). The page
logs nothing to the console (its Content Security Policy turns any script or
load into a console error), its screenshot is not blank, and its SVG text
has SI-prefixed ticks. The checks themselves are checked: a page with a
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

from conftest import HOST, MOSQUITTO_BIN, SANITIZER_MARKERS, SHOOTOUT_BIN, free_port, need, require_shootout

pytestmark = pytest.mark.shootout_only

CHROMIUM = shutil.which("chromium")
HAVE_MOSQUITTO = bool(shutil.which("mosquitto")) or os.access(MOSQUITTO_BIN, os.X_OK)
# Small enough for the pure-Python PNG decoder to read in about a second.
CHECK_SIZE = (800, 1400)
CHECK_SCALE = 0.5
SI_TICK = re.compile(r'<text class="tick"[^>]*>-?[0-9.]+(k|M|G| [nµm]s)</text>')


def shootout(*args, cwd, timeout=50):
    require_shootout()
    p = subprocess.run([SHOOTOUT_BIN] + [str(a) for a in args], cwd=cwd, stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, timeout=timeout)
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
    assert_renders_clean(page, tmp_path)
    # Nothing listens: the run fails, and the page says so where its figures would be.
    failed = tmp_path / "failed.html"
    p = shootout("bench", "mqtt-load", "--target", "%s:%d" % (HOST, free_port()), "--conns", "2",
                 "--messages", "1", "--timeout", "1", "--html", failed, cwd=tmp_path)
    assert p.returncode != 0
    text = failed.read_text()
    assert '<td class="failed"' in text and "failed: " in text
    assert_renders_clean(failed, tmp_path)
