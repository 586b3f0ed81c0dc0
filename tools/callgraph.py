#!/usr/bin/python3
"""Fails when the glue's files call each other in a circle.

The graph: file A -> file B when A's object file calls a function that B's object
file defines (nm: T). Hooks, routes and callbacks handed over as function pointers
are no calls: their relocations take an address (GOT), a call's is PLT/PC32.
Data (the module record, configuration) makes no edge. Usage: callgraph.py OBJ..."""
import os
import subprocess
import sys


def symbols(obj):
    """(functions defined, functions called) of an object file. A call is a PLT or
    PC-relative relocation to a function; taking its address (a hook, a route, a
    callback: GOT relocations) is no call."""
    out = subprocess.run(["nm", obj], capture_output=True, text=True, check=True).stdout
    defined = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] == "T":
            defined.add(parts[2])
    out = subprocess.run(["readelf", "-rW", obj], capture_output=True, text=True,
                         check=True).stdout
    called, code = set(), False
    for line in out.splitlines():
        if line.startswith("Relocation section"):
            code = "'.rela.text" in line
            continue
        parts = line.split()
        if code and len(parts) >= 5 and parts[2] in ("R_X86_64_PLT32", "R_X86_64_PC32",
                                            "R_AARCH64_CALL26", "R_AARCH64_JUMP26"):
            called.add(parts[4].split("@")[0])
    return defined, called


def main(objs):
    name = {o: os.path.splitext(os.path.basename(o))[0] for o in objs}
    syms = {o: symbols(o) for o in objs}
    owner = {}
    for o in objs:
        for s in syms[o][0]:
            owner[s] = name[o]
    graph = {name[o]: set() for o in objs}
    why = {}
    for o in objs:
        for s in syms[o][1]:
            b = owner.get(s)
            if b and b != name[o]:
                graph[name[o]].add(b)
                why.setdefault((name[o], b), s)
    # Depth-first search for a cycle.
    state, stack, cycles = {}, [], []

    def visit(a):
        state[a] = 1
        stack.append(a)
        for b in sorted(graph[a]):
            if state.get(b) == 1:
                cycles.append(stack[stack.index(b):] + [b])
            elif b not in state:
                visit(b)
        stack.pop()
        state[a] = 2

    for a in sorted(graph):
        if a not in state:
            visit(a)
    if cycles:
        for c in cycles:
            print("callgraph: cycle: " + " -> ".join(
                "%s (%s)" % (a, why[(a, b)]) for a, b in zip(c, c[1:])) + " -> " + c[-1])
        return 1
    print("callgraph: %d glue files, %d calls between them, no cycle"
          % (len(graph), sum(len(v) for v in graph.values())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
