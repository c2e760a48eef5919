#!/usr/bin/env python3
"""The shape of the code, checked (ctest `structure`): what the stages redesign promised.

- planner/ holds no source file at its root; its rooms are model/ (with allocator/),
  evidence/, decide/, emit/, cli/ and bench/.
- No include cycle anywhere (shared/, planner/, trainer/, gui/): a module is a .h with its .cpp;
  module A depends on B when A's header or source includes B's header. A cycle is a strongly
  connected component of more than one module.
- Arrows point down inside the planner: model <- evidence <- decide <- emit <- cli (<- bench);
  a room includes only its own room and rooms below it. (The link check of each room,
  shardcast_room() in planner/CMakeLists.txt, holds the same at link time.)
- No function in planner/ longer than 90 lines (the style: under ~80); plan() under 60.
Function lengths are measured from a definition's first line to its closing brace at the same
indentation (the house style is clang-format's: bodies are closed at the indentation they open).
Usage: structure_check.py REPO_ROOT
"""
import os
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else "."
failures = []
ROOMS = {"model": 0, "evidence": 1, "decide": 2, "emit": 3, "cli": 4, "bench": 5}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def sources(top):
    for d, _, files in os.walk(os.path.join(root, top)):
        for f in files:
            if f.endswith((".h", ".cpp", ".cu")):
                yield os.path.relpath(os.path.join(d, f), root)


# 1. planner/ root.
for f in os.listdir(os.path.join(root, "planner")):
    if f.endswith((".h", ".cpp")):
        failures.append(f"planner/{f}: a source file at planner/'s root (put it in a room)")
for d in os.listdir(os.path.join(root, "planner")):
    if os.path.isdir(os.path.join(root, "planner", d)) and d not in ROOMS:
        failures.append(f"planner/{d}/: not a room ({', '.join(ROOMS)})")

# 2. The module graph and its cycles.
files = [f for top in ("shared", "planner", "trainer", "gui") for f in sources(top)]
module = lambda path: os.path.splitext(path)[0]
graph = {}
for f in files:
    text = open(os.path.join(root, f), encoding="utf-8", errors="replace").read()
    deps = graph.setdefault(module(f), set())
    for inc in INCLUDE.findall(text):
        if os.path.exists(os.path.join(root, inc)) and module(inc) != module(f):
            deps.add(module(inc))
            # 3. Rooms: an include of a room above.
            if f.startswith("planner/") and inc.startswith("planner/"):
                src_room, dst_room = f.split("/")[1], inc.split("/")[1]
                if ROOMS.get(dst_room, -1) > ROOMS.get(src_room, 99):
                    failures.append(f"{f} includes {inc}: planner/{src_room} may not use planner/{dst_room} (above it)")

index, low, stack, on_stack, sccs, counter = {}, {}, [], set(), [], [0]
sys.setrecursionlimit(10000)


def strongconnect(v):
    index[v] = low[v] = counter[0]
    counter[0] += 1
    stack.append(v)
    on_stack.add(v)
    for w in graph.get(v, ()):
        if w not in index:
            strongconnect(w)
            low[v] = min(low[v], low[w])
        elif w in on_stack:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        comp = []
        while True:
            w = stack.pop()
            on_stack.discard(w)
            comp.append(w)
            if w == v:
                break
        if len(comp) > 1:
            sccs.append(sorted(comp))


for v in sorted(graph):
    if v not in index:
        strongconnect(v)
for comp in sccs:
    failures.append("include cycle: " + " <-> ".join(comp))

# 4. Function lengths in planner/.
DEF = re.compile(r"^(\s*)[A-Za-z_][\w:<>,\s\*&~\[\]]*\([^;]*$")
longest = []
for f in sources("planner"):
    if not f.endswith(".cpp"):
        continue
    lines = open(os.path.join(root, f), encoding="utf-8", errors="replace").read().split("\n")
    i = 0
    while i < len(lines):
        m = DEF.match(lines[i])
        head = lines[i].strip()
        if m and not head.startswith(("if", "for", "while", "switch", "return", "else", "namespace", "//", "#")):
            indent = m.group(1)
            # the opening brace on this line or within the next few (a wrapped signature)
            j = i
            while j < len(lines) and j < i + 8 and not lines[j].rstrip().endswith("{"):
                if lines[j].rstrip().endswith(";"):
                    break
                j += 1
            if j < len(lines) and lines[j].rstrip().endswith("{") and not lines[j].rstrip().endswith(";"):
                k = j + 1
                while k < len(lines) and not re.match(re.escape(indent) + r"\}", lines[k]):
                    k += 1
                n = k - i + 1
                name = re.search(r"([\w:~]+)\s*\(", head)
                longest.append((n, f, i + 1, name.group(1) if name else head[:40]))
                i = k
        i += 1
for n, f, line, name in longest:
    if n > 90:
        failures.append(f"{f}:{line} {name}(): {n} lines (at most 90 in planner/)")
    if name in ("plan", "planner::plan") and f.endswith("model/plan.cpp") and n >= 60:
        failures.append(f"{f}:{line} plan(): {n} lines (under 60: a spine of named stages)")

longest.sort(reverse=True)
print(f"{len(graph)} modules, {sum(len(d) for d in graph.values())} include arrows, {len(sccs)} cycles")
print("longest functions in planner/: " + "; ".join(f"{name} {n} ({f}:{line})" for n, f, line, name in longest[:5]))
for x in failures:
    print("FAIL", x)
sys.exit(1 if failures else 0)
