#!/usr/bin/env python3
"""How samples in inlined code are attributed, against the truth (issue 11).

Each program spends its CPU in small methods the JIT inlines, in a known
split. The truth is the same program run with those methods not inlined
(-XX:CompileCommand=dontinline,...), profiled by pcct; then the program runs
normally under
  pcct-on     pcct as shipped (it turns DebugNonSafepoints on),
  pcct-off    pcct with -XX:-DebugNonSafepoints (HotSpot's default: debug
              information at safepoints only),
  ap          async-profiler 4.5 (../shared/peers/), which turns
              DebugNonSafepoints on too; skipped when the library is absent.
Every run gives each method's share of the CPU by self (the sample's deepest
Java frame; pseudo-frames left out). The table shows the methods of
interest, the share of samples without a Java frame, and each
configuration's per-method correlation with the truth.

Programs (benches/jvm/inlining/, demo/):
  loops           InliningTruth loops: three leaves with counted loops, 60/30/10
  straight        InliningTruth straight: three straight-line leaves, 60/30/10
  callout         InliningTruth callout: a looping leaf, then one that calls out
  demo            demo/Demo.java (Pricing.discount about 70%)
  boxed-catalog   the demo with a HashMap catalog, a case HotSpot describes wrongly

Usage:
  python3 benches/jvm/inlining.py [--jdk /usr/lib/jvm/...] [--seconds 5] [--rounds 1] [--programs loops,demo]
  python3 benches/jvm/inlining.py --self-test     # the share computation on known stacks
The release agent must be built (cargo build --release -p pcct-agent).
"""

import argparse
import collections
import math
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
AGENT = ROOT / "target" / "release" / "libpcct_agent.so"
ASYNC_PROFILER = ROOT.parent / "shared" / "peers" / "async-profiler-4.5" / "libasyncProfiler.so"

# program -> (sources, main class and arguments before the seconds, methods not inlined for the truth, methods shown)
PROGRAMS = {
    "loops": (["inlining/InliningTruth.java"], ["InliningTruth", "loops"], ["InliningTruth::loops*"],
              ["InliningTruth.loopsA", "InliningTruth.loopsB", "InliningTruth.loopsC"]),
    "straight": (["inlining/InliningTruth.java"], ["InliningTruth", "straight"], ["InliningTruth::straight*"],
                 ["InliningTruth.straightA", "InliningTruth.straightB", "InliningTruth.straightC"]),
    "callout": (["inlining/InliningTruth.java"], ["InliningTruth", "callout"], ["InliningTruth::callout*"],
                ["InliningTruth.calloutA", "InliningTruth.calloutB"]),
    "demo": (["../../demo/Demo.java"], ["Demo"], ["Demo*::*"],
             ["Demo$Pricing.discount", "Demo$Validator.check", "Demo$Parser.parse", "Demo$Catalog.lookup"]),
    "boxed-catalog": (["inlining/BoxedCatalog.java"], ["BoxedCatalog"], ["BoxedCatalog*::*"],
                      ["BoxedCatalog$Pricing.discount", "BoxedCatalog$Catalog.lookup"]),
}

JAVA_SUFFIX = re.compile(r"_\[(j|i|0|1)\]$")


def normalise(frame):
    """async-profiler's `java/util/Map.get` -> pcct's `java.util.Map.get`."""
    return frame.replace("/", ".")


def self_shares(collapsed_text):
    """(method -> share of the CPU by self, share without a Java frame) of
    collapsed stacks, pcct's or async-profiler's (with `ann`). async-profiler
    samples every thread: stacks with no Java frame count only when they are
    error frames (`[...]`), as its notes say."""
    per_method = collections.Counter()
    total = 0.0
    no_java = 0.0
    lines = [line for line in collapsed_text.splitlines() if line.strip()]
    annotated = any("_[j]" in line or "_[0]" in line for line in lines[:500])
    for line in lines:
        stack, _, value = line.rpartition(" ")
        weight = float(value)
        frames = stack.split(";")
        if annotated:
            java = [JAVA_SUFFIX.sub("", frame) for frame in frames if JAVA_SUFFIX.search(frame)]
            if not java and not any(frame.startswith("[") for frame in frames):
                continue  # a JVM thread's native stack
        else:
            java = [frame for frame in frames if not frame.startswith("[")]
        total += weight
        if java:
            per_method[normalise(java[-1])] += weight
        else:
            no_java += weight
    if total == 0:
        return {}, 0.0
    return {method: weight / total for method, weight in per_method.items()}, no_java / total


def correlation(a, b):
    keys = sorted(set(a) | set(b))
    if len(keys) < 2:
        return float("nan")
    xs = [a.get(key, 0.0) for key in keys]
    ys = [b.get(key, 0.0) for key in keys]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    cov = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    vx = sum((x - mx) ** 2 for x in xs)
    vy = sum((y - my) ** 2 for y in ys)
    return cov / math.sqrt(vx * vy) if vx and vy else float("nan")


