"""Tests for grader.sandbox.wire: frames over real pipes, deadlines, EOF, malformed data, a real child."""

from __future__ import annotations

import json
import marshal
import os
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from grader.sandbox import wire
from grader.sandbox.wire import (
    MAX_FRAME,
    Closed,
    FrameError,
    FrameReader,
    Timeout,
    encode_frame,
    marshal_frame,
    read_frame_blocking,
    read_request_blocking,
    send,
)

SANDBOX_DIR = Path(wire.__file__).resolve().parent


@pytest.fixture
def pipe():
    """A real pipe (read end, write end); ends a test has not closed are closed afterwards."""
    read_end, write_end = os.pipe()
    ends = {"read": read_end, "write": write_end}
    yield ends
    for fd in ends.values():
        try:
            os.close(fd)
        except OSError:
            pass


def close_writer(ends):
    os.close(ends["write"])
    ends["write"] = -1


def write_later(fd: int, data: bytes, piece: int = 1, pause: float = 0.0) -> threading.Thread:
    def run():
        for start in range(0, len(data), piece):
            os.write(fd, data[start : start + piece])
            if pause:
                time.sleep(pause)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def soon(seconds: float = 5.0) -> float:
    return time.monotonic() + seconds


def test_encode_frame_is_a_big_endian_length_and_compact_utf8_json():
    frame = encode_frame({"k": 1, "text": "\u00e9"})
    body = '{"k":1,"text":"\u00e9"}'.encode("utf-8")
    assert frame == struct.pack(">I", len(body)) + body


def test_a_message_round_trips_through_a_pipe(pipe):
    message = {"case": 3, "value": {"tuple": [1, "\u00e9", None, 2.5]}}
    send(pipe["write"], message)
    assert FrameReader(pipe["read"]).read(soon()) == message


def test_many_frames_in_one_write_are_split_correctly(pipe):
    messages = [{"n": i, "pad": "x" * i} for i in range(50)]
    os.write(pipe["write"], b"".join(encode_frame(message) for message in messages))
    reader = FrameReader(pipe["read"])
    assert [reader.read(soon()) for _ in messages] == messages


def test_a_frame_delivered_one_byte_at_a_time_is_reassembled(pipe):
    message = {"answer": list(range(20))}
    writer = write_later(pipe["write"], encode_frame(message), piece=1, pause=0.001)
    assert FrameReader(pipe["read"]).read(soon()) == message
    writer.join()


def test_a_large_frame_arrives_whole(pipe):
    message = {"blob": "y" * 5_000_000}
    writer = threading.Thread(target=send, args=(pipe["write"], message), daemon=True)
    writer.start()
    assert FrameReader(pipe["read"]).read(soon(20)) == message
    writer.join()


def test_a_partial_frame_times_out_then_completes_on_the_next_read(pipe):
    frame = encode_frame({"late": True})
    os.write(pipe["write"], frame[:7])
    reader = FrameReader(pipe["read"])
    started = time.monotonic()
    with pytest.raises(Timeout):
        reader.read(time.monotonic() + 0.2)
    waited = time.monotonic() - started
    assert waited >= 0.15          # it waited for the deadline (no upper bound: tests hold on a busy machine)
    os.write(pipe["write"], frame[7:])
    assert reader.read(soon()) == {"late": True}


def test_a_deadline_already_passed_times_out_without_blocking(pipe):
    """Judged by what the read returns, not by how long it took: a read that waited for data would get the
    frame written afterwards to unblock it; one that honoured the passed deadline raised Timeout before."""
    reader = FrameReader(pipe["read"])  # the fd is blocking and nothing was written
    outcome: list = []

    def read() -> None:
        try:
            outcome.append(reader.read(time.monotonic() - 1))
        except Timeout as error:
            outcome.append(error)

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    thread.join(10)                     # however long it takes: the write below only frees a read that waits
    os.write(pipe["write"], encode_frame({"waited": True}))
    thread.join()
    assert len(outcome) == 1 and isinstance(outcome[0], Timeout), outcome


