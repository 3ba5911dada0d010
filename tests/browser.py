"""Headless Chromium for the tests: find (or install) it, render an HTML file, read back screenshot, DOM and console.

One Chromium per test module, driven over the DevTools protocol on a pipe (--remote-debugging-pipe: JSON
messages ended by a NUL byte on fds 3 and 4), so a page costs a navigation, not a browser start (0.1 s of CPU
against 1.2 s). Pages open one after another in one tab, through about:blank, and each gives all three: the
screenshot (Page.captureScreenshot of a viewport of the asked size; 0.3 s of CPU, so only where a test looks
at pixels), the DOM after the load event (document.documentElement.outerHTML, what --dump-dom prints) and
the console: what the page logged, its uncaught exceptions, and the browser's own messages about it (a failed
load, a Content-Security-Policy refusal). Our pages run no script beyond sorting a table, so any console line
at all is a problem. Screenshots are read with Pillow (the [test] extra).
"""

from __future__ import annotations

import atexit
import base64
import fcntl
import json
import os
import re
import select
import shutil
import subprocess
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, Callable

import pytest
from PIL import Image

NAMES = ("chromium", "chromium-browser")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--remote-debugging-pipe")
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
        # Both within the test's 900 s net (pytest-timeout ends the whole run past it): an install slower than
        # that skips the browser tests with the reason below instead.
        try:
            subprocess.run(["apt-get", "update"], env=env, capture_output=True, timeout=300)
            subprocess.run(["apt-get", "install", "-y", "--no-install-recommends", "chromium"], env=env,
                           capture_output=True, timeout=500)
        except subprocess.TimeoutExpired:
            pass
        found = find_chromium()
        if found:
            return found
    reason = ("Chromium is not installed and could not be installed with apt-get" if can_install else
              "Chromium is not installed (install Debian's 'chromium' package, or run the tests as root with "
              "apt-get available so they install it)")
    pytest.skip(reason)


@dataclass(frozen=True)
class Rendered:
    png: Path | None             # the screenshot, if one was asked for
    dom: str                     # the document after rendering
    console: tuple[str, ...]     # every console line: the page's, its uncaught exceptions, the browser's about it
    measured: Any = None         # the value of the `measure` expression, evaluated in the page after it loaded

    @property
    def console_errors(self) -> tuple[str, ...]:
        return self.console

    @property
    def external_resources(self) -> tuple[str, ...]:
        """What the rendered page loads from anywhere but itself: a file beside it or the network (read from
        the DOM after rendering, whether the load failed or not)."""
        return external_resources(self.dom)


def _console_line(message: dict[str, Any]) -> str | None:
    """The console line a DevTools event stands for, or None for an event that is not one."""
    method, params = message.get("method"), message.get("params", {})
    if method == "Runtime.exceptionThrown":
        details = params["exceptionDetails"]
        return f"{details.get('text', '')} {details.get('exception', {}).get('description', '')}".strip()
    if method == "Runtime.consoleAPICalled":
        words = [str(a.get("value", a.get("description", ""))) for a in params.get("args", [])]
        return f"[CONSOLE:{params.get('type')}] {' '.join(words)}"
    if method == "Log.entryAdded" and params["entry"].get("level") != "verbose":
        entry = params["entry"]
        return f"[{entry.get('source')}:{entry.get('level')}] {entry.get('text')} {entry.get('url', '')}".strip()
    return None


def _high(pipe: tuple[int, int]) -> tuple[int, int]:
    """The pipe's ends moved to descriptors above 9 (close-on-exec), so the shell's `3<&N 4>&M` cannot
    overwrite one end with the other."""
    moved = tuple(fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in pipe)
    for fd in pipe:
        os.close(fd)
    return moved[0], moved[1]


