#!/usr/bin/env python3
"""Frame kinds side by side with async-profiler's `ann`, against the truth.

tests/java/FrameKinds.java's methods run as known kinds of code once warm:
drive and interpreted are excluded from compilation (`_[0]`), c1Only may
not be compiled by C2 (`_[1]`), optimized is C2 code (`_[j]`) with
inlinedLeaf inlined into it (`_[i]`). Each round runs the program under
  pcct   pcct with annotate=on, its collapsed file
  ap     async-profiler 4.5 (../shared/peers/, or $PCCT_ASYNC_PROFILER),
         cpu at 1 ms with `ann,threads`, its collapsed file
in turn (the order alternates by round), on every JDK asked for. For each
method: the share of its frames with each suffix, for both profilers; the
share with the truth's suffix; and the agreement between the two (1 minus
the total variation distance between their suffix shares). Also the share
of each profiler's samples of the main thread without a Java frame.

Usage:
  python3 benches/jvm/frame_kinds.py [--jdks 17,21,25] [--rounds 3] [--seconds 5]
The release agent must be built (cargo build --release -p pcct-agent).
"""

import argparse
import collections
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
AGENT = ROOT / "target" / "release" / "libpcct_agent.so"
ASYNC_PROFILER = Path(os.environ.get(
    "PCCT_ASYNC_PROFILER", ROOT.parent / "shared" / "peers" / "async-profiler-4.5" / "libasyncProfiler.so"))
CLASS = "FrameKinds"
TRUTH = {"drive": "_[0]", "interpreted": "_[0]", "c1Only": "_[1]", "optimized": "_[j]", "inlinedLeaf": "_[i]"}
FRAME = re.compile(r"^(?:FrameKinds)\.(\w+?)(_\[.\])?$")


def jdk_home(major):
    """Where JDK `major` is, as the tests look for it."""
    if os.environ.get(f"PCCT_JDK{major}"):
        return Path(os.environ[f"PCCT_JDK{major}"])
    if major == 17:
        return Path("/usr/lib/jvm/java-17-openjdk-amd64")
    base = Path(os.environ.get("PCCT_JDKS_DIR", Path.home() / ".cache" / "pcct" / "jdks"))
    return base / str(major)


def flags(directives):
    return ["-XX:CompileCommand=quiet", f"-XX:CompileCommand=exclude,{CLASS}::drive",
            f"-XX:CompileCommand=exclude,{CLASS}::interpreted", "-XX:+UnlockDiagnosticVMOptions",
            f"-XX:CompilerDirectivesFile={directives}"]


def suffixes(path, main_only):
    """Each FrameKinds method's frame weights by suffix, and (samples of the
    main thread, those without a Java frame)."""
    methods = collections.defaultdict(collections.Counter)
    samples = no_java = 0
    lines = Path(path).read_text().splitlines()
    # The main thread by its frames (async-profiler names it when it writes
    # the file, when it is `DestroyJavaVM`).
    main = {line.split(";", 1)[0] for line in lines if f";{CLASS}.main_[" in line}
    for line in lines:
        stack, _, value = line.rpartition(" ")
        frames = stack.split(";")
        if main_only:
            if frames[0] not in main:
                continue
            frames = frames[1:]
        value = int(value)
        samples += value
        java = False
        for frame in frames:
            match = FRAME.match(frame)
            if match:
                methods[match.group(1)][match.group(2) or ""] += value
            # async-profiler writes a suffix on every Java frame; pcct (native
            # frames off) writes a Java frame of unknown kind without one.
            java = java or bool(re.search(r"_\[[01ij]\]$", frame)) or not (main_only or frame.startswith("["))
        no_java += 0 if java else value
    return methods, (samples, no_java)


def shares(counter):
    total = sum(counter.values())
    return {suffix: count / total for suffix, count in counter.items()} if total else {}


def agreement(a, b):
    keys = set(a) | set(b)
    return 1 - 0.5 * sum(abs(a.get(key, 0) - b.get(key, 0)) for key in keys)


def run(java, classes, directives, agent, out, seconds):
    command = [str(java), *flags(directives), agent, "-cp", str(classes), CLASS, str(seconds)]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=300)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jdks", default="17,21,25")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=5)
    args = parser.parse_args()
    if not AGENT.is_file():
        sys.exit(f"{AGENT} is missing: cargo build --release -p pcct-agent")
    if not ASYNC_PROFILER.is_file():
        sys.exit(f"{ASYNC_PROFILER} is missing (set PCCT_ASYNC_PROFILER)")
    work = Path(tempfile.mkdtemp(prefix="pcct-kinds-"))
    classes = work / "classes"
    subprocess.run([str(jdk_home(17) / "bin" / "javac"), "--release", "11", "-d", str(classes), str(ROOT / "tests/java/FrameKinds.java")],
                   check=True)
    directives = work / "c1-only.json"
    directives.write_text('[{ match: "FrameKinds::c1Only", c2: { Exclude: true } }]\n')
    print(f"`python3 benches/jvm/frame_kinds.py --jdks {args.jdks} --rounds {args.rounds} --seconds {args.seconds}`\n")
    print("| JDK | method | truth | pcct: truth's share | ap: truth's share | pcct's suffixes | ap's suffixes "
          "| agreement |")
    print("|---|---|---|---:|---:|---|---|---:|")
    no_java = collections.defaultdict(list)
    for major in [int(text) for text in args.jdks.split(",")]:
        java = jdk_home(major) / "bin" / "java"
        per = {"pcct": collections.defaultdict(collections.Counter), "ap": collections.defaultdict(collections.Counter)}
        for round_ in range(args.rounds):
            order = ["pcct", "ap"] if round_ % 2 == 0 else ["ap", "pcct"]
            for name in order:
                out = work / f"{major}-{name}-{round_}.collapsed"
                if name == "pcct":
                    agent = f"-agentpath:{AGENT}=interval=1ms,metric=samples,annotate=on,file={out},http=off,quiet=on"
                else:
                    agent = f"-agentpath:{ASYNC_PROFILER}=start,event=cpu,interval=1ms,ann,threads,file={out}"
                run(java, classes, directives, agent, out, args.seconds)
                methods, (samples, without) = suffixes(out, main_only=name == "ap")
                for method, counter in methods.items():
                    per[name][method].update(counter)
                no_java[(major, name)].append(without / samples if samples else 0.0)
        for method, truth in TRUTH.items():
            mine, theirs = shares(per["pcct"][method]), shares(per["ap"][method])
            text = lambda s: ", ".join(f"`{k or 'none'}` {v:.1%}" for k, v in sorted(s.items(), key=lambda kv: -kv[1]))
            print(f"| {major} | {method} | `{truth}` | {mine.get(truth, 0):.1%} | {theirs.get(truth, 0):.1%} "
                  f"| {text(mine)} | {text(theirs)} | {agreement(mine, theirs):.3f} |")
    print()
    print("Samples of the main thread without a Java frame, median of the rounds: " + "; ".join(
        f"JDK {major} {name} {statistics.median(values):.2%}" for (major, name), values in sorted(no_java.items())))


if __name__ == "__main__":
    main()
