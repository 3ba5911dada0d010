"""What honest notebooks do that Jupyter allows, as one statement the hostile suites run at load and in a case in
every mode the grader has (a jail, rlimits as root, rlimits as a grader that is not root: tests/hostile_grader.py).
Each must work as in Jupyter or fail as the student's own case: never an incident, never a grader error."""

# `honest()` runs once at top level (AT_LOAD) and once in the case `work()`; it returns what the test checks. Each line
# is a habit seen in real notebooks: a polite nice, a library pinning to its own CPUs, asking whether the parent
# lives, faulthandler, a subprocess writing to sys.stdout, the stream's encoding and writelines, stderr prints,
# environment reads, temp files, pickling its own objects, a timer thread, a SIGALRM timeout, its own CPU time,
# logging, warnings, and deep recursion under a raised limit.
HONEST = '''
import faulthandler, logging, os, pickle, resource, signal, subprocess, sys, tempfile, threading, time, warnings
class Board:
    def __init__(self, tiles):
        self.tiles = tiles
def _deep(n):
    return 0 if n == 0 else 1 + _deep(n - 1)
def honest():
    done = {}
    done["nice"] = [os.nice(0), os.nice(5)] == [os.getpriority(os.PRIO_PROCESS, 0)] * 2
    os.sched_setaffinity(0, os.sched_getaffinity(0))
    try:
        os.kill(os.getppid(), 0)    # does my parent live? (Landlock's signal scope may say no: its own error)
    except PermissionError:
        pass
    faulthandler.enable()
    faulthandler.disable()
    subprocess.run(["true"], stdout=sys.stdout, stderr=sys.stderr, check=True)
    sys.stdout.writelines(["a\\n", "b\\n"])
    done["encoding"] = sys.stdout.encoding
    print("a warning of my own", file=sys.stderr)
    sys.stdout.flush()
    done["home"] = isinstance(os.environ.get("HOME", ""), str) and os.getenv("NO_SUCH_VARIABLE") is None
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "board.pickle")
        with open(path, "wb") as file:
            pickle.dump(Board([1, 2, 3]), file)
        with open(path, "rb") as file:
            done["pickle"] = pickle.load(file).tiles
    fired = []
    timer = threading.Timer(0.01, lambda: fired.append(1))
    timer.start()
    timer.join()
    done["timer"] = fired
    def expired(signum, frame):
        raise TimeoutError
    old = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, 0.02)
    try:
        while True:
            time.sleep(0.005)
    except TimeoutError:
        done["timeout"] = True
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    done["cpu"] = resource.getrusage(resource.RUSAGE_SELF).ru_utime >= 0 and time.process_time() >= 0
    logging.basicConfig(level=logging.INFO)
    logging.getLogger("search").info("expanded %d nodes", 3)
    warnings.warn("a warning of my own")
    sys.setrecursionlimit(30000)
    done["deep"] = _deep(20000)
    return done
AT_LOAD = honest()
def work():
    return [AT_LOAD, honest()]
'''

# What honest() returns where everything worked.
EXPECTED = {"nice": True, "encoding": "UTF-8", "home": True, "pickle": [1, 2, 3], "timer": [1], "timeout": True,
            "cpu": True, "deep": 20000}
