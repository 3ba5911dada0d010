"""The course modules a reference imports (its own folder's, the support folder's), found whenever it imports them.

A reference may import a sibling at the top (`import helpers`) or inside a function, at call time, long after
it was loaded. Putting the course's folders on sys.path only while the reference loads served the first and
broke the second ("No module named 'helpers'" when the expected values were computed); leaving them on
sys.path for good would let one course's `helpers` answer for another's. So each reference gets its own
`__import__` (in its `__builtins__`, which every function it defines keeps): an import of a course module
makes that course's modules visible for the length of the import statement, and puts them away after.
The course's own modules get the same `__import__`, so their imports at call time work too.
"""

from __future__ import annotations

import builtins
import importlib.abc
import importlib.machinery
import os
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any


class CourseModules:
    """The modules found in `folders`, kept out of sys.modules, imported through `builtins['__import__']`."""

    def __init__(self, folders: Sequence[Path], data: Path | None = None) -> None:
        self.folders = [str(folder) for folder in folders]
        self.data = str(data) if data is not None else None
        self.modules: dict[str, ModuleType] = {}    # dotted name -> module, while none of them is importing
        self.builtins: dict[str, Any] = {**builtins.__dict__, "__import__": self.import_, "open": self.open_}
        self._finder = _CourseFinder(self)
        self._depth = 0
        # One import of the course at a time: sys.modules and sys.meta_path are the process's, and threads
        # (mutation testing grades in several) may ask the reference at once.
        self._lock = threading.RLock()

    def owns(self, origin: str | None) -> bool:
        return bool(origin) and any(str(origin).startswith(folder + "/") for folder in self.folders)

    def _is_course_name(self, name: str) -> bool:
        top = name.partition(".")[0]
        return top in self.modules or any(
            (Path(folder) / f"{top}.py").is_file() or (Path(folder) / top / "__init__.py").is_file()
            for folder in self.folders)

    def import_(self, name: str, globals: dict[str, Any] | None = None, locals: Any = None,
                fromlist: Sequence[str] | None = (), level: int = 0) -> ModuleType:
        """builtins.__import__, with the course's modules visible when the import names one of them."""
        package = (globals or {}).get("__package__") or ""
        if (level == 0 and not self._is_course_name(name)) or (level > 0 and not self._is_course_name(package)):
            return builtins.__import__(name, globals, locals, fromlist or (), level)
        with self.visible():
            return builtins.__import__(name, globals, locals, fromlist or (), level)

    def open_(self, file: Any, *args: Any, **kwargs: Any) -> Any:
        """builtins.open, where a relative path names a file of the `data` folder (the support folder) when one is
        there: the course's notebook reads `words.txt` beside it, and the same cell in the reference finds it
        wherever the grader runs (a checkout, Gradescope's zip, a Dask worker), whatever folder it was started in.
        Any other path, and a relative one the support folder lacks, is opened as given (from that folder)."""
        name = os.fspath(file) if isinstance(file, (str, os.PathLike)) else None
        if self.data is not None and isinstance(name, str) and name and not os.path.isabs(name):
            there = os.path.join(self.data, name)
            if os.path.isfile(there):
                file = there
        return builtins.open(file, *args, **kwargs)

    @contextmanager
    def visible(self) -> Iterator[None]:
        """The course's modules in sys.modules (and its finder first on sys.meta_path) for this block only;
        what was there under the same names before comes back after."""
        with self._lock:
            if self._depth:      # an import within an import of the course: already visible
                self._depth += 1
                try:
                    yield
                finally:
                    self._depth -= 1
                return
            with self._shown():
                yield

    @contextmanager
    def _shown(self) -> Iterator[None]:
        shadowed = {name: sys.modules[name] for name in self.modules if name in sys.modules}
        before = set(sys.modules) - set(self.modules)   # what others imported (the reference itself too) stays
        sys.modules.update(self.modules)
        sys.meta_path.insert(0, self._finder)
        self._depth = 1
        try:
            yield
        finally:
            self._depth = 0
            sys.meta_path.remove(self._finder)
            for name in set(sys.modules) - before:
                if name in self.modules or self.owns(getattr(sys.modules[name], "__file__", None)):
                    self.modules[name] = sys.modules.pop(name)
            sys.modules.update(shadowed)


class _CourseFinder(importlib.abc.MetaPathFinder):
    """Finds course modules in the course's folders (before anything installed), loading them with its
    `__import__`."""

    def __init__(self, course: CourseModules) -> None:
        self.course = course

    def find_spec(self, name: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        spec = importlib.machinery.PathFinder.find_spec(name, list(path) if path is not None else self.course.folders)
        if spec is None or spec.loader is None or not self.course.owns(spec.origin):
            return None
        spec.loader = _CourseLoader(spec.loader, self.course.builtins)
        return spec


class _CourseLoader(importlib.abc.Loader):
    def __init__(self, loader: Any, course_builtins: dict[str, Any]) -> None:
        self.loader, self.course_builtins = loader, course_builtins

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        made: ModuleType | None = self.loader.create_module(spec)
        return made

    def exec_module(self, module: ModuleType) -> None:
        module.__dict__["__builtins__"] = self.course_builtins    # before its functions are made: they keep it
        origin = module.__spec__.origin if module.__spec__ is not None else None
        if origin is not None and origin.endswith(".py"):
            run_source(Path(origin).read_bytes(), Path(origin), module)
        else:   # an extension module, or bytecode alone: its loader's own way
            self.loader.exec_module(module)


def run_source(source: bytes, path: Path, module: ModuleType) -> None:
    """Run a course module's source in `module`, compiled from the file as it is now: never from a .pyc, which
    Python trusts by the source's size and mtime in whole seconds (a module edited to the same size within a
    second was imported as it was before, and the new rubric hash cached the old answers), and never writing
    one into the course's folders (a __pycache__ went into the Gradescope zip)."""
    exec(compile(source, str(path), "exec", dont_inherit=True), module.__dict__)  # noqa: S102 - the course's code
