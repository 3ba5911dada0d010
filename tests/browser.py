"""Headless Chromium for the tests: find (or install) it, render an HTML file, read back screenshot, DOM and console.

One Chromium run per page gives all three: the screenshot (--screenshot), the DOM after rendering (--dump-dom,
on stdout) and the console (--enable-logging=stderr). Our pages run no script, so any console line at all is a
problem: a script error ("Uncaught ..."), a resource that failed to load, or a Content-Security-Policy refusal.
Chromium logs every console message at its INFO level whatever the message's own level, so the rule cannot be
"errors only". PNGs are decoded with the standard library (zlib and the PNG chunk layout) so the check needs
nothing beyond what the tests already have.
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import tempfile
import zlib
from collections import Counter
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

import pytest

NAMES = ("chromium", "chromium-browser")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--enable-logging=stderr", "--v=0")
RENDER_SECONDS = 60
_install_tried = False


def find_chromium() -> str | None:
    for name in NAMES:
        for candidate in (f"/usr/bin/{name}", shutil.which(name)):
            if candidate and os.access(candidate, os.X_OK):
                return candidate
    return None


def chromium() -> str:
    """The Chromium binary; installs Debian's package once when we are root with apt-get, else skips the test."""
    global _install_tried
    found = find_chromium()
    if found:
        return found
    can_install = hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("apt-get")
    if can_install and not _install_tried:
        _install_tried = True
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update"], env=env, capture_output=True, timeout=600)
        subprocess.run(["apt-get", "install", "-y", "--no-install-recommends", "chromium"], env=env,
                       capture_output=True, timeout=1200)
        found = find_chromium()
        if found:
            return found
    reason = ("Chromium is not installed and could not be installed with apt-get" if can_install else
              "Chromium is not installed (install Debian's 'chromium' package, or run the tests as root with "
              "apt-get available so they install it)")
    pytest.skip(reason)


@dataclass(frozen=True)
class Rendered:
    png: Path
    dom: str                     # the document after rendering
    console: tuple[str, ...]     # every console line Chromium logged
    stderr: str

    @property
    def console_errors(self) -> tuple[str, ...]:
        return tuple(line for line in self.console if "Uncaught" in line or ":CONSOLE" in line)

    @property
    def external_resources(self) -> tuple[str, ...]:
        """What the rendered page loads from anywhere but itself: a file beside it or the network. (Headless
        Chromium does not log a failed load to stderr, so the DOM after rendering is read instead.)"""
        return external_resources(self.dom)


_CONSOLE = re.compile(r"^\[[^\]]*:CONSOLE[^\]]*\].*$|^.*Uncaught .*$", re.MULTILINE)


