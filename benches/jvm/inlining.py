#!/usr/bin/env python3
"""How samples in inlined code are attributed, against the truth (issue 11).

Each program spends its CPU in small methods the JIT inlines, in a known
split. The truth is the same program run with those methods not inlined
(-XX:CompileCommand=dontinline,...), profiled by pcct; then the program runs
normally under
  pcct-on     pcct as shipped (it turns DebugNonSafepoints on),
  pcct-off    pcct with -XX:-DebugNonSafepoints and compiled=off (HotSpot's
              default: debug information at safepoints only; CompiledMethodLoad
              events would make HotSpot record it everywhere),
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
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from shares import correlation, self_shares
from shares import self_test as shares_self_test

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
AGENT = ROOT / "target" / "release" / "libpcct_agent.so"
ASYNC_PROFILER = ROOT.parent / "shared" / "peers" / "async-profiler-4.5" / "libasyncProfiler.so"

# program -> (sources, main class and arguments before the seconds, methods not inlined for the truth, methods shown)
PROGRAMS = {
    "loops": (["../../tests/java/InliningTruth.java"], ["InliningTruth", "loops"], ["InliningTruth::loops*"],
              ["InliningTruth.loopsA", "InliningTruth.loopsB", "InliningTruth.loopsC"]),
    "straight": (["../../tests/java/InliningTruth.java"], ["InliningTruth", "straight"], ["InliningTruth::straight*"],
                 ["InliningTruth.straightA", "InliningTruth.straightB", "InliningTruth.straightC"]),
    "callout": (["../../tests/java/InliningTruth.java"], ["InliningTruth", "callout"], ["InliningTruth::callout*"],
                ["InliningTruth.calloutA", "InliningTruth.calloutB"]),
    "demo": (["../../demo/Demo.java"], ["Demo"], ["Demo*::*"],
             ["Demo$Pricing.discount", "Demo$Validator.check", "Demo$Parser.parse", "Demo$Catalog.lookup"]),
    "boxed-catalog": (["inlining/BoxedCatalog.java"], ["BoxedCatalog"], ["BoxedCatalog*::*"],
                      ["BoxedCatalog$Pricing.discount", "BoxedCatalog$Catalog.lookup"]),
}

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
        # pcct-off: no CompiledMethodLoad events either, which would make
        # HotSpot record non-safepoint debug information all the same.
        extra = ",compiled=off" if config == "pcct-off" else ""
        options.append(f"-agentpath:{AGENT}=interval=1ms,file={out},http=off,quiet=on{extra}")
    command = [java, *options, "-cp", str(classes), *main, str(seconds)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=seconds * 10 + 60, cwd=work)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({result.returncode}):\n{result.stderr[-2000:]}")
    shares, no_java, _ = self_shares(out.read_text())
    return shares, no_java


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
            "—" if c == "truth" else f"{correlation(medians[c], medians['truth']) or float('nan'):.3f}" for c in configs
        )
        print(f"| {program} | r with the truth | {agreement} |")


def self_test():
    shares_self_test()
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