def test_eof_in_the_middle_of_a_frame_is_closed(pipe):
    os.write(pipe["write"], encode_frame({"cut": "off"})[:9])
    close_writer(pipe)
    with pytest.raises(Closed, match="middle of a frame"):
        FrameReader(pipe["read"]).read(soon())


def test_eof_after_whole_frames_returns_them_then_closed(pipe):
    os.write(pipe["write"], encode_frame({"a": 1}) + encode_frame({"b": 2}))
    close_writer(pipe)
    reader = FrameReader(pipe["read"])
    assert reader.read(soon()) == {"a": 1}
    assert reader.read(soon()) == {"b": 2}
    with pytest.raises(Closed):
        reader.read(soon())


def test_an_oversized_length_header_is_a_frame_error_before_the_body_is_read(pipe):
    os.write(pipe["write"], struct.pack(">I", MAX_FRAME + 1))
    with pytest.raises(FrameError, match="over"):
        FrameReader(pipe["read"]).read(soon())


def test_a_caller_given_max_frame_is_enforced(pipe):
    send(pipe["write"], {"text": "z" * 100})
    with pytest.raises(FrameError, match="over the 50-byte limit"):
        FrameReader(pipe["read"], max_frame=50).read(soon())


@pytest.mark.parametrize(
    ("body", "text"),
    [
        (b"{not json", "not valid JSON"),
        (b"[1, 2]", "not an object"),
        (b'"text"', "not an object"),
        (b'{"x": NaN}', "not valid JSON"),
        (b'{"x": "\xff"}', "not UTF-8"),
        (b"[" * 100_000, "nested too deeply|not valid JSON"),
    ],
)
def test_malformed_bodies_are_frame_errors_and_the_next_frame_still_reads(pipe, body, text):
    good = encode_frame({"after": "bad"})
    writer = write_later(pipe["write"], struct.pack(">I", len(body)) + body + good, piece=65536)
    reader = FrameReader(pipe["read"])
    with pytest.raises(FrameError, match=text):
        reader.read(soon())
    assert reader.read(soon()) == {"after": "bad"}
    writer.join()


def test_a_frame_of_many_small_containers_is_refused_before_it_is_parsed(pipe):
    """60 MB of `[]` parsed would cost the parent 1.6 GB: the container count is checked on the raw bytes first."""
    body = b'{"op": "noise", "x": [' + b"[]," * wire.MAX_CONTAINERS + b'[]]}'
    good = encode_frame({"after": "bad"})
    writer = write_later(pipe["write"], struct.pack(">I", len(body)) + body + good, piece=1 << 20)
    reader = FrameReader(pipe["read"])
    with pytest.raises(FrameError, match="lists and objects"):
        reader.read(soon(30))
    assert reader.read(soon(30)) == {"after": "bad"}
    writer.join()


def test_a_frame_with_a_real_answers_containers_still_parses(pipe):
    path = [[[str(row * 4 + col) for col in range(4)] for row in range(4)] for _ in range(1000)]
    writer = write_later(pipe["write"], encode_frame({"op": "result", "value": path}), piece=65536)
    assert FrameReader(pipe["read"]).read(soon(30))["value"] == path
    writer.join()


def test_drain_discards_leftovers_in_the_buffer_and_the_pipe(pipe):
    reader = FrameReader(pipe["read"])
    half = encode_frame({"half": "written"})
    os.write(pipe["write"], half[:10])
    with pytest.raises(Timeout):
        reader.read(time.monotonic() + 0.05)
    os.write(pipe["write"], half[10:15])
    assert reader.drain() == 15
    assert reader.drain() == 0
    send(pipe["write"], {"fresh": 1})
    assert reader.read(soon()) == {"fresh": 1}


def test_drain_returns_at_eof(pipe):
    os.write(pipe["write"], b"\x00\x00")
    close_writer(pipe)
    assert FrameReader(pipe["read"]).drain() == 2


