"""A stdio `haiku mcp` answers its first requests without running the SDK's HTTP, OAuth and client parts.

Nor does it import numpy or pyarrow: only a search (opening a database) needs them.

Each server runs in a fresh interpreter, as `haiku mcp` does; what it loaded is listed once it has answered
`initialize` and `tools/list` and its client has closed stdin: what it runs is what every start pays for.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

from haiku_cli.mcp_server.sdk_import import HTTP_MODULES, UNSERVED_MODULES
from tests.mcp_server.conftest import START_TIMEOUT, server_env

_SERVE_THEN_LIST = """
import json, runpy, sys
sys.argv = ["haiku", "mcp"]
try:
    runpy.run_module("haiku_cli", run_name="__main__")
except SystemExit:
    pass
import mcp_types
from haiku_cli.store.lance_import import _DeferredModule
ran = sorted(m for m in WATCHED if m in sys.modules and not isinstance(sys.modules[m], _DeferredModule))
with open(OUT, "w") as out:
    built = {
        "sampling_model": mcp_types.CreateMessageResult.__pydantic_complete__,
        "server_request_adapter": mcp_types._types.server_request_adapter.pydantic_complete,
    }
    json.dump({"ran": ran, "built": built}, out)
"""

# What the first search imports, when it opens a database; a start does without them.
SEARCH_MODULES = ("numpy", "pyarrow")

_REQUESTS = [
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"},
        },
    },
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}},
]


def _serve(tmp_path: Path, corpus: Path, **env: str) -> tuple[dict, list[dict]]:
    listing = tmp_path / "ran.json"
    watched = repr(HTTP_MODULES + UNSERVED_MODULES + SEARCH_MODULES)
    script = _SERVE_THEN_LIST.replace("OUT", repr(str(listing))).replace("WATCHED", watched)
    proc = subprocess.Popen(
        [sys.executable, "-c", script],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=server_env(corpus, HAIKU_NO_DAEMON="1", **env),
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    answers: list[dict] = []

    def read_answers() -> None:
        # Until `tools/list` is answered: closing stdin earlier may cut the server short of answering.
        for line in proc.stdout:
            answers.append(json.loads(line))
            if answers[-1].get("id") == 2:
                return

    reader = threading.Thread(target=read_answers, daemon=True)
    reader.start()
    proc.stdin.write("".join(json.dumps(r) + "\n" for r in _REQUESTS))
    proc.stdin.flush()
    reader.join(START_TIMEOUT)
    proc.stdin.close()
    try:
        proc.wait(timeout=START_TIMEOUT)  # its stderr is a few lines: the pipe does not fill
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.stderr is not None
    assert proc.returncode == 0, proc.stderr.read()
    proc.stdout.close()
    proc.stderr.close()
    return json.loads(listing.read_text(encoding="utf-8")), answers


def test_stdio_server_answers_without_the_http_and_client_parts(tmp_path: Path, corpus: Path) -> None:
    found, answers = _serve(tmp_path, corpus)
    assert [a.get("id") for a in answers] == [1, 2]
    assert {t["name"] for t in answers[1]["result"]["tools"]} >= {"search", "list_databases"}
    assert found["ran"] == [], f"a stdio server ran {found['ran']} before its first answers"
    # Models and adapters its answers never use are not built (pydantic builds them on first use).
    assert found["built"] == {"sampling_model": False, "server_request_adapter": False}


def test_turning_the_deferral_off_runs_them_and_lists_the_same_tools(tmp_path: Path, corpus: Path) -> None:
    _, deferred_answers = _serve(tmp_path, corpus)
    plain, plain_answers = _serve(tmp_path, corpus, HAIKU_MCP_IMPORT="plain")
    assert "uvicorn" in plain["ran"]
    assert plain["built"] == {"sampling_model": True, "server_request_adapter": True}
    assert plain_answers[1] == deferred_answers[1]  # tools/list: the same tools and schemas


_STAND_INS_ARE_CALLABLE = """
import sys, types
from haiku_cli.mcp_server.sdk_import import import_sdk
from haiku_cli.store import lance_import
import_sdk("stdio")
handed_out = [(s._module, s._name, s.resolve()) for s in list(lance_import._stand_ins)]
# A stand-in for a constant (a number, a string) would be wrong where the SDK uses it as a default value.
wrong = [f"{m}.{n}" for m, n, v in handed_out if not (callable(v) or isinstance(v, types.ModuleType))]
print(len(handed_out), wrong)
"""


def test_every_stand_in_the_sdk_takes_is_a_class_or_function() -> None:
    env = {k: v for k, v in os.environ.items() if k == "HAIKU_CACHE_DIR" or not k.startswith("HAIKU_")}
    done = subprocess.run(
        [sys.executable, "-c", _STAND_INS_ARE_CALLABLE], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    count, wrong = done.stdout.split(" ", 1)
    assert int(count) > 0  # the deferral was used
    assert wrong.strip() == "[]"
