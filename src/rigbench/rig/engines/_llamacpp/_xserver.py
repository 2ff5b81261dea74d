"""`llama-server` from the `xllamacpp` wheel: llama.cpp's own server, started the way its `main` starts it.

The wheel ships llama.cpp's server code (server-context, server-http, its routes) compiled into one
Python extension, configured through `CommonParams` rather than a command line. This script is the
command line: it hands argv to llama.cpp's own parser (`common_params_parse`, compiled into the same
extension, with `LLAMA_EXAMPLE_SERVER`), so every flag means exactly what it means to `llama-server`
(and an unknown one fails the same way), then starts the server on the parsed parameters.

It runs on its own (`python -I`), next to the unpacked wheel (`../lib`), and imports nothing of
rigbench: `_prebuilt.py` copies it into the cache with a launcher named `llama-server`.

Env `RIGBENCH_XSERVER_PARSE_ONLY=1`: parse the arguments, print what the parser said, exit 0 when it
accepted them and 2 when not, without loading a model (how rigbench asks whether this build takes a
user's flags before choosing it).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(_HERE), "lib"))

# llama.cpp's parser, exported by the extension (C++ name of
# `bool common_params_parse(int, char **, common_params &, llama_example, void (*)(int, char **))`).
_PARSE = "_Z19common_params_parseiPPcR13common_params13llama_examplePFviS0_E"
# `enum llama_example` in common/common.h (the same value in the pinned sdist and the pinned wheel;
# checked below: a wrong value rejects --port, which only the server example takes).
_LLAMA_EXAMPLE_SERVER = 12
_DEFAULT_PORT = 8080  # llama-server's default; xllamacpp's CommonParams starts at 0 (any free port)
# exit codes a launcher can tell apart from llama.cpp's own (1: its parser or the server failed)
_EXIT_UNUSABLE = 3


def _fail(msg: str) -> None:
    print(f"rigbench xserver: {msg}", file=sys.stderr, flush=True)
    sys.exit(_EXIT_UNUSABLE)


def _params_address(params: object) -> int:
    """The address of the `common_params` struct inside a `CommonParams` object: its first field, right
    after the object header. Checked with the struct's first two fields (n_predict, n_ctx) set through
    the Python API, so a wheel with another layout is refused instead of corrupting memory."""
    addr = id(params) + object.__basicsize__
    saved = params.n_predict, params.n_ctx  # type: ignore[attr-defined]
    for a, b in ((0x1D2C3B4A, 0x0A1B2C3D), (0x0B0C0D0E, 0x01020304)):
        params.n_predict, params.n_ctx = a, b  # type: ignore[attr-defined]
        if (ctypes.c_int32.from_address(addr).value, ctypes.c_int32.from_address(addr + 4).value) != (a, b):
            _fail("this xllamacpp build does not lay out CommonParams as expected (common_params first); "
                  "it cannot take a llama-server command line")
    params.n_predict, params.n_ctx = saved  # type: ignore[attr-defined]
    return addr


def parse(argv: list[str]) -> tuple[object, bool]:
    """CommonParams filled by llama.cpp's parser from `argv` (argv[0] is the program name), and whether
    the parser accepted them (it prints its own error when not)."""
    try:
        import xllamacpp
    except ImportError as e:  # e.g. libgomp.so.1 missing: the wheel links the system's OpenMP runtime
        _fail(f"cannot load the xllamacpp extension: {e}")
    params = xllamacpp.CommonParams()
    params.port = _DEFAULT_PORT
    addr = _params_address(params)
    lib = ctypes.CDLL(xllamacpp.xllamacpp.__file__)
    try:
        fn = getattr(lib, _PARSE)
    except AttributeError:
        _fail(f"the extension exports no {_PARSE} (llama.cpp's argument parser)")
    fn.restype = ctypes.c_bool
    fn.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p), ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
    raw = [a.encode() for a in argv]
    c_argv = (ctypes.c_char_p * (len(raw) + 1))(*raw, None)
    ok = bool(fn(len(raw), c_argv, addr, _LLAMA_EXAMPLE_SERVER, None))
    return params, ok


def _name_process(name: str) -> None:
    """Call this process `name` as the kernel names it (`/proc/PID/comm`: ps, top, `pkill -x`, psutil's
    `name()`), as a built llama-server is called, rather than after the Python interpreter. Before the
    server starts: its threads take the name of the thread that creates them."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(15, name.encode()[:15], 0, 0, 0)  # PR_SET_NAME
    except (OSError, AttributeError):
        pass  # not Linux: the name stays the interpreter's


def _exit_now(signum: int, frame: object) -> None:
    # llama-server has no state to save; a clean shutdown can hang (rigbench stops it with SIGKILL anyway)
    sys.stderr.flush()
    os._exit(0)


def main(argv: list[str]) -> None:
    if os.environ.get("RIGBENCH_XSERVER_PARSE_ONLY") == "1":
        _, ok = parse(argv)
        print("accepted" if ok else "rejected", flush=True)
        sys.exit(0 if ok else 2)
    _name_process(os.path.basename(argv[0]))
    params, ok = parse(argv)
    if not ok:
        sys.exit(1)  # llama.cpp printed why, as llama-server does
    import xllamacpp

    try:
        _server = xllamacpp.Server(params)  # kept referenced while serving; returns once the model is loaded and the HTTP server listens
    except RuntimeError as e:  # the log above says why (a bad model file, a port in use...)
        print(f"rigbench xserver: {e}", file=sys.stderr, flush=True)
        sys.exit(1)
    # The server installed llama.cpp's SIGINT/SIGTERM handlers, which stop its loop but leave this
    # thread waiting: exit the process instead, as a stopped llama-server does.
    signal.signal(signal.SIGTERM, _exit_now)
    signal.signal(signal.SIGINT, _exit_now)
    while True:  # the server's threads serve until a signal ends the process
        signal.pause()


if __name__ == "__main__":
    main([os.environ.get("RIGBENCH_XSERVER_ARGV0", "llama-server"), *sys.argv[1:]])
