#!/usr/bin/env python3
"""Frame kinds on real workloads: pcct's against async-profiler's `ann`.

Reads a harness results directory that holds runs of a pcct configuration
with `kinds=on` (its JSON profiles) and of `ap-1ms` (its collapsed stacks
with `ann`), and compares, per workload, how each profiler saw the code run
at the samples' leaves: each sample counted by its deepest Java frame, by
that frame's kind (`_[0]` interpreted, `_[1]` C1, `_[j]` C2, `_[i]`
inlined). Written: the share of leaf samples of each kind for both, the
share without a known kind (pcct: frames AsyncGetCallTrace walked), the
share of samples without a Java frame, and the agreement: per method (the
60 hottest by pcct's leaf samples), 1 minus the total variation distance
between the two kind distributions, weighted by the method's share.

Usage:
  python3 benches/jvm/harness.py --workloads javac,h2 --configs kinds-1ms,ap-1ms \\
      --define "kinds-1ms=pcct:interval=1ms;kinds=on" --rounds 5
  python3 benches/jvm/kinds_agreement.py benches/results/<date-time> [--config kinds-1ms]
"""

import argparse
import collections
import json
import re
import sys
from pathlib import Path

SUFFIX = re.compile(r"^(.*)_\[([01ij])\]$")
KIND_SUFFIX = {"interpreted": "0", "c1_tier1": "1", "c1_tier2": "1", "c1_tier3": "1", "c2": "j", "native": "j",
               "inlined": "i"}
TOP = 60


def pcct_leaves(path):
    """(method name, kind letter or '?') -> samples at the leaf, and samples without a Java frame."""
    profile = json.loads(Path(path).read_text())
    names = {m["id"]: (m["class"] + "." + m["name"] if m["kind"] == "java" else None) for m in profile["methods"]}
    leaves = collections.Counter()
    no_java = 0
    parent = {}
    java_below = {}
    for node in profile["nodes"]:
        parent[node["id"]] = node.get("parent")
        samples = node["self"].get("samples", 0)
        name = names.get(node["method"])
        # A sample's deepest Java frame: the node's, else its nearest Java ancestor's.
        java_below[node["id"]] = (name, node.get("kind")) if name else java_below.get(node.get("parent"))
        if not samples:
            continue
        leaf = java_below[node["id"]]
        if leaf is None:
            no_java += samples
        else:
            leaves[(leaf[0], KIND_SUFFIX.get(leaf[1], "?"))] += samples
    return leaves, no_java


def ap_leaves(path):
    leaves = collections.Counter()
    no_java = 0
    for line in Path(path).read_text().splitlines():
        stack, _, value = line.rpartition(" ")
        value = int(value)
        java = [SUFFIX.match(frame) for frame in stack.split(";")]
        java = [match for match in java if match]
        if not java:
            continue  # threads that run no Java code (pcct samples Java threads only)
        name = java[-1].group(1).replace("/", ".")
        leaves[(name, java[-1].group(2))] += value
    return leaves, no_java


def distribution(counter):
    total = sum(counter.values())
    return {key: value / total for key, value in counter.items()} if total else {}


def compare(mine, theirs):
    mine_methods, their_methods = collections.defaultdict(collections.Counter), collections.defaultdict(collections.Counter)
    for (method, kind), samples in mine.items():
        mine_methods[method][kind] += samples
    for (method, kind), samples in theirs.items():
        their_methods[method][kind] += samples
    total = sum(mine.values())
    top = sorted(mine_methods, key=lambda m: -sum(mine_methods[m].values()))[:TOP]
    weight = sum(sum(mine_methods[m].values()) for m in top)
    agreement = 0.0
    for method in top:
        a = distribution({k: v for k, v in mine_methods[method].items() if k != "?"})
        b = distribution(their_methods.get(method, {}))
        tvd = 0.5 * sum(abs(a.get(k, 0) - b.get(k, 0)) for k in set(a) | set(b)) if b else 1.0
        agreement += sum(mine_methods[method].values()) / weight * (1 - tvd)
    return agreement, len(top), weight / total if total else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results")
    parser.add_argument("--config", default="kinds-1ms")
    args = parser.parse_args()
    results = Path(args.results)
    print("| workload | round | leaf samples by kind, pcct | async-profiler | pcct: kind unknown | no Java frame, pcct "
          "| agreement (top methods, their share) |")
    print("|---|---:|---|---|---:|---:|---:|")
    rounds = collections.defaultdict(dict)
    for mine_path in sorted(results.glob(f"*-{args.config}-r*.json")):
        workload, round_ = re.match(rf"(.*)-{re.escape(args.config)}-r(\d+)\.json", mine_path.name).groups()
        their_path = results / f"{workload}-ap-1ms-r{round_}.ap.collapsed"
        if not their_path.is_file():
            continue
        mine, mine_no_java = pcct_leaves(mine_path)
        theirs, _ = ap_leaves(their_path)
        rounds[workload][int(round_)] = (mine, theirs)
        kinds = lambda leaves: sum((collections.Counter({k: v}) for (m, k), v in leaves.items()), collections.Counter())
        text = lambda d: " ".join(f"`{k}` {v:.1%}" for k, v in sorted(d.items()) if k != "?")
        mine_kinds = distribution(kinds(mine))
        agreement, methods, share = compare(mine, theirs)
        total = sum(mine.values()) + mine_no_java
        print(f"| {workload} | {round_} | {text(mine_kinds)} | {text(distribution(kinds(theirs)))} "
              f"| {mine_kinds.get('?', 0):.2%} | {mine_no_java / total:.2%} | {agreement:.3f} ({methods}, {share:.0%}) |")
    # How far a profiler's own successive runs agree: the JIT compiles at
    # other moments in each run, so this is the most two runs can agree.
    print()
    print("| workload | pcct against pcct, successive rounds | async-profiler against itself | pcct against async-profiler |")
    print("|---|---:|---:|---:|")
    for workload, by_round in sorted(rounds.items()):
        order = sorted(by_round)
        pairs = list(zip(order, order[1:]))
        median = lambda values: sorted(values)[len(values) // 2] if values else float("nan")
        own = median([compare(by_round[a][0], by_round[b][0])[0] for a, b in pairs])
        theirs_own = median([compare(by_round[a][1], by_round[b][1])[0] for a, b in pairs])
        across = median([compare(*by_round[r])[0] for r in order])
        print(f"| {workload} | {own:.3f} | {theirs_own:.3f} | {across:.3f} |")


if __name__ == "__main__":
    sys.exit(main())
