"""The run's writer, wrapped for the suites: before each record, a check that the server is still there
(a launched engine still running, an attached endpoint still answering)."""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from typing import Any

from rigbench.errors import (
    EndpointLostError,
    RigError,
)
from rigbench.rig import (
    AttachedRig,
    LaunchedRig,
)
from rigbench.store import RunWriter

# A failed request of these kinds may be rigbench's setup (the server went away), not the model:
# the writer watches for them, and resume retries the units they are in.
_TRANSPORT_KINDS = ("connect", "disconnect", "timeout", "idle_timeout", "total_timeout")


class _WriterWatch:
    """The run's writer, with a check before each record that the server is still there.

    Subclasses say what "still there" means (`raise_if_engine_died`) and when to ask (`_check`)."""

    def __init__(self, writer: RunWriter, rig: Any) -> None:
        self._writer = writer
        self._rig = rig

    def __getattr__(self, name: str) -> Any:
        return getattr(self._writer, name)

    def append(self, record: Any) -> None:
        err = getattr(getattr(record, "result", None), "error", None)
        if err is not None and err.kind in _TRANSPORT_KINDS:
            self.raise_if_engine_died(ConnectionError(err.message))
        else:
            self._check()
        self._writer.append(record)

    def _check(self) -> None:
        """Before a record without a transport failure; nothing by default."""

    def raise_if_engine_died(self, cause: BaseException | None = None) -> None:
        raise NotImplementedError


class _EngineWatch(_WriterWatch):
    """The run's writer, refusing to record once the launched engine has exited.

    A request against a dead engine fails for rigbench's setup, not the model's: recording it would
    mark its unit done, and --resume would never redo it. Raising instead fails the run with the
    completed units kept, and the engine's exit code and log in the message.
    """

    _rig: LaunchedRig

    def _check(self) -> None:
        # A request cut off by the engine's death can be recorded before the exit is reaped:
        # a transport failure (`append`) gets the same short grace as an exception does.
        self.raise_if_engine_died()

    def raise_if_engine_died(self, cause: BaseException | None = None) -> None:
        """A dead engine explains whatever failed (`cause`): say that, not the symptom."""
        code = self._rig.process.exit_code()
        if code is None and cause is not None:
            time.sleep(0.5)  # a connection reset can arrive before the exit is reaped
            code = self._rig.process.exit_code()
        if code is not None:
            raise RigError(
                f"{self._rig.engine} exited with code {code} during the run; the result in flight was not "
                f"recorded.\n  command: {self._rig.process.command}\n  log: {self._rig.process.log_path}\n"
                f"  last lines:\n{_indent(self._rig.process.log_tail())}\n"
                f"Completed units are kept: fix the cause, then `rigbench run --resume {self._writer.dir}` "
                "(with the same options) measures the rest.") from cause


class _EndpointWatch(_WriterWatch):
    """The run's writer, refusing to record once the attached server has stopped answering.

    Adversary: a server that dies (or is unplugged) mid-run. Its remaining requests would fail in
    under a second as "connect" records and the run would end "complete"; instead, a transport
    failure makes rigbench ask the server's model list, and if that gets no answer either the run
    stops, marked interrupted, with the resume command.
    """

    _rig: AttachedRig

    def raise_if_engine_died(self, cause: BaseException | None = None) -> None:
        """Ask `/models` (5 s); no answer means the server, not the model, failed `cause`."""
        url = self._rig.base_url + "/models"
        headers = dict(self._rig.client._headers)
        try:
            with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=5) as r:
                r.read(65536)
            return
        except urllib.error.HTTPError as e:
            if e.code < 500:
                return  # it answers (perhaps 401 to this probe): alive
            seen = f"HTTP {e.code}"
        except (OSError, ValueError) as e:
            seen = f"{type(e).__name__}: {getattr(e, 'reason', e)}"
        raise EndpointLostError(
            f"the server at {self._rig.base_url} stopped answering during the run ({seen}; the request in flight "
            f"failed with: {cause}). The result in flight was not recorded and the run is marked interrupted.\n"
            f"Completed units are kept: once the server is back, `rigbench run --resume {self._writer.dir}` "
            "measures the rest.") from cause


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines()) or "    (empty)"
