"""Where an error or a timeout stopped the student's code, as the report says it: never 'line None'.

An alarm (the case's time limit) can land on an instruction the compiler gave no line: a loop's jump back, a
function's cleanup. Its traceback entry then has tb_lineno None, and a timeout was reported 'it was still running at
cell 4, line None' (session 19, a 15-puzzle IDA* stuck in its search)."""

import sys
import types

from grader.kit import kit
from grader.sandbox import runtime

SOURCE = """
def search(bound):
    total = 0

    def deeper(step):
        return total + step

    try:
        while bound > 0:
            bound = deeper(-1) + bound
    except KeyError:
        pass
    return sys._getframe()
"""


def _cell_frame() -> types.FrameType:
    namespace: dict = {"sys": sys}
    exec(compile(SOURCE, "cell 4", "exec"), namespace)
    return namespace["search"](3)


def _lineless(code: types.CodeType, after_a_line: bool) -> int:
    """An instruction offset the compiler gave no line: one after a line (a cleanup, a jump), or the first."""
    seen = False
    for start, _end, line in code.co_lines():
        if line is None and seen == after_a_line:
            return start
        seen = seen or line is not None
    raise AssertionError("no instruction without a line")


def _error_at(frame: types.FrameType, offset: int) -> BaseException:
    error = TimeoutError("the case's time limit")
    # tb_lineno -1: computed from the offset when read, as for a traceback the interpreter made
    return error.with_traceback(types.TracebackType(None, frame, offset, -1))


def test_a_stop_on_an_instruction_without_a_line_names_the_line_before_it() -> None:
    frame = _cell_frame()
    offset = _lineless(frame.f_code, after_a_line=True)
    error = _error_at(frame, offset)
    assert error.__traceback__ is not None and error.__traceback__.tb_lineno is None   # what the interpreter said
    expected = [line for start, _end, line in frame.f_code.co_lines() if start < offset and line is not None][-1]
    described = runtime._describe(error)
    assert described["where"] == f"cell 4, line {expected}"
    assert "None" not in described["traceback"]


def test_a_stop_before_any_line_names_the_cell_alone() -> None:
    frame = _cell_frame()
    described = runtime._describe(_error_at(frame, _lineless(frame.f_code, after_a_line=False)))
    assert described["where"] == "cell 4"
    assert described["traceback"].startswith("  cell 4, in search")


def test_the_live_kernel_check_names_no_line_it_does_not_know() -> None:
    assert kit._frame_place("cell 4", None) == "cell 4"
    assert kit._frame_place("cell 4", 7) == "cell 4, line 7"