def test_send_to_a_closed_reader_raises_closed(pipe):
    os.close(pipe["read"])
    pipe["read"] = -1
    with pytest.raises(Closed):
        send(pipe["write"], {"nobody": "listens"})


def test_a_lone_surrogate_still_travels():
    read_end, write_end = os.pipe()
    try:
        send(write_end, {"s": "a\ud800b"})
        assert FrameReader(read_end).read(soon()) == {"s": "a\ud800b"}
    finally:
        os.close(read_end)
        os.close(write_end)


def test_read_frame_blocking_reads_exactly_one_frame(pipe):
    os.write(pipe["write"], encode_frame({"first": 1}) + encode_frame({"second": 2}))
    assert read_frame_blocking(pipe["read"]) == {"first": 1}
    # Nothing beyond the first frame was consumed: the rest is still in the pipe.
    assert FrameReader(pipe["read"]).read(soon()) == {"second": 2}


def test_read_frame_blocking_raises_closed_on_eof(pipe):
    os.write(pipe["write"], encode_frame({"x": 1})[:6])
    close_writer(pipe)
    with pytest.raises(Closed):
        read_frame_blocking(pipe["read"])


def test_read_frame_blocking_rejects_an_oversized_header(pipe):
    os.write(pipe["write"], struct.pack(">I", 0xFFFFFFFF))
    with pytest.raises(FrameError):
        read_frame_blocking(pipe["read"])


def test_a_marshalled_request_reads_as_its_message_and_json_requests_still_do(pipe):
    message = {"op": "exercise", "cases": [{"id": "a#1", "values": {"x": b"M..."}, "timeout": 1.5}]}
    os.write(pipe["write"], marshal_frame(message) + encode_frame({"op": "quit"}))
    assert read_request_blocking(pipe["read"]) == message
    assert read_request_blocking(pipe["read"]) == {"op": "quit"}


def test_a_marshalled_request_shares_no_object_and_interns_no_str(pipe):
    # Each case's inputs are its own (the student may mutate one), and a str is as fresh as JSON makes it.
    row = ["a" * 3, "b" * 3]
    os.write(pipe["write"], marshal_frame({"first": row, "second": row}))
    message = read_request_blocking(pipe["read"])
    assert message["first"] == message["second"] and message["first"] is not message["second"]
    assert message["first"][0] is not sys.intern("aaa")


def test_only_a_request_may_be_marshal_data(pipe):
    # The parent reads the child's frames as JSON only: marshal data from the child is never loaded.
    os.write(pipe["write"], marshal_frame({"op": "result"}))
    with pytest.raises(FrameError):
        FrameReader(pipe["read"]).read(soon())


@pytest.mark.parametrize("body", [b"M", b"M\xff\x00", b"M" + marshal.dumps([1, 2])])
def test_a_malformed_marshalled_request_is_a_frame_error(pipe, body):
    os.write(pipe["write"], struct.pack(">I", len(body)) + body)
    with pytest.raises(FrameError):
        read_request_blocking(pipe["read"])


CHILD_SCRIPT = """
import os, sys
sys.path.insert(0, sys.argv[1])
import wire
fd = int(sys.argv[2])
request = wire.read_frame_blocking(0)
for n in range(request["count"]):
    wire.send(fd, {"n": n, "square": n * n, "echo": request["tag"]})
print("noise on stdout is not a frame")
"""


