"""What `haiku publish` costs against an S3-compatible server (moto on 127.0.0.1): requests and bytes.

A local database of `--documents` short documents is published to a bucket through a counting proxy;
then published again unchanged, then again after `--added` more documents, and searched once from the
published copy as a reader would. For each step: the HTTP requests by method and the bytes copied.

    PYTHONPATH=. python benchmarks/publish_cost.py --documents 200 --added 10 [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from collections import Counter
from pathlib import Path

import anyio
from common import Table, result

from tests.support.stall_proxy import StallingProxy


def _methods(heads: list[bytes]) -> dict[str, int]:
    counted: Counter[str] = Counter()
    for head in heads:
        method, _, rest = head.decode(errors="replace").partition(" ")
        counted["LIST" if method == "GET" and "list-type=" in rest else method] += 1
    return dict(sorted(counted.items()))


def measure(documents: int, added: int) -> dict:
    """Publish, re-publish unchanged, publish after more documents, search once; each step's cost."""
    from moto.server import ThreadedMotoServer

    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    import boto3

    boto3.client("s3", endpoint_url=f"http://{host}:{port}", region_name="us-east-1").create_bucket(
        Bucket="bench"
    )
    steps: dict[str, dict] = {}
    try:
        with tempfile.TemporaryDirectory() as tmp, StallingProxy(port) as proxy:
            config = Path(tmp) / "config.toml"
            config.write_text(
                f'[databases]\nsrc = "{tmp}/src.lancedb"\n[databases.team]\nuri = "s3://bench/team"\n'
                f'storage_options = {{ endpoint = "{proxy.endpoint}", allow_http = true, '
                'region = "us-east-1" }\n'
            )
            os.environ["HAIKU_CONFIG"] = str(config)
            os.environ["HAIKU_DATA_DIR"] = str(Path(tmp) / "data")
            steps = anyio.run(_steps, proxy, documents, added)
    finally:
        server.stop()
    return {"documents": documents, "added": added, "steps": steps}


async def _steps(proxy: StallingProxy, documents: int, added: int) -> dict[str, dict]:
    from haiku_cli import api

    ws = api.Workspace.load()
    src = ws.lookup("src")

    async def add(first: int, count: int) -> None:
        folder = Path(os.environ["HAIKU_DATA_DIR"]) / f"docs-{first}"
        folder.mkdir(parents=True)
        for n in range(first, first + count):
            text = f"# Note {n}\n\nDocument {n} tells of tide {n % 17} and moon {n % 5}.\n"
            (folder / f"note-{n}.md").write_text(text * 20)
        await api.add_sources(ws, src, [str(folder)], title=None, metadata={})

    async def step(name: str, run) -> None:
        mark = len(proxy.heads)
        done = await run()
        steps[name] = {"requests": _methods(proxy.heads[mark:]), "total": len(proxy.heads) - mark}
        if done is not None:
            steps[name] |= {"files": done.files, "bytes": done.bytes}

    steps: dict[str, dict] = {}
    await add(0, documents)
    await step("first publish", lambda: api.publish(ws, src, "team"))
    await step("unchanged publish", lambda: api.publish(ws, src, "team"))
    await add(documents, added)
    await step(f"publish after {added} more", lambda: api.publish(ws, src, "team"))
    reader = api.Workspace.load(embedder=ws.embedder)

    async def search() -> None:
        await api.search(reader, reader.select_many(["team"]), "tide of the moon", limit=5)

    await step("reader: open and one search", search)
    return steps


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--documents", type=int, default=200)
    parser.add_argument("--added", type=int, default=10)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with result("publish", "Publishing a database: requests and bytes") as table:
        found = measure(args.documents, args.added)
        publish_rows(table, found)
    if args.json:
        print(json.dumps(found, indent=2))
        return
    for name, figures in found["steps"].items():
        print(f"{name}: {figures}")


def _requests(step: dict) -> str:
    kinds = ", ".join(f"{n} {m}" for m, n in sorted(step["requests"].items(), key=lambda kv: -kv[1]))
    return f"{step['total']} requests ({kinds})"


def _files(step: dict) -> str:
    return f", {step['files']} files, {step['bytes'] / 1000:,.0f} KB" if step.get("files") else ""


def publish_rows(table: Table, found: dict) -> None:
    """Each step's requests by method, and the bytes copied."""
    labels = {
        "first publish": f"first publish of {found['documents']} Markdown notes",
        "unchanged publish": "publishing the same state again",
        f"publish after {found['added']} more": f"after {found['added']} more notes",
        "reader: open and one search": "a reader: open and one hybrid search",
    }
    for name, step in found["steps"].items():
        copied = _files(step) or (", nothing copied" if name == "unchanged publish" else "")
        table.add(labels.get(name, name), _requests(step) + copied)


if __name__ == "__main__":
    main()