class Browser:
    """One headless Chromium, spoken to over the DevTools pipe; closed by close() (or at exit)."""

    def __init__(self) -> None:
        self.profile = tempfile.mkdtemp(prefix="chromium-profile-")
        self.log = tempfile.TemporaryFile()      # Chromium's stderr, quoted when it stops answering
        to_browser, self._commands = _high(os.pipe())
        self._replies, from_browser = _high(os.pipe())
        # Chromium reads fd 3 and writes fd 4: bash puts the pipes there (no preexec_fn in a threaded process;
        # dash takes one-digit descriptors only).
        self.process = subprocess.Popen(
            ["bash", "-c", f'exec "$@" 3<&{to_browser} 4>&{from_browser} {to_browser}<&- {from_browser}>&-',
             "sh", chromium(), *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
            pass_fds=(to_browser, from_browser), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=self.log)
        os.close(to_browser)
        os.close(from_browser)
        self._buffer = b""
        self._next = 0
        self._events: list[dict[str, Any]] = []
        self._session: str | None = None

    def _send(self, method: str, params: dict[str, Any] | None = None, session: str | None = None,
              deadline: float | None = None) -> dict[str, Any]:
        self._next += 1
        number = self._next
        message: dict[str, Any] = {"id": number, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        data = json.dumps(message).encode() + b"\0"
        try:
            while data:
                data = data[os.write(self._commands, data):]
        except BrokenPipeError:
            raise AssertionError(self._gone()) from None
        reply = self._wait(lambda m: m.get("id") == number, deadline)
        if "error" in reply:
            raise RuntimeError(f"Chromium refused {method}: {reply['error']}")
        return reply.get("result", {})

    def _wait(self, wanted: Callable[[dict[str, Any]], bool], deadline: float | None) -> dict[str, Any]:
        """The first message `wanted` accepts; every other one is kept as an event."""
        deadline = deadline if deadline is not None else time.monotonic() + RENDER_SECONDS
        while True:
            while b"\0" in self._buffer:
                raw, self._buffer = self._buffer.split(b"\0", 1)
                message = json.loads(raw)
                if wanted(message):
                    return message
                self._events.append(message)
            ready, _, _ = select.select([self._replies], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                raise AssertionError(f"Chromium did not answer within {RENDER_SECONDS} s:\n{self._stderr()}")
            chunk = os.read(self._replies, 1 << 20)
            if not chunk:
                raise AssertionError(self._gone())
            self._buffer += chunk

    def _stderr(self) -> str:
        self.log.seek(0)
        return self.log.read()[-3000:].decode(errors="replace")

    def _gone(self) -> str:
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            pass
        return f"Chromium ended (exit {self.process.poll()}):\n{self._stderr()}"

    def _tab(self, deadline: float) -> str:
        """The session of the one tab every page opens in (made on first use, in a browser context of its own)."""
        if self._session is None:
            context = self._send("Target.createBrowserContext", deadline=deadline)["browserContextId"]
            target = self._send("Target.createTarget", {"url": "about:blank", "browserContextId": context},
                                deadline=deadline)["targetId"]
            session = self._send("Target.attachToTarget", {"targetId": target, "flatten": True},
                                 deadline=deadline)["sessionId"]
            for method in ("Page.enable", "Runtime.enable", "Log.enable"):
                self._send(method, session=session, deadline=deadline)
            self._session = session
        return self._session

    def _open(self, url: str, session: str, deadline: float) -> None:
        navigated = self._send("Page.navigate", {"url": url}, session, deadline)
        if navigated.get("errorText"):
            raise AssertionError(f"Chromium could not open {url}: {navigated['errorText']}")
        self._wait(lambda m: m.get("method") == "Page.loadEventFired" and m.get("sessionId") == session, deadline)

    def render(self, html: Path, png: Path | None, *, width: int = 1200, height: int = 1600,
               fragment: str = "", measure: str = "") -> Rendered:
        deadline = time.monotonic() + RENDER_SECONDS
        session = self._tab(deadline)
        self._send("Emulation.setDeviceMetricsOverride", {"width": width, "height": height, "deviceScaleFactor": 1,
                                                          "mobile": False}, session, deadline)
        # Through an empty page first: the last page's document is gone before this one loads, and a page
        # opened again with another #fragment loads anew instead of scrolling within the old document.
        self._open("about:blank", session, deadline)
        self._events = []
        self._open(Path(html).resolve().as_uri() + (f"#{fragment}" if fragment else ""), session, deadline)
        dom = self._send("Runtime.evaluate", {"expression": "document.documentElement.outerHTML",
                                              "returnByValue": True}, session, deadline)["result"]["value"]
        measured = self._send("Runtime.evaluate", {"expression": measure, "returnByValue": True}, session,
                              deadline)["result"].get("value") if measure else None
        if png is not None:   # a screenshot is most of a page's cost (PNG-encoding 1200x1600): only when asked
            png.write_bytes(base64.b64decode(self._send("Page.captureScreenshot", {"format": "png"}, session,
                                                        deadline)["data"]))
        console = tuple(line for event in self._events if event.get("sessionId") == session
                        for line in [_console_line(event)] if line is not None)
        return Rendered(png, dom, console, measured)

    def close(self) -> None:
        if self.process.poll() is None:
            try:
                self._send("Browser.close", deadline=time.monotonic() + 10)
            except (AssertionError, OSError):
                pass
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        for fd in (self._commands, self._replies):
            try:
                os.close(fd)
            except OSError:
                pass
        self.log.close()
        shutil.rmtree(self.profile, ignore_errors=True)


_BROWSER: Browser | None = None


def render(html: Path, png: Path | None, *, width: int = 1200, height: int = 1600,
           fragment: str = "", measure: str = "") -> Rendered:
    """Open `html` (with `#fragment` when given) in headless Chromium: screenshot to `png` (None: no
    screenshot), return DOM and console lines, and the value of the JavaScript expression `measure` (layout
    facts such as scroll widths, which the DOM's text does not hold). The browser starts on the first call and is
    kept until close()."""
    global _BROWSER
    if _BROWSER is not None and _BROWSER.process.poll() is not None:
        close()                       # it died: its profile goes, a new one starts
    if _BROWSER is None:
        _BROWSER = Browser()
    return _BROWSER.render(html, png, width=width, height=height, fragment=fragment, measure=measure)


def close() -> None:
    """Stop the browser render() started, if any (tests call it when done; exit does it otherwise)."""
    global _BROWSER
    if _BROWSER is not None:
        _BROWSER.close()
        _BROWSER = None


atexit.register(close)


# ---------------------------------------------------------------------------------------------- PNG


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
    """Colours of the screenshot, counted by Pillow (a pure-Python PNG decoder took 5-10 s of CPU per
    1200x1600 screenshot)."""
    with Image.open(path) as image:
        rgb = image.convert("RGB")
    width, height = rgb.size
    counts = Counter({colour: n for n, colour in rgb.getcolors(maxcolors=width * height)})
    white = sum(n for colour, n in counts.items() if min(colour) >= 245)
    return PixelStats(width, height, len(counts), 1 - white / (width * height), counts)


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
