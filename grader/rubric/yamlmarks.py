"""YAML loading that remembers the line of every mapping key and list item, so rubric errors can say file:line.

libyaml's parser (yaml.CSafeLoader) gives the same marks as the pure-Python one in a sixth of the time, so a
rubric is read with it when PyYAML was built with libyaml; a file it rejects is parsed again in pure Python,
whose error messages ("expected ',' or ']', but got ':'") are the ones rubric authors are shown.
"""

from __future__ import annotations

from pathlib import Path

import yaml


class Marked(dict):
    """A mapping from YAML that knows where it and each of its keys stand in the file."""

    line: int = 0
    key_lines: dict

    def line_of(self, key: str) -> int:
        return self.key_lines.get(key, self.line)


class MarkedList(list):
    """A YAML sequence that knows the line of each item."""

    line: int = 0
    item_lines: list

    def line_of(self, index: int) -> int:
        return self.item_lines[index] if index < len(self.item_lines) else self.line


class YamlError(ValueError):
    """Malformed YAML: carries the file and line of the problem."""

    def __init__(self, path: str, line: int, reason: str):
        super().__init__(f"{path}:{line}: {reason}")
        self.path, self.line, self.reason = path, line, reason


class _Loader(yaml.SafeLoader):
    """SafeLoader whose mappings and sequences carry their line numbers (1-based)."""


class _FastLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """The same, on libyaml's parser (CSafeLoader is CParser + SafeConstructor: just as safe)."""


def _construct_mapping(loader: _Loader, node: yaml.MappingNode) -> Marked:
    written = {id(key_node) for key_node, _ in node.value}
    loader.flatten_mapping(node)  # puts the keys of `<<: *anchor` merges first
    result = Marked()
    result.line = node.start_mark.line + 1
    result.key_lines = {}
    merged: set = set()  # keys whose value came from a merge: a key written in the mapping may override them
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if not isinstance(key, (str, int, float, bool)) and key is not None:
            raise yaml.constructor.ConstructorError(
                None, None, "mapping keys must be plain scalars", key_node.start_mark)
        if key in result and key not in merged:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark)
        if id(key_node) in written:
            merged.discard(key)
        else:
            merged.add(key)
        result[key] = loader.construct_object(value_node, deep=True)
        result.key_lines[key] = key_node.start_mark.line + 1
    return result


def _construct_sequence(loader: _Loader, node: yaml.SequenceNode) -> MarkedList:
    result = MarkedList(loader.construct_object(child, deep=True) for child in node.value)
    result.line = node.start_mark.line + 1
    result.item_lines = [child.start_mark.line + 1 for child in node.value]
    return result


def construct_timestamp(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> object:
    """A date as PyYAML reads it, but one that matches the date pattern and is no date (`due: 2026-13-01`,
    `2026-02-30`) is a YAML error at its line rather than a ValueError from datetime's constructor."""
    try:
        return yaml.constructor.SafeConstructor.construct_yaml_timestamp(loader, node)
    except ValueError as error:
        raise yaml.constructor.ConstructorError(
            None, None, f"{node.value!r} is not a date ({error}); write YYYY-MM-DD, e.g. 2026-11-20",
            node.start_mark) from None


for _loader in (_Loader, _FastLoader):
    _loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
    _loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _construct_sequence)
    _loader.add_constructor("tag:yaml.org,2002:timestamp", construct_timestamp)


_HINTS = {   # PyYAML's words for an indentation slip -> what the author changes
    "expected <block end>": "this line is indented differently from the keys above it: the keys of one mapping "
                            "line up, those of a list item after its '- '",
    "mapping values are not allowed here": "quote a value that holds ': ' (say: \"x: y\"), or give the line above "
                                           "its ':'",
    "could not find expected ':'": "a key on this or the line above lacks its ':', or a quoted value is not closed",
}


def _hint(problem: str) -> str:
    return next((f" ({hint})" for start, hint in _HINTS.items() if problem.startswith(start)), "")


def load_marked(path: str | Path) -> object:
    """Parse a YAML file into Marked/MarkedList trees; syntax errors become YamlError with the line."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise YamlError(str(path), 0, "file not found") from None
    except UnicodeDecodeError as error:
        raise YamlError(str(path), 0, f"not UTF-8 text ({error.reason})") from None
    try:
        return yaml.load(text, Loader=_FastLoader)  # noqa: S506 - a SafeConstructor loader
    except yaml.YAMLError:
        pass   # said again below, in the pure-Python parser's words
    try:
        return yaml.load(text, Loader=_Loader)  # noqa: S506 - _Loader derives from SafeLoader
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        line = mark.line + 1 if mark else 0
        raise YamlError(str(path), line, f"{error.problem or error}{_hint(str(error.problem))}") from None
    except yaml.YAMLError as error:
        raise YamlError(str(path), 0, str(error)) from None
