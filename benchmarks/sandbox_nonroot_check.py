"""Check the sandbox's non-root path (bwrap --unshare-user) from a root machine, as uid 65534.

The unit tests run as whatever user runs pytest (root in CI, where rigbench builds the user
namespace itself). This script plays the other path: run it as an unprivileged user with an
interpreter that user can read, e.g. on Debian as root:

    setpriv --reuid 65534 --regid 65534 --clear-groups env -i HOME=/tmp PATH=/usr/bin:/bin \\
        PYTHONPATH=$PWD/src:$PWD/.venv/lib/python3.11/site-packages /usr/bin/python3.11 \\
        benchmarks/sandbox_nonroot_check.py

Expected: confinement bwrap, the second case failed (6.0 is not 6), every host path REFUSED,
the host server unreachable, nested user namespaces refused (rc 1), forks stopped below 16.
"""

from __future__ import annotations

import os
import socket
import tempfile
from pathlib import Path

from rigbench.sandbox import Limits, confinement, run_confined, run_function_tests
from rigbench.sandbox._run import sandbox_python

PROGRAM = """import os, time, socket, subprocess
for p in ['/root', '/work', '/tmp', '/etc/passwd', '/home']:
    try:
        print(p, os.listdir(p) if os.path.isdir(p) else open(p).read()[:10])
    except OSError as e:
        print(p, 'REFUSED', type(e).__name__)
try:
    socket.create_connection(('127.0.0.1', {port}), timeout=1)
    print('CONNECTED')
except OSError as e:
    print('net refused', e)
print(subprocess.run(['unshare', '-r', 'true'], capture_output=True).returncode, 'nested userns rc')
n = 0
try:
    for _ in range(100):
        if os.fork() == 0:
            time.sleep(2)
            os._exit(0)
        n += 1
except OSError:
    print('forks stopped at', n)
"""


def main() -> None:
    print("uid", os.getuid(), confinement())
    r = run_function_tests("def f(x):\n    return x * 2\n", "f", [([2], 4), ([3], 6.0)],
                           limits=Limits(wall_s=20), allow_unconfined=False)
    print("function cases passed:", [c.passed for c in r.cases], r.error)
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    work = Path(tempfile.mkdtemp())
    (work / "p.py").write_text(PROGRAM.format(port=srv.getsockname()[1]))
    out = run_confined([sandbox_python(False), "-I", "-S", "p.py"], work, Limits(processes=16, wall_s=20),
                       allow_unconfined=False)
    srv.close()
    print(out.returncode, out.output)


if __name__ == "__main__":
    main()
