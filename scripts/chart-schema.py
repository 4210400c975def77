#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Write the config's JSON Schema into the Helm chart's values.schema.json.

Usage:
  scripts/chart-schema.py [BINARY]          rewrite properties.config
  scripts/chart-schema.py --check [BINARY]  exit 1 if the committed file differs

The schema of `config` comes from `gpu-extender --config-schema`, which prints
it from the one key table (src/codec/config_keys.c): never edit
properties.config in values.schema.json by hand. The rest of the file is
written by hand; this script only reformats it (objects that fit on one line
stay on one line). BINARY defaults to build/gpu-extender.
"""

import argparse
import difflib
import json
import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
SCHEMA = os.path.join(ROOT, "charts", "gpu-extender", "values.schema.json")
WIDTH = 100


def dumps(value, indent=0, col=0):
    """JSON with 2-space indents; a value that fits in WIDTH from column @col stays on one line."""
    flat = json.dumps(value, ensure_ascii=False)
    if col + len(flat) <= WIDTH or not isinstance(value, (dict, list)) or not value:
        return flat
    pad = " " * (indent + 2)
    if isinstance(value, dict):
        items = []
        for k, v in value.items():
            head = f"{pad}{json.dumps(k, ensure_ascii=False)}: "
            items.append(head + dumps(v, indent + 2, len(head) + 1))
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    items = [pad + dumps(v, indent + 2, len(pad) + 1) for v in value]
    return "[\n" + ",\n".join(items) + "\n" + " " * indent + "]"


def render(binary):
    res = subprocess.run([binary, "--config-schema"], capture_output=True, text=True, timeout=30)
    if res.returncode != 0:
        raise SystemExit(f"chart-schema: {binary} --config-schema exited {res.returncode}: "
                         f"{res.stderr.strip()}")
    try:
        config = json.loads(res.stdout)
    except ValueError as exc:
        raise SystemExit(f"chart-schema: {binary} --config-schema printed invalid JSON: {exc}")
    with open(SCHEMA, encoding="utf-8") as f:
        schema = json.load(f)
    # A schema for a whole document, used here as one property: drop its $schema.
    config.pop("$schema", None)
    schema["properties"]["config"] = config
    return dumps(schema) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("binary", nargs="?", default=os.path.join(ROOT, "build", "gpu-extender"))
    ap.add_argument("--check", action="store_true",
                    help="compare instead of writing; exit 1 when the file differs")
    a = ap.parse_args()
    want = render(a.binary)
    with open(SCHEMA, encoding="utf-8") as f:
        have = f.read()
    rel = os.path.relpath(SCHEMA, ROOT)
    if a.check:
        if have == want:
            print(f"ok   {rel} matches {os.path.basename(a.binary)} --config-schema")
            return 0
        diff = difflib.unified_diff(have.splitlines(), want.splitlines(), rel + " (committed)",
                                    rel + " (generated)", lineterm="", n=1)
        print("\n".join(list(diff)[:60]))
        print(f"FAIL {rel} differs from what {a.binary} --config-schema generates: "
              "run scripts/chart-schema.py and commit the result")
        return 1
    if have != want:
        with open(SCHEMA, "w", encoding="utf-8") as f:
            f.write(want)
        print(f"wrote {rel}")
    else:
        print(f"{rel} is up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
