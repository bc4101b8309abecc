#!/usr/bin/env python3
"""Overhead and precision of pcct on real Java workloads, beside JFR.

Runs every (workload, configuration) pair once per round, in a shuffled order
each round, and reports:

- overhead: median wall and CPU time (user+sys of the JVM process, from
  wait4's rusage) and the median of per-round ratios against the unprofiled
  run of the same round;
- precision, as Whaley measures it: the correlation between the profiles of
  successive rounds, per method (self samples) and per calling context (node
  and edge samples matched by textual context), computed by `pcct correlate`
  (the pcct crate's correlation); JFR recordings are converted with
  JfrStacks.java and `pcct import-stacks` first;
- pcct's own counters: samples per CPU-second, CPU accounted, signals,
  filtered, failed walks, late ticks.

Workloads: javac compiling java.util from the JDK's sources (Debian
openjdk-17-source, extracted without installing it so the JDK is not
upgraded), H2 running h2-workload.sql (Debian libh2-java, likewise), and the
bundled demo. Usage:

    benches/jvm/harness.py                      # everything, 10 rounds
    benches/jvm/harness.py --smoke              # 1 round, demo, pcct at 10 ms, short
    benches/jvm/harness.py --workloads demo --configs base,pcct-1ms,pcct-10ms --rounds 5
    benches/jvm/harness.py --record             # also write the tables into BENCHMARKS.md
"""

import argparse
import glob
import json
import math
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
WORK = ROOT / "benches" / "work"
RESULTS = ROOT / "benches" / "results"
JAVA_HOME = Path(os.environ.get("PCCT_BENCH_JAVA_HOME", "/usr/lib/jvm/java-17-openjdk-amd64"))
JAVA = JAVA_HOME / "bin" / "java"
JAVAC = JAVA_HOME / "bin" / "javac"
AGENT = ROOT / "target" / "release" / "libpcct_agent.so"
PCCT = ROOT / "target" / "release" / "pcct"

CONFIGS = {
    "base": {},
    "pcct-methods-1ms": {"pcct": "tree=methods,interval=1ms"},
    "pcct-1ms": {"pcct": "interval=1ms"},
    "pcct-10ms": {"pcct": "interval=10ms"},
    "pcct-50ms": {"pcct": "interval=50ms"},
    "jfr-default": {"jfr": "default"},
    "jfr-profile": {"jfr": "profile"},
    "jfr-1ms": {"jfr": "1ms"},
}
INTERVAL_NS = {
    "pcct-methods-1ms": 1_000_000,
    "pcct-1ms": 1_000_000,
    "pcct-10ms": 10_000_000,
    "pcct-50ms": 50_000_000,
    "jfr-default": 20_000_000,
    "jfr-profile": 10_000_000,
    "jfr-1ms": 1_000_000,
}


def log(message):
    print(message, file=sys.stderr, flush=True)


def run(command, **kwargs):
    return subprocess.run(command, check=True, **kwargs)


def extract_deb(package, member_glob):
    """Downloads a Debian package (without installing it) and extracts it; returns matching paths."""
    target = WORK / "debs" / package
    found = glob.glob(str(target / member_glob), recursive=True)
    if found:
        return found
    target.mkdir(parents=True, exist_ok=True)
    download = WORK / "debs"
    try:
        run(["apt-get", "download", package], cwd=download, stdout=subprocess.DEVNULL)
    except subprocess.CalledProcessError:
        run(["apt-get", "update", "-qq"])
        run(["apt-get", "download", package], cwd=download, stdout=subprocess.DEVNULL)
    deb = sorted(download.glob(f"{package}_*.deb"))[-1]
    run(["dpkg-deb", "-x", str(deb), str(target)])
    return glob.glob(str(target / member_glob), recursive=True)


def setup_demo(seconds):
    directory = WORK / "demo"
    directory.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "demo" / "Demo.java", directory / "Demo.java")
    if not (directory / "Demo.class").exists() or (directory / "Demo.class").stat().st_mtime < (directory / "Demo.java").stat().st_mtime:
        run([str(JAVAC), "-d", str(directory), str(directory / "Demo.java")])
    return {"args": ["-cp", str(directory), "Demo", str(seconds)], "cwd": directory}


