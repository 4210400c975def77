#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Check the call graph of the built objects: no circle of files calling each
other, of any length, and no call from a layer to one above it.

usage: scripts/layers.py BUILD_DIR [--dot]

Reads `nm` of every object of the layer libraries (src/<layer>/*.c, built by
src/CMakeLists.txt): file A calls file B when A references a symbol B defines.
The link checks (gx_layer_check_*) already fail an upward call; this adds the
circles inside one layer, which no linker sees. Exit 1 on any finding.
"""
import glob
import os
import subprocess
import sys

LAYERS = ["base", "codec", "decide", "io", "sim", "server"]
RANK = {"base": 0, "codec": 1, "decide": 2, "io": 3, "sim": 3, "server": 4}


def objects(build):
    out = {}
    for layer in LAYERS:
        pat = os.path.join(build, "src", "CMakeFiles", "gx%s.dir" % layer, "**", "*.o")
        for o in glob.glob(pat, recursive=True):
            name = os.path.basename(o)[: -len(".c.o")]
            out["%s/%s" % (layer, name)] = o
    return out


def symbols(path):
    defined, undefined = set(), set()
    res = subprocess.run(["nm", path], capture_output=True, text=True, check=True)
    for line in res.stdout.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "U":
            undefined.add(parts[1])
        elif len(parts) == 3 and parts[1] in "TDBRGS" and parts[1].isupper():
            defined.add(parts[2])
    return defined, undefined


def graph(objs):
    owner, refs = {}, {}
    for f, o in objs.items():
        d, u = symbols(o)
        for s in d:
            owner[s] = f
        refs[f] = u
    return {f: sorted({owner[s] for s in u if s in owner and owner[s] != f})
            for f, u in refs.items()}


def circles(g):
    """Tarjan's strongly connected components of more than one file."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in g[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: scripts/layers.py BUILD_DIR [--dot]")
    g = graph(objects(sys.argv[1]))
    if not g:
        sys.exit("layers: no objects under %s/src (build first)" % sys.argv[1])
    if "--dot" in sys.argv:
        print("digraph gx {")
        for f, ts in sorted(g.items()):
            for t in ts:
                print('  "%s" -> "%s";' % (f, t))
        print("}")
        return
    bad = 0
    for comp in circles(g):
        print("layers: circle of files calling each other: %s" % " -> ".join(comp))
        bad = 1
    for f, ts in sorted(g.items()):
        for t in ts:
            lf, lt = f.split("/")[0], t.split("/")[0]
            if RANK[lt] > RANK[lf] or (RANK[lt] == RANK[lf] and lt != lf):
                print("layers: %s calls up or across into %s" % (f, t))
                bad = 1
    arrows = sum(len(ts) for ts in g.values())
    print("layers: %d files, %d arrows, %s" % (len(g), arrows, "FAILED" if bad else "ok"))
    sys.exit(bad)


if __name__ == "__main__":
    main()