def test_a_real_child_process_writes_frames_that_the_reader_reads():
    answer_read, answer_write = os.pipe()
    child = subprocess.Popen(
        [sys.executable, "-I", "-c", CHILD_SCRIPT, str(SANDBOX_DIR), str(answer_write)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, pass_fds=(answer_write,),
    )
    os.close(answer_write)
    try:
        send(child.stdin.fileno(), {"count": 5, "tag": "\u00e9"})
        child.stdin.close()
        reader = FrameReader(answer_read)
        got = [reader.read(soon(30)) for _ in range(5)]
        assert got == [{"n": n, "square": n * n, "echo": "\u00e9"} for n in range(5)]
        with pytest.raises(Closed):
            reader.read(soon(30))
        assert child.wait(timeout=30) == 0
        assert child.stdout.read() == b"noise on stdout is not a frame\n"
    finally:
        os.close(answer_read)
        child.stdout.close()
        if child.poll() is None:
            child.kill()
            child.wait()


def test_frames_are_plain_json_objects():
    frame = encode_frame({"list": [1, 2]})
    assert json.loads(frame[4:].decode("utf-8")) == {"list": [1, 2]}
    with pytest.raises(TypeError):
        encode_frame([1, 2])  # type: ignore[arg-type]


def test_the_childs_answer_stream_reads_whole_split_and_joined_frames_alike(pipe):
    """FrameStream takes a read that brings exactly one frame as it is, and anything else (two frames, half a
    header, half a body) through its buffer: each arrangement gives the same bodies."""
    read_fd, write_fd = pipe["read"], pipe["write"]
    stream = wire.FrameStream(read_fd)
    frames = [wire.frame_of(b'{"seq":%d,' % seq + b"S" + bytes(range(seq % 7)) * 9) for seq in range(1, 9)]
    os.write(write_fd, frames[0])
    assert stream.read_body() == frames[0][4:]
    os.write(write_fd, frames[1] + frames[2])
    assert [stream.read_body(), stream.read_body()] == [frames[1][4:], frames[2][4:]]
    for frame in frames[3:5]:   # half a header, then the rest; then half a body
        cut = 2 if frame is frames[3] else 9
        os.write(write_fd, frame[:cut])
        threading.Timer(0.05, os.write, (write_fd, frame[cut:])).start()
        assert stream.read_body() == frame[4:]
    os.write(write_fd, frames[5] + frames[6][:3])
    assert stream.read_body() == frames[5][4:]
    os.write(write_fd, frames[6][3:])
    assert stream.read_body() == frames[6][4:]
    os.write(write_fd, frames[7][:6])
    close_writer(pipe)
    with pytest.raises(Closed):
        stream.read_body()


def test_the_next_case_is_read_whole_in_one_read_and_what_else_the_pipe_held_with_it(pipe):
    """read_bodies (runtime.Child.next_case, where the grader sends one case and then waits for its answer): one
    frame comes in one read; frames queued before it (a reply to a call a case forged) come with it, each whole;
    a frame longer than one read, or cut mid-header or mid-body, is read to its end; EOF and an oversized header
    are as read_frame_blocking says."""
    read_fd, write_fd = pipe["read"], pipe["write"]
    case = marshal_frame({"op": "case", "case": {"id": "a#2", "values": {"x": b"M..."}}})
    os.write(write_fd, case)
    assert wire.read_bodies(read_fd) == [case[4:]]
    reply = wire.frame_of(b'{"seq":3,"answer":1}')
    os.write(write_fd, reply + case)
    assert wire.read_bodies(read_fd) == [reply[4:], case[4:]]
    large = wire.frame_of(b"x" * (3 * wire.SMALL_READ + 5))
    writer = write_later(write_fd, large, piece=wire.SMALL_READ)
    assert wire.read_bodies(read_fd) == [large[4:]]
    writer.join()
    for cut in (2, 9):   # half a header, half a body: the rest comes later
        os.write(write_fd, case[:cut])
        threading.Timer(0.05, os.write, (write_fd, case[cut:])).start()
        assert wire.read_bodies(read_fd) == [case[4:]]
    os.write(write_fd, struct.pack(">I", MAX_FRAME + 1) + b"xx")
    with pytest.raises(FrameError):
        wire.read_bodies(read_fd)
    os.write(write_fd, case[:6])
    close_writer(pipe)
    with pytest.raises(Closed):
        wire.read_bodies(read_fd)