def setup_javac(smoke):
    zips = extract_deb("openjdk-17-source", "usr/lib/jvm/openjdk-17/lib/src.zip")
    if not zips:
        raise SystemExit("openjdk-17-source has no src.zip")
    source = WORK / "javac" / "src"
    if not (source / "java.base" / "java" / "util").exists():
        source.mkdir(parents=True, exist_ok=True)
        run(["unzip", "-q", "-o", zips[0], "java.base/*", "-d", str(source)])
    files = sorted((source / "java.base" / "java" / "util").rglob("*.java"))
    if smoke:
        files = files[:40]
    listing = WORK / "javac" / ("files-smoke.txt" if smoke else "files.txt")
    listing.write_text("\n".join(str(f) for f in files) + "\n")
    out = WORK / "javac" / "out"
    return {
        "args": ["-m", "jdk.compiler/com.sun.tools.javac.Main", "--patch-module", f"java.base={source / 'java.base'}",
                 "-implicit:none", "-proc:none", "-nowarn", "-XDsuppressNotes", "-d", str(out), f"@{listing}"],
        "cwd": WORK / "javac",
        "clean": out,
    }


def setup_h2():
    jars = extract_deb("libh2-java", "usr/share/java/h2*.jar")
    jar = [j for j in jars if re.search(r"h2[-.0-9]*\.jar$", j)][0]
    return {
        "args": ["-cp", jar, "org.h2.tools.RunScript", "-url", "jdbc:h2:mem:bench", "-script", str(HERE / "h2-workload.sql")],
        "cwd": WORK,
    }


def jfr_settings(kind):
    if kind in ("default", "profile"):
        return kind
    custom = WORK / "jfr-1ms.jfc"
    if not custom.exists():
        text = (JAVA_HOME / "lib" / "jfr" / "default.jfc").read_text()
        text = re.sub(r'(<event name="jdk.ExecutionSample">.*?<setting name="period"[^>]*>)[^<]*(</setting>)',
                      r"\g<1>1 ms\g<2>", text, count=1, flags=re.S)
        custom.write_text(text)
    return str(custom)