def render(html: Path, png: Path, *, width: int = 1200, height: int = 1600, fragment: str = "") -> Rendered:
    """Open `html` (with `#fragment` when given) in headless Chromium: screenshot to `png`, return DOM and
    console lines."""
    binary = chromium()
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        done = subprocess.run([binary, *FLAGS, f"--user-data-dir={profile}", "--dump-dom", f"--screenshot={png}",
                               f"--window-size={width},{height}",
                               Path(html).resolve().as_uri() + (f"#{fragment}" if fragment else "")],
                              capture_output=True, text=True, timeout=RENDER_SECONDS)
    if not png.is_file():
        raise AssertionError(f"Chromium wrote no screenshot (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return Rendered(png, done.stdout, tuple(_CONSOLE.findall(done.stderr)), done.stderr)


# ---------------------------------------------------------------------------------------------- PNG


def png_pixels(path: Path) -> tuple[int, int, list[tuple[int, ...]]]:
    """(width, height, pixels) of an 8-bit non-interlaced RGB/RGBA/grey PNG: what Chromium writes."""
    data = Path(path).read_bytes()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path}: not a PNG")
    offset, idat, header = 8, [], None
    while offset < len(data):
        length, kind = struct.unpack(">I4s", data[offset:offset + 8])
        body = data[offset + 8:offset + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
        offset += 12 + length
    if header is None:
        raise ValueError(f"{path}: no IHDR chunk")
    width, height, depth, colour, _, _, interlace = header
    channels = {0: 1, 2: 3, 4: 2, 6: 4}.get(colour)
    if depth != 8 or channels is None or interlace:
        raise ValueError(f"{path}: unsupported PNG (depth {depth}, colour type {colour}, interlace {interlace})")
    raw = zlib.decompress(b"".join(idat))
    stride = width * channels
    pixels: list[tuple[int, ...]] = []
    previous = bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        _unfilter(kind, line, previous, channels)
        pixels.extend(tuple(line[x:x + channels]) for x in range(0, stride, channels))
        previous = line
    return width, height, pixels


def _unfilter(kind: int, line: bytearray, previous: bytearray, bpp: int) -> None:
    if kind == 0:
        return
    for i in range(len(line)):
        left = line[i - bpp] if i >= bpp else 0
        up = previous[i]
        if kind == 1:
            line[i] = (line[i] + left) & 0xFF
        elif kind == 2:
            line[i] = (line[i] + up) & 0xFF
        elif kind == 3:
            line[i] = (line[i] + (left + up) // 2) & 0xFF
        elif kind == 4:
            up_left = previous[i - bpp] if i >= bpp else 0
            p = left + up - up_left
            pa, pb, pc = abs(p - left), abs(p - up), abs(p - up_left)
            predictor = left if pa <= pb and pa <= pc else (up if pb <= pc else up_left)
            line[i] = (line[i] + predictor) & 0xFF
        else:
            raise ValueError(f"unknown PNG filter {kind}")


@dataclass(frozen=True)
class PixelStats:
    width: int
    height: int
    colours: int            # distinct colours
    ink: float              # share of pixels that are not (near) white
    counts: Counter

    def share(self, predicate) -> float:
        return sum(n for colour, n in self.counts.items() if predicate(colour)) / (self.width * self.height)


def pixel_stats(path: Path) -> PixelStats:
    width, height, pixels = png_pixels(path)
    counts = Counter(p[:3] for p in pixels)
    white = sum(n for colour, n in counts.items() if min(colour) >= 245)
    return PixelStats(width, height, len(counts), 1 - white / len(pixels), counts)


# ---------------------------------------------------------------------------------------------- DOM


class Element:
    """A parsed element: tag, attributes, children and text; enough to query a rendered page in tests."""

    def __init__(self, tag: str, attrs: dict[str, str], parent: "Element | None") -> None:
        self.tag, self.attrs, self.parent = tag, attrs, parent
        self.content: list[Element | str] = []   # children and text, in document order

    @property
    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())

    @property
    def children(self) -> list["Element"]:
        return [c for c in self.content if isinstance(c, Element)]

    @property
    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text for c in self.content)

    def iter(self):
        yield self
        for child in self.children:
            yield from child.iter()

    def find_all(self, tag: str | None = None, cls: str | None = None, **attrs: str) -> list["Element"]:
        return [e for e in self.iter() if (tag is None or e.tag == tag) and (cls is None or cls in e.classes)
                and all(e.attrs.get(k.replace("_", "-")) == v for k, v in attrs.items())]


_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("#document", {}, None)
        self.current = self.root

    def handle_starttag(self, tag, attrs):
        element = Element(tag, {k: v or "" for k, v in attrs}, self.current)
        self.current.content.append(element)
        if tag not in _VOID:
            self.current = element

    def handle_endtag(self, tag):
        node = self.current
        while node is not None and node.tag != tag:
            node = node.parent
        if node is not None and node.parent is not None:
            self.current = node.parent

    def handle_data(self, data):
        self.current.content.append(data)


def parse_dom(html: str) -> Element:
    builder = _Builder()
    builder.feed(html)
    builder.close()
    return builder.root


_LOADED_BY = {"img": "src", "script": "src", "iframe": "src", "embed": "src", "source": "src", "audio": "src",
              "video": "src", "track": "src", "input": "src", "object": "data", "link": "href"}
_CSS_URL = re.compile(r"url\(\s*['\"]?(?!data:|#)([^'\")]+)", re.IGNORECASE)


def external_resources(html: str) -> tuple[str, ...]:
    """Every URL the page loads that is not a data: URI: element sources, stylesheets, CSS url()s."""
    found = []
    root = parse_dom(html)
    for element in root.iter():
        attribute = _LOADED_BY.get(element.tag)
        if element.tag == "link" and "stylesheet" not in element.attrs.get("rel", "") \
                and "icon" not in element.attrs.get("rel", ""):
            attribute = None
        value = element.attrs.get(attribute or "", "")
        if value and not value.startswith("data:"):
            found.append(value)
        found += _CSS_URL.findall(element.attrs.get("style", ""))
        if element.tag == "style":
            found += _CSS_URL.findall(element.text)
    return tuple(found)