def run(java, classes, program, config, seconds, work):
    sources, main, dontinline, _ = PROGRAMS[program]
    out = work / f"{program}-{config}.collapsed"
    options = []
    if config == "truth":
        options += ["-XX:CompileCommand=quiet"] + [f"-XX:CompileCommand=dontinline,{m}" for m in dontinline]
    if config == "pcct-off":
        options += ["-XX:+UnlockDiagnosticVMOptions", "-XX:-DebugNonSafepoints"]
    if config == "ap":
        options.append(f"-agentpath:{ASYNC_PROFILER}=start,event=cpu,interval=1ms,ann,file={out}")
    else:
        options.append(f"-agentpath:{AGENT}=interval=1ms,file={out},http=off,quiet=on")
    command = [java, *options, "-cp", str(classes), *main, str(seconds)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=seconds * 10 + 60, cwd=work)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({result.returncode}):\n{result.stderr[-2000:]}")
    return self_shares(out.read_text())


def measure(args):
    java = Path(args.jdk) / "bin" / "java"
    javac = Path(args.jdk) / "bin" / "javac"
    if not AGENT.is_file():
        raise SystemExit(f"{AGENT} is missing: cargo build --release -p pcct-agent")
    configs = ["truth", "pcct-on", "pcct-off"] + (["ap"] if ASYNC_PROFILER.is_file() else [])
    programs = args.programs.split(",")
    with tempfile.TemporaryDirectory(prefix="pcct-inlining-") as temporary:
        work = Path(temporary)
        classes = work / "classes"
        sources = sorted({str((HERE / source).resolve()) for name in programs for source in PROGRAMS[name][0]})
        subprocess.run([javac, "-d", classes, *sources], check=True)
        rows = []
        for program in programs:
            shares = {config: [] for config in configs}
            for _ in range(args.rounds):
                for config in configs:
                    shares[config].append(run(java, classes, program, config, args.seconds, work))
            rows.append((program, shares))
    print_table(rows, configs, args)


def median_shares(runs):
    methods = set().union(*(shares for shares, _ in runs))
    return {m: statistics.median(shares.get(m, 0.0) for shares, _ in runs) for m in methods}


def print_table(rows, configs, args):
    print(f"<!-- python3 benches/jvm/inlining.py --jdk {args.jdk} --seconds {args.seconds} --rounds {args.rounds} -->")
    print("| program | method | " + " | ".join(configs) + " |")
    print("|---|---|" + "---:|" * len(configs))
    for program, shares in rows:
        medians = {config: median_shares(runs) for config, runs in shares.items()}
        for method in PROGRAMS[program][3]:
            cells = " | ".join(f"{medians[c].get(method, 0.0) * 100:.1f}" for c in configs)
            print(f"| {program} | `{method}` | {cells} |")
        no_java = " | ".join(f"{statistics.median(nj for _, nj in shares[c]) * 100:.2f}%" for c in configs)
        print(f"| {program} | no Java frame | {no_java} |")
        agreement = " | ".join(
            "—" if c == "truth" else f"{correlation(medians[c], medians['truth']):.3f}" for c in configs
        )
        print(f"| {program} | r with the truth | {agreement} |")


def self_test():
    pcct = "A.main;A.run;A.leaf 300\nA.main;A.run 100\n[unknown_Java] 100\n"
    shares, no_java = self_shares(pcct)
    assert abs(shares["A.leaf"] - 0.6) < 1e-9 and abs(shares["A.run"] - 0.2) < 1e-9, shares
    assert abs(no_java - 0.2) < 1e-9
    ap = ("start_thread;A/main_[j];A/leaf_[i] 3\nA/main_[j] 1\nthread_native_entry;GCThread::run 50\n"
          "[unknown] 1\n")
    shares, no_java = self_shares(ap)
    assert abs(shares["A.leaf"] - 0.6) < 1e-9 and abs(no_java - 0.2) < 1e-9, (shares, no_java)
    assert abs(correlation({"a": 0.6, "b": 0.4}, {"a": 0.6, "b": 0.4}) - 1.0) < 1e-9
    print("self-test passed")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jdk", default="/usr/lib/jvm/java-17-openjdk-amd64")
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--programs", default=",".join(PROGRAMS))
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        self_test()
        return
    unknown = set(args.programs.split(",")) - set(PROGRAMS)
    if unknown:
        raise SystemExit(f"--programs: unknown {sorted(unknown)}; known: {', '.join(PROGRAMS)}")
    measure(args)


if __name__ == "__main__":
    sys.exit(main())