def one_run(workload, spec, config, output_base):
    """Runs one JVM; returns wall seconds, CPU seconds and the profile path."""
    flags = []
    profile = None
    settings = CONFIGS[config]
    if "pcct" in settings:
        profile = Path(f"{output_base}.json")
        flags.append(f"-agentpath:{AGENT}={settings['pcct']},file={profile},quiet=on")
    if "jfr" in settings:
        recording = Path(f"{output_base}.jfr")
        flags.append(f"-XX:StartFlightRecording=filename={recording},settings={jfr_settings(settings['jfr'])}")
        profile = recording
    if spec.get("clean"):
        shutil.rmtree(spec["clean"], ignore_errors=True)
        Path(spec["clean"]).mkdir(parents=True, exist_ok=True)
    command = [str(JAVA), *flags, *spec["args"]]
    start = time.monotonic()
    process = subprocess.Popen(command, cwd=spec["cwd"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.monotonic() - start
    stderr = process.stderr.read().decode(errors="replace")
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise RuntimeError(f"{workload}/{config} exited {process.returncode}: {stderr[-2000:]}")
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "profile": str(profile) if profile else None}


def to_pcct_profile(path, config):
    """The JSON profile to correlate: pcct's own, or a JFR recording converted."""
    if path.endswith(".json"):
        return path
    stacks = path[:-4] + ".stacks"
    converted = path[:-4] + ".jfr.json"
    if not os.path.exists(converted):
        run([str(JAVA), str(HERE / "JfrStacks.java"), path, stacks], stderr=subprocess.DEVNULL)
        run([str(PCCT), "import-stacks", stacks, converted, "--interval-ns", str(INTERVAL_NS[config])], stderr=subprocess.DEVNULL)
    return converted


def correlate(a, b):
    result = subprocess.run([str(PCCT), "correlate", a, b], check=True, capture_output=True, text=True)
    return json.loads(result.stdout)


def pcct_counters(path):
    with open(path) as f:
        data = json.load(f)
    sampler = data.get("sampler", {})
    observed = sampler.get("cpu_ns_observed", 0)
    samples = sampler.get("samples_recorded", 0) + sampler.get("samples_failed", 0)
    failed = {reason: count for reason, count in sampler.get("agct_failures", []) if count}
    return {
        "samples": samples,
        "samples_per_cpu_s": samples / (observed / 1e9) if observed else 0.0,
        "cpu_accounted": (sampler.get("cpu_ns_recorded", 0) + sampler.get("cpu_ns_filtered", 0)) / observed if observed else 0.0,
        "signals": sampler.get("signals_sent", 0),
        "filtered": sampler.get("samples_filtered", 0),
        "idle": sampler.get("samples_idle", 0),
        "failed": failed,
        "ticks": sampler.get("ticks", 0),
        "ticks_late": sampler.get("ticks_late", 0),
        "ticks_missed": sampler.get("ticks_missed", 0),
        "spin_s": sampler.get("spin_ns", 0) / 1e9,
    }


def geometric_mean(values):
    values = [v for v in values if v is not None and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def summarise(results, workloads, configs):
    summary = {}
    for workload in workloads:
        for config in configs:
            runs = [r for r in results if r["workload"] == workload and r["config"] == config]
            if not runs:
                continue
            entry = {
                "runs": len(runs),
                "wall_median": statistics.median(r["wall"] for r in runs),
                "cpu_median": statistics.median(r["cpu"] for r in runs),
            }
            if config != "base":
                wall_ratios, cpu_ratios = [], []
                for r in runs:
                    base = [b for b in results if b["workload"] == workload and b["config"] == "base" and b["round"] == r["round"]]
                    if base:
                        wall_ratios.append(r["wall"] / base[0]["wall"])
                        cpu_ratios.append(r["cpu"] / base[0]["cpu"])
                if wall_ratios:
                    entry["wall_ratio"] = statistics.median(wall_ratios)
                    entry["cpu_ratio"] = statistics.median(cpu_ratios)
                    entry["cpu_ratio_min"] = min(cpu_ratios)
                    entry["cpu_ratio_max"] = max(cpu_ratios)
                profiles = [to_pcct_profile(r["profile"], config) for r in sorted(runs, key=lambda r: r["round"]) if r["profile"]]
                pairs = [correlate(a, b) for a, b in zip(profiles, profiles[1:])]
                if pairs:
                    entry["precision_method"] = geometric_mean([p["per_method"] for p in pairs])
                    entry["precision_context"] = geometric_mean([p["per_context"] for p in pairs])
                if config.startswith("pcct"):
                    counters = [pcct_counters(r["profile"]) for r in runs]
                    entry["counters"] = counters[-1]
                    entry["samples_per_cpu_s"] = statistics.median(c["samples_per_cpu_s"] for c in counters)
                    entry["cpu_accounted"] = statistics.median(c["cpu_accounted"] for c in counters)
            summary[f"{workload}/{config}"] = entry
    return summary


def fmt(value, digits=3):
    return "—" if value is None else f"{value:.{digits}f}"


def markdown(summary, workloads, configs, meta):
    lines = [
        f"Measured {meta['date']} on {meta['machine']}, {meta['java']}; {meta['rounds']} rounds, "
        f"configurations in shuffled order each round; ratios are medians of per-round ratios to the "
        f"unprofiled run of the same round. Command: `{meta['command']}`",
        "",
        "| workload | configuration | wall (s) | CPU (s) | wall ratio | CPU ratio (min-max) | precision per method | precision per context | samples / CPU-s | CPU accounted |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for workload in workloads:
        for config in configs:
            entry = summary.get(f"{workload}/{config}")
            if not entry:
                continue
            ratio = "—" if "cpu_ratio" not in entry else f"{entry['cpu_ratio']:.3f} ({entry['cpu_ratio_min']:.2f}-{entry['cpu_ratio_max']:.2f})"
            lines.append(
                f"| {workload} | {config} | {entry['wall_median']:.2f} | {entry['cpu_median']:.2f} | "
                f"{fmt(entry.get('wall_ratio'))} | {ratio} | {fmt(entry.get('precision_method'))} | "
                f"{fmt(entry.get('precision_context'))} | {fmt(entry.get('samples_per_cpu_s'), 0)} | {fmt(entry.get('cpu_accounted'))} |"
            )
    lines.append("")
    lines.append("pcct counters of the last round (signals, checksum-filtered, idle skips, failed walks by reason, late ticks / ticks, spin):")
    lines.append("")
    for key, entry in summary.items():
        counters = entry.get("counters")
        if counters:
            failed = ", ".join(f"{k} {v}" for k, v in counters["failed"].items()) or "none"
            lines.append(
                f"- {key}: {counters['signals']} signals, {counters['filtered']} filtered, {counters['idle']} idle, "
                f"failed: {failed}; late ticks {counters['ticks_late']}/{counters['ticks']} (missed {counters['ticks_missed']}); "
                f"spin {counters['spin_s']:.3f} s"
            )
    return "\n".join(lines) + "\n"


def record(text):
    path = ROOT / "BENCHMARKS.md"
    content = path.read_text()
    begin, end = "<!-- harness:begin -->", "<!-- harness:end -->"
    block = f"{begin}\n{text}{end}"
    if begin in content:
        content = re.sub(re.escape(begin) + r".*?" + re.escape(end), lambda _: block, content, flags=re.S)
    else:
        content += f"\n## Overhead and precision on real workloads (issue 5)\n\n{block}\n"
    path.write_text(content)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", default="javac,h2,demo")
    parser.add_argument("--configs", default=",".join(CONFIGS))
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--demo-seconds", type=int, default=15)
    parser.add_argument("--smoke", action="store_true", help="1 round, demo only, base and pcct at 10 ms, 3 s")
    parser.add_argument("--record", action="store_true", help="write the tables into BENCHMARKS.md")
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()
    if args.smoke:
        args.workloads, args.configs, args.rounds, args.demo_seconds = "demo", "base,pcct-10ms", 2, 3
    workloads = args.workloads.split(",")
    configs = args.configs.split(",")
    for config in configs:
        if config not in CONFIGS:
            raise SystemExit(f"unknown configuration {config}; known: {', '.join(CONFIGS)}")
    if "base" not in configs:
        configs.insert(0, "base")
    run(["cargo", "build", "--release", "-q", "-p", "pcct-agent", "-p", "pcct-cli"], cwd=ROOT)
    WORK.mkdir(parents=True, exist_ok=True)
    setups = {}
    for workload in workloads:
        if workload == "demo":
            setups[workload] = setup_demo(args.demo_seconds)
        elif workload == "javac":
            setups[workload] = setup_javac(args.smoke)
        elif workload == "h2":
            setups[workload] = setup_h2()
        else:
            raise SystemExit(f"unknown workload {workload}")
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out_dir = RESULTS / stamp
    out_dir.mkdir(parents=True, exist_ok=True)
    rng = random.Random(args.seed)
    results = []
    for round_index in range(args.rounds):
        order = [(w, c) for w in workloads for c in configs]
        rng.shuffle(order)
        for workload, config in order:
            base = out_dir / f"{workload}-{config}-r{round_index}"
            result = one_run(workload, setups[workload], config, base)
            result.update({"workload": workload, "config": config, "round": round_index})
            results.append(result)
            log(f"round {round_index + 1}/{args.rounds} {workload:6} {config:17} wall {result['wall']:6.2f} s  cpu {result['cpu']:6.2f} s")
    summary = summarise(results, workloads, configs)
    java_version = subprocess.run([str(JAVA), "-version"], capture_output=True, text=True).stderr.splitlines()[1]
    meta = {
        "date": time.strftime("%Y-%m-%d"),
        "machine": f"{os.cpu_count()} vCPUs",
        "java": java_version.strip(),
        "rounds": args.rounds,
        "command": "benches/jvm/harness.py " + " ".join(sys.argv[1:]),
    }
    (out_dir / "results.json").write_text(json.dumps({"meta": meta, "runs": results, "summary": summary}, indent=1))
    text = markdown(summary, workloads, configs, meta)
    print(text)
    if args.record:
        record(text)
    if args.smoke:
        # The smoke run checks the harness end to end: the pcct run must have
        # produced a profile with samples and correlations.
        entry = summary["demo/pcct-10ms"]
        assert entry["counters"]["samples"] > 0, entry
        assert entry.get("precision_method") is not None, entry
        log("smoke run passed")


if __name__ == "__main__":
    main()
