"""Source the probing students of the hostile graders share (tests/hostile_grader.py, tests/hostile_signal_grader.py):
an attempt's outcome as a word, "done" or the OSError's class, so a probe reports what the kernel answered and one
refusal never ends the probe."""

ATTEMPT = '''\
def attempt(action):
    try:
        action()
        return "done"
    except OSError as error:
        return type(error).__name__
'''
