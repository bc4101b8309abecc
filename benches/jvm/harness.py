#!/usr/bin/env python3
"""Overhead and precision of pcct on real Java workloads, beside JFR (issue 5).

Every (workload, configuration) pair runs once per round, in a new shuffled
order each round (seeded; the seed is recorded), so slow drifts of this noisy
machine spread over all configurations.

Workloads (--workloads, default all seven):
  javac        javac compiling java/util from the JDK's own sources (java.base
               extracted from lib/src.zip of Debian's openjdk-17-source), ~18 s;
               class files to /dev/shm where it is writable (class_output_directory)
  h2           H2 (Debian libh2-java) running h2-workload.sql in memory, ~15-20 s
  demo         demo/Demo.java, the bundled order-pricing demo (--demo-seconds)
  groundtruth  tests/java/GroundTruth.java: one busy thread with known CPU
               shares per method (--groundtruth-seconds: of its busy thread's CPU)
  syscall      tests/java/SyscallTruth.java: one thread in Java arithmetic, 32 MiB
               reads and short stat calls, which measures each method's CPU with
               its own thread clock (--syscall-seconds of it); each profiler's
               inclusive shares of the three are held against that truth
  busy         benches/jvm/BusyDeep.java: one thread spinning at a 40-frame
               stack (--busy-seconds of wall time), the sampler thread's cost
  service      benches/jvm/ServiceLoad.java: the JDK's HTTP server on 8 worker
               threads answering 8 keep-alive clients in the same JVM, with a
               contended ReentrantLock, a monitor and gzipped answers
               (--service-seconds of wall time); unit of work: a request

Configurations (--configs, default all; `base` is always added):
  base                          no profiler
  pcct-methods-1ms              pcct, hot-method counters only (tree=methods), 1 ms
  pcct-1ms pcct-10ms pcct-50ms  pcct in PCCT mode
  jfr-default                   JFR settings=default (jdk.ExecutionSample every 20 ms)
  jfr-profile                   JFR settings=profile (every 10 ms)
  jfr-1ms                       a copy of default.jfc with jdk.ExecutionSample at 1 ms
  pcct-agct-1ms                 pcct with AsyncGetCallTrace alone (walker=agct), 1 ms: the walker's A/B
  ap-1ms ap-10ms                async-profiler 4.5 (../shared/peers/, or $PCCT_ASYNC_PROFILER), cpu event,
                                collapsed with `ann`; skipped when the library is absent
  pcct-noevents-10ms            pcct at 10 ms with alloc=off,locks=off: pcct-10ms (allocations sampled every
                                512 KiB, contended monitors recorded: the defaults) over it is what the events cost
  jfr-noalloc                   JFR settings=default with jdk.ObjectAllocationSample off: jfr-default over it is
                                what JFR's allocation sampling costs
  ap-alloc                      async-profiler 4.5, alloc event every 512 KiB (`total`: bytes), beside pcct for
                                agreement per allocating method
  ap-all-10ms                   async-profiler 4.5, cpu at 10 ms with its alloc and lock events at their
                                defaults, written as JFR: cost only, beside pcct-10ms (`--compare-cost`)
  --define NAME=pcct:OPTIONS (agent options separated by `;`; NAME=pcct@LIBRARY:OPTIONS
  runs another build of the agent, to compare two builds in the same rounds),
  --define NAME=jfr:SETTINGS, --define NAME=ap:INTERVAL or --define NAME=ap_alloc:BYTES adds a configuration.
  Every pcct run gets http=off,quiet=on (the HTTP server is not part of the
  sampling cost) unless its options name http; every JFR run gets
  -XX:FlightRecorderOptions:stackdepth=512 (pcct walks up to 512 frames).

Measured per run: wall time; CPU = user+sys of the JVM from wait4's rusage;
the CPU of the Java threads (utime+stime of /proc/<pid>/task/*/stat, polled
every 200 ms, JVM service threads excluded); pcct's counters and the
profile's total CPU; for JFR the samples and truncated stacks.
Reported: per-round pair ratios to the unprofiled run of the same round
(median, min-max); precision as Whaley defines it: the correlation between
successive rounds' profiles per method and per calling context (`pcct
correlate`; JFR recordings converted by JfrStacks.java and `pcct
import-stacks`), the median of those pairs; over real methods only (each
sample by its deepest Java frame, benches/jvm/shares.py): the share of
samples without a Java frame, precision (successive rounds, and every pair
of rounds), and agreement with async-profiler's run of the same workload and
round; samples per Java-thread CPU-second; CPU accounted = profile CPU /
Java-thread CPU; pcct's outcome counters.

Outputs, in benches/results/<date-time>/:
  results.jsonl       one meta line (seed, machine, JDK, date, command), then
                      one line per run, appended as soon as the run ends
                      (failed runs too, with their stderr tail)
  <workload>-<config>-r<round>.{json,jfr,jfr.json,stdout,stderr}
On stdout: a Markdown table laid out like Whaley's Figures 13 and 14
(workload x interval, JFR beside pcct), a counters table and warnings.
--record replaces the block between `<!-- harness:begin -->` and
`<!-- harness:end -->` in BENCHMARKS.md with them.

Missing Debian packages are installed (with sudo when not root): the JDK
(openjdk-17-jdk-headless) if javac or jfr is missing, openjdk-17-source for
javac (its dependency may upgrade the JDK to the same version), libh2-java.

Commands (the release build comes first, unless --no-build):
  python3 benches/jvm/harness.py                  # full run: 4 workloads x 8 configurations x 10 rounds, ~2-2.5 h
  python3 benches/jvm/harness.py --record         # the same, and write the tables into BENCHMARKS.md
  python3 benches/jvm/harness.py --smoke          # demo 3 s; base, pcct-10ms, jfr-default; 2 rounds
                                                  # (2 are needed for one correlation); under a minute
  python3 benches/jvm/harness.py --workloads demo --configs base,pcct-1ms,pcct-10ms
                                                  # the issue 3 overhead check, ~10 min
  python3 benches/jvm/harness.py --workloads h2,javac --rounds 10 \
      --configs base,pcct-10ms,pcct-noevents-10ms,jfr-default,jfr-noalloc,ap-alloc
                                                  # the cost of allocation sampling (issue 13), ~1.5 h

Native frames (issue 41): a pcct configuration with native=on (--define NAME=pcct:interval=1ms;native=on)
beside async-profiler's cpu event adds a table: the share of the Java threads' samples with a native frame
below their deepest Java frame, and the agreement per native function (benches/jvm/shares.py, native_shares).

Allocation sampling (issue 13): with ap-alloc or pcct-noevents-10ms among the configurations, a table
gives per workload the CPU of pcct-10ms over pcct-noevents-10ms, of jfr-default over jfr-noalloc and of
ap-alloc over base (per-round pairs), pcct's allocations recorded per second, and the agreement per
allocating method (each allocation by its deepest Java frame below the allocated type) of pcct and
async-profiler in the same round.
  python3 benches/jvm/harness.py --summarise-only benches/results/<date-time>/results.jsonl [--record]

Precision of two configurations over real methods, pooled over stored runs of the same workloads: each
one's median correlation over all pairs of its rounds, their difference and its 95 % bootstrap interval
(the rounds drawn again with replacement, 2000 times; benches/jvm/shares.py, precision_difference):
  python3 benches/jvm/harness.py --compare-precision pcct-1ms,ap-1ms benches/results/<run>/results.jsonl ...

Where two configurations' rounds vary, pooled the same way: per workload, the methods that vary most
(mean share, standard deviation and largest share of each configuration), and the variance summed over
methods (benches/jvm/shares.py, method_spread); one profiler that adds variance or moves time between
methods shows there:
  python3 benches/jvm/harness.py --method-spread pcct-1ms,ap-1ms benches/results/<run>/results.jsonl ...
"""

import argparse
import atexit
import fnmatch
import glob
import itertools
import json
import os
import platform
import random
import re
import select
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from shares import correlation as shares_correlation  # noqa: E402  (beside this script)
from shares import allocator_shares, inclusive_shares, method_spread, native_shares, precision_difference, self_shares  # noqa: E402,E501

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
WORK = ROOT / "benches" / "work"
RESULTS = ROOT / "benches" / "results"
JAVA_HOME = Path(os.environ.get("PCCT_BENCH_JAVA_HOME", "/usr/lib/jvm/java-17-openjdk-amd64"))
JAVA = JAVA_HOME / "bin" / "java"
JAVAC = JAVA_HOME / "bin" / "javac"
AGENT = ROOT / "target" / "release" / "libpcct_agent.so"
PCCT = ROOT / "target" / "release" / "pcct"
# async-profiler 4.5, a peer run beside pcct in the same rounds (optional).
ASYNC_PROFILER = Path(os.environ.get(
    "PCCT_ASYNC_PROFILER", ROOT.parent / "shared" / "peers" / "async-profiler-4.5" / "libasyncProfiler.so"))
BENCHMARKS = ROOT / "BENCHMARKS.md"
MARK_BEGIN, MARK_END = "<!-- harness:begin -->", "<!-- harness:end -->"

CONFIGS = {
    "base": {},
    "pcct-methods-1ms": {"pcct": "tree=methods,interval=1ms"},
    "pcct-1ms": {"pcct": "interval=1ms"},
    "pcct-agct-1ms": {"pcct": "interval=1ms,walker=agct"},
    "pcct-10ms": {"pcct": "interval=10ms"},
    "pcct-50ms": {"pcct": "interval=50ms"},
    "jfr-default": {"jfr": "default"},
    "jfr-profile": {"jfr": "profile"},
    "jfr-1ms": {"jfr": "1ms"},
    "ap-1ms": {"ap": "1ms"},
    "ap-10ms": {"ap": "10ms"},
    "pcct-noevents-10ms": {"pcct": "interval=10ms,alloc=off,locks=off"},
    "jfr-noalloc": {"jfr": "noalloc"},
    "ap-alloc": {"ap_alloc": "524288"},
    # async-profiler with its CPU, allocation and lock events at their defaults (alloc 512 KiB, lock
    # 10 us) beside pcct's defaults at 10 ms: cost only (several events are written as JFR).
    "ap-all-10ms": {"ap_all": "10ms"},
}
# The configurations of the allocation-sampling table: (configuration, the same without allocation sampling).
ALLOC_PAIRS = (("pcct-10ms", "pcct-noevents-10ms"), ("jfr-default", "jfr-noalloc"), ("ap-alloc", "base"))
# jdk.ExecutionSample's period in JDK 17's default.jfc and profile.jfc.
JFR_INTERVAL_NS = {"default": 20_000_000, "profile": 10_000_000, "1ms": 1_000_000}
JFR_STACK_DEPTH = 512  # pcct's default depth: both profilers see the same frames
POLL_S = 0.2  # /proc/<pid>/task poll period
MIN_TIMEOUT_S = 120
# Kernel names (15 bytes at most) of JVM threads that run no Java code, and
# of the profilers' own: excluded from the Java threads' CPU.
SERVICE_THREADS = (
    "VM Thread", "VM Periodic Tas*", "GC Thread#*", "G1*", "C1 CompilerThre*", "C2 CompilerThre*",
    "Sweeper thread", "Service Thread", "Monitor Deflati*", "VM JFR Buffer*", "JFR *", "pcct-*",
)
# The JVM's own threads by the root pcct gives them with threads=all (sampler/src/thread_kinds.rs), by
# their kernel names: the whole-process table holds the profile's CPU under each root against these.
THREAD_KINDS = {
    "[C2 CompilerThread]": ("C2 CompilerThre*",),
    "[C1 CompilerThread]": ("C1 CompilerThre*",),
    "[GC]": ("GC Thread*", "G1 *", "GC *", "ZWorker*", "Shenandoah*"),
    "[VM Thread]": ("VM Thread",),
}
SMOKE = {"workloads": "demo", "configs": "base,pcct-10ms,jfr-default", "rounds": 2, "demo_seconds": 3}


def log(message):
    print(message, file=sys.stderr, flush=True)


def run(command, **kwargs):
    return subprocess.run([str(c) for c in command], check=True, **kwargs)


# ---------------------------------------------------------------- configurations


def parse_duration_ns(text):
    """`500us`, `1ms`, `1s` -> nanoseconds (the agent's interval syntax)."""
    match = re.fullmatch(r"([0-9.]+)\s*(ns|us|ms|s)", text.strip())
    if not match:
        raise ValueError(f"bad duration {text!r}")
    return int(float(match.group(1)) * {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[match.group(2)])


def pcct_options(options):
    """The agent's option string as a dict (items split on `,`/`;`, key from value on the first `=`/`:`)."""
    parsed = {}
    for item in re.split(r"[,;]", options):
        item = item.strip()
        if item:
            split = re.search(r"[=:]", item)
            key, value = (item[: split.start()], item[split.end():]) if split else (item, "")
            parsed[key.strip()] = value.strip()
    return parsed


def config_interval_ns(spec):
    """The sampling interval of a configuration; None without a profiler or with a bad interval (the run will fail)."""
    if "pcct" in spec:
        try:
            return parse_duration_ns(pcct_options(spec["pcct"]).get("interval", "10ms"))
        except ValueError:
            return None
    if "jfr" in spec:
        return JFR_INTERVAL_NS.get(spec["jfr"], 20_000_000)
    if "ap" in spec:
        return parse_duration_ns(spec["ap"])
    return None


def is_hot_methods(spec):
    return "pcct" in spec and pcct_options(spec["pcct"]).get("tree") in ("methods", "hot-methods")


def resolve_configs(names, definitions):
    """The configurations to run, by name (built-in or --define'd), base first."""
    known = dict(CONFIGS)
    for definition in definitions:
        name, _, rest = definition.partition("=")
        kind, _, value = rest.partition(":")
        kind, at, library = kind.partition("@")
        if kind not in ("pcct", "jfr", "ap", "ap_alloc") or not name or (at and (kind != "pcct" or not library)):
            raise SystemExit(f"--define {definition!r}: expected NAME=pcct:OPTIONS, NAME=pcct@LIBRARY:OPTIONS, "
                             f"NAME=jfr:SETTINGS, NAME=ap:INTERVAL or NAME=ap_alloc:BYTES")
        known[name] = {kind: value}
        if at:
            if not Path(library).is_file():
                raise SystemExit(f"--define {definition!r}: {library} is not a file")
            known[name]["agent"] = str(Path(library).resolve())
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit(f"unknown configuration {', '.join(unknown)}; known: {', '.join(known)}")
    if not ASYNC_PROFILER.is_file():
        skipped = [n for n in names if {"ap", "ap_alloc", "ap_all"} & known[n].keys()]
        if skipped:
            log(f"{ASYNC_PROFILER} is absent: skipping {', '.join(skipped)}")
        names = [n for n in names if n not in skipped]
    ordered = ["base"] + [n for n in names if n != "base"]
    return {name: known[name] for name in ordered}


# ---------------------------------------------------------------- fresh machine


def package_installed(package):
    result = subprocess.run(["dpkg-query", "-W", "-f=${Status}", package], capture_output=True, text=True)
    return result.returncode == 0 and "install ok installed" in result.stdout


def apt_get(*arguments):
    # sudo resets the environment: `env` passes DEBIAN_FRONTEND through.
    prefix = [] if os.geteuid() == 0 else ["sudo"]
    if prefix and not shutil.which("sudo"):
        raise SystemExit(f"need root or sudo to run apt-get {' '.join(arguments)}")
    run([*prefix, "env", "DEBIAN_FRONTEND=noninteractive", "apt-get", *arguments])


def ensure_packages(*packages):
    """Installs the Debian packages that are missing."""
    missing = [p for p in packages if not package_installed(p)]
    if not missing:
        return
    log(f"installing {' '.join(missing)}")
    # A fresh image often has no package lists at all: install would find nothing.
    if not glob.glob("/var/lib/apt/lists/*_Packages*"):
        apt_get("update", "-q")
    try:
        apt_get("install", "-y", "-q", "--no-install-recommends", *missing)
    except subprocess.CalledProcessError:
        apt_get("update", "-q")  # stale lists name files the mirror no longer has
        apt_get("install", "-y", "-q", "--no-install-recommends", *missing)


def ensure_jdk():
    if not all((JAVA_HOME / "bin" / tool).exists() for tool in ("java", "javac", "jfr")):
        if "PCCT_BENCH_JAVA_HOME" in os.environ:
            raise SystemExit(f"{JAVA_HOME} lacks java, javac or jfr")
        ensure_packages("openjdk-17-jdk-headless")


def compile_java(sources, classes):
    run([JAVAC, "-nowarn", "-d", classes, *sources], stdout=subprocess.DEVNULL)


def find_src_zip():
    for candidate in (JAVA_HOME / "lib" / "src.zip", Path("/usr/lib/jvm/openjdk-17/lib/src.zip")):
        if candidate.exists():
            return candidate.resolve()
    raise SystemExit("openjdk-17-source is installed but no lib/src.zip was found")


def extract_java_base(src_zip, target):
    """Extracts java.base/ from src.zip into target, unless a complete extraction of the same zip is there."""
    stat = src_zip.stat()
    stamp = f"{src_zip} {stat.st_size} {int(stat.st_mtime)}\n"
    marker = target / ".complete"
    # The marker is written only after the last file: an interrupted
    # extraction (or one of another src.zip) is thrown away and redone.
    if marker.exists() and marker.read_text() == stamp:
        return
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    log(f"extracting java.base from {src_zip}")
    with zipfile.ZipFile(src_zip) as archive:
        archive.extractall(target, [m for m in archive.namelist() if m.startswith("java.base/")])
    marker.write_text(stamp)


# ---------------------------------------------------------------- workloads


def class_output_directory():
    """A new directory for javac's 1,370 class files, on tmpfs (/dev/shm) where it is writable, removed when
    the harness exits. Each run starts by deleting the previous run's files; on this machine's ext4 (no
    journal) the next run's file creations then spent up to 1.6 s of CPU in `find_inode_bit` ->
    `recently_deleted` (the allocator steps over inodes deleted in the last minute or more), so
    `UnixNativeDispatcher.open0` took 1-9 % of a run's CPU, in two groups of rounds. That is the file
    system's variance, not a profiler's, and it set both profilers' precision on javac (docs/development.md,
    "javac's two kinds of rounds")."""
    shm = Path("/dev/shm")
    parent = shm if shm.is_dir() and os.access(shm, os.W_OK) else WORK / "javac"
    parent.mkdir(parents=True, exist_ok=True)
    out = Path(tempfile.mkdtemp(prefix="pcct-harness-javac-", dir=parent))
    atexit.register(shutil.rmtree, out, True)
    return out


def setup_javac(args, classes):
    ensure_packages("openjdk-17-source")
    source = WORK / "javac" / "src"
    extract_java_base(find_src_zip(), source)
    files = sorted((source / "java.base" / "java" / "util").rglob("*.java"))
    listing = WORK / "javac" / "files.txt"
    listing.write_text("".join(f"{f}\n" for f in files))
    out = class_output_directory()
    return {
        "args": ["-m", "jdk.compiler/com.sun.tools.javac.Main", "--patch-module", f"java.base={source / 'java.base'}",
                 "-implicit:none", "-proc:none", "-nowarn", "-XDsuppressNotes", "-d", str(out), f"@{listing}"],
        "cwd": WORK / "javac",
        "clean": out,
        "expected_s": 20,
    }


def setup_h2(args, classes):
    ensure_packages("libh2-java")
    jar = Path("/usr/share/java/h2.jar")  # a link to h2-<version>.jar
    if not jar.exists():
        raise SystemExit(f"libh2-java is installed but {jar} is missing")
    return {
        "args": ["-cp", str(jar), "org.h2.tools.RunScript", "-url", "jdbc:h2:mem:bench",
                 "-script", str(HERE / "h2-workload.sql")],
        "cwd": WORK,
        "expected_s": 20,
    }


def setup_demo(args, classes):
    return {"args": ["-cp", str(classes), "Demo", str(args.demo_seconds)], "cwd": WORK,
            "expected_s": args.demo_seconds + 2}


def setup_busy(args, classes):
    # BusyDeep <seconds> <depth>: one thread spinning at a 40-frame stack.
    return {"args": ["-cp", str(classes), "BusyDeep", str(args.busy_seconds), "40"], "cwd": WORK,
            "expected_s": args.busy_seconds + 2}


def setup_service(args, classes):
    # ServiceLoad <seconds> <workers> <clients>: prints "served <n> requests".
    return {"args": ["-cp", str(classes), "ServiceLoad", str(args.service_seconds), "8", "8"], "cwd": WORK,
            "expected_s": args.service_seconds + 5}


def setup_groundtruth(args, classes):
    # GroundTruth <seconds> [checkEvery]: the default checkEvery (a clock read every ~150 us).
    return {"args": ["-cp", str(classes), "GroundTruth", str(args.groundtruth_seconds)], "cwd": WORK,
            "expected_s": args.groundtruth_seconds + 2}


def syscall_truth(stdout_text):
    """SyscallTruth's own split: each method's CPU (its thread clock around every call) over the three's."""
    found = dict(re.findall(r"^(spin|read|stat)_ns=(\d+)$", stdout_text, re.MULTILINE))
    methods = {"spin": "SyscallTruth.spin", "read": "SyscallTruth.readBig", "stat": "SyscallTruth.stat"}
    total = sum(int(value) for value in found.values())
    if len(found) != len(methods) or total == 0:
        return None
    return {methods[key]: int(value) / total for key, value in found.items()}


def setup_syscall(args, classes):
    # SyscallTruth <directory> <CPU seconds>: it makes its files in a directory that must not exist yet.
    directory = WORK / "syscall"
    return {"args": ["-cp", str(classes), "SyscallTruth", str(directory / "files"), str(args.syscall_seconds)],
            "cwd": WORK, "clean": directory, "expected_s": 2 * args.syscall_seconds + 5, "truth": syscall_truth}


BENCH_SOURCES = [HERE / "JfrStacks.java", HERE / "BusyDeep.java", HERE / "ServiceLoad.java", ROOT / "demo" / "Demo.java",
                 ROOT / "tests" / "java" / "GroundTruth.java", ROOT / "tests" / "java" / "SyscallTruth.java"]

WORKLOADS = {"javac": setup_javac, "h2": setup_h2, "demo": setup_demo, "groundtruth": setup_groundtruth,
             "syscall": setup_syscall, "busy": setup_busy, "service": setup_service}


def jfr_settings(kind):
    """The settings= value: a built-in name, a default.jfc copy with jdk.ExecutionSample at 1 ms, or one
    with jdk.ObjectAllocationSample off (noalloc)."""
    if kind in ("default", "profile"):
        return kind
    if kind == "noalloc":
        custom = WORK / "jfr-noalloc.jfc"
        text = (JAVA_HOME / "lib" / "jfr" / "default.jfc").read_text()
        text, count = re.subn(r'(<event name="jdk.ObjectAllocationSample">.*?<setting name="enabled"[^>]*>)[^<]*(</setting>)',
                              r"\g<1>false\g<2>", text, count=1, flags=re.S)
        if count != 1:
            raise SystemExit("default.jfc has no jdk.ObjectAllocationSample to switch off")
        custom.write_text(text)
        return str(custom)
    if kind != "1ms":
        return kind  # a --define'd path to a .jfc
    custom = WORK / "jfr-1ms.jfc"
    text = (JAVA_HOME / "lib" / "jfr" / "default.jfc").read_text()
    text, count = re.subn(r'(<event name="jdk.ExecutionSample">.*?<setting name="period"[^>]*>)[^<]*(</setting>)',
                          r"\g<1>1 ms\g<2>", text, count=1, flags=re.S)
    if count != 1:
        raise SystemExit("default.jfc has no jdk.ExecutionSample period to change")
    custom.write_text(text)
    return str(custom)


# ---------------------------------------------------------------- one run


def jvm_flags(spec, output_base):
    """The profiler's JVM flags for a configuration, and the file it will write."""
    if "pcct" in spec:
        profile = Path(f"{output_base}.json")
        options = spec["pcct"]
        # The HTTP server answers readers; it is not part of the sampling
        # cost, so overhead runs leave it off unless a configuration asks.
        if "http" not in pcct_options(options):
            options += ",http=off"
        return [f"-agentpath:{spec.get('agent', AGENT)}={options},quiet=on,file={profile}"], profile
    if "jfr" in spec:
        recording = Path(f"{output_base}.jfr")
        # JFR's default stackdepth is 64: deeper stacks would be cut while
        # pcct walks 512 frames, and the precisions would not compare.
        return [f"-XX:FlightRecorderOptions:stackdepth={JFR_STACK_DEPTH}",
                f"-XX:StartFlightRecording=filename={recording},settings={jfr_settings(spec['jfr'])}"], recording
    if "ap" in spec:
        # ann: Java frames marked (_[j], _[i], ...), so they are told from native ones.
        collapsed = Path(f"{output_base}.ap.collapsed")
        return [f"-agentpath:{ASYNC_PROFILER}=start,event=cpu,interval={spec['ap']},ann,file={collapsed}"], collapsed
    if "ap_all" in spec:
        recording = Path(f"{output_base}.ap-all.jfr")
        return [f"-agentpath:{ASYNC_PROFILER}=start,event=cpu,interval={spec['ap_all']},alloc,lock,"
                f"file={recording}"], recording
    if "ap_alloc" in spec:
        # total: the value of a stack is the bytes its samples stand for, not their count.
        collapsed = Path(f"{output_base}.ap-alloc.collapsed")
        return [f"-agentpath:{ASYNC_PROFILER}=start,event=alloc,alloc={spec['ap_alloc']},total,ann,file={collapsed}"], \
            collapsed
    return [], None


def is_service_thread(name):
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in SERVICE_THREADS)


def poll_threads(pid, seen, tick_s=1 / os.sysconf("SC_CLK_TCK")):
    """Updates seen[tid] = (name, utime+stime seconds) from /proc/<pid>/task/*/stat; returns the whole
    process's utime+stime (dead threads included) from /proc/<pid>/stat, or None.

    The name is stat's second field, the same text as /proc/<pid>/task/<tid>/comm (one read per thread
    instead of two: the poll itself should cost the machine as little as possible). A thread keeps the
    value of the last poll it was alive for, so threads that ended before the JVM still count.
    """
    def read_stat(path):
        with open(path) as f:
            stat = f.read()
        fields = stat[stat.rindex(")") + 2:].split()  # fields[0] is field 3 (state)
        return stat[stat.index("(") + 1: stat.rindex(")")], (int(fields[11]) + int(fields[12])) * tick_s  # 14, 15

    try:
        tids = os.listdir(f"/proc/{pid}/task")
        _, process_cpu = read_stat(f"/proc/{pid}/stat")
    except OSError:
        return None
    for tid in tids:
        try:
            seen[tid] = read_stat(f"/proc/{pid}/task/{tid}/stat")
        except OSError:
            continue  # ended between the listing and the read
    return process_cpu


def run_jvm(command, cwd, stdout_path, stderr_path, timeout_s):
    """Runs a JVM to its end or to the timeout (then kills it); never blocks on its output.

    The output goes to files, not pipes. The process is watched through a
    pidfd (readable when it exits, so wall time is exact) and reaped with
    os.wait4 for its rusage, killed or not.
    """
    seen, process_cpu = {}, 0.0
    with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
        start = time.monotonic()
        process = subprocess.Popen(command, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
    pidfd = os.pidfd_open(process.pid)
    timed_out = False
    try:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        while not poller.poll(POLL_S * 1000):
            process_cpu = poll_threads(process.pid, seen) or process_cpu
            if time.monotonic() - start > timeout_s:
                timed_out = True
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
                break
        wall = time.monotonic() - start
        _, status, usage = os.wait4(process.pid, 0)
    except BaseException:
        signal.pidfd_send_signal(pidfd, signal.SIGKILL)  # interrupted: leave no JVM behind
        os.wait4(process.pid, 0)
        raise
    finally:
        os.close(pidfd)
    process.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    by_name = {name: 0.0 for name, _ in seen.values()}
    for name, cpu in seen.values():
        by_name[name] += cpu
    kinds = {kind: 0.0 for kind in THREAD_KINDS}
    for name, cpu in by_name.items():
        kind = next((kind for kind, patterns in THREAD_KINDS.items()
                     if any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)), None)
        if kind:
            kinds[kind] += cpu
    return {
        "exit_status": process.returncode,
        "kind_cpu_s": kinds,
        "timed_out": timed_out,
        "wall_s": wall,
        "user_s": usage.ru_utime,
        "sys_s": usage.ru_stime,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "max_rss_kb": usage.ru_maxrss,
        "java_threads_cpu_s": sum(cpu for name, cpu in by_name.items() if not is_service_thread(name)),
        "service_threads_cpu_s": sum(cpu for name, cpu in by_name.items() if is_service_thread(name)),
        # CPU after the last poll (at most 200 ms of every thread, the exit,
        # pcct's dump at VM death): the polled threads' CPU misses it.
        "unpolled_tail_cpu_s": max(0.0, usage.ru_utime + usage.ru_stime - process_cpu),
        "threads_seen": len(seen),
        "thread_cpu_s": dict(sorted(by_name.items(), key=lambda kv: -kv[1])[:12]),
    }


def profile_roots_cpu_s(path, names):
    """The CPU (seconds) under each of the root's children named in `names` in a pcct JSON profile."""
    profile = json.loads(Path(path).read_text())
    method_names = {method["id"]: method["name"] for method in profile["methods"]}
    cpu = dict.fromkeys(names, 0.0)
    roots = {node["id"] for node in profile["nodes"] if node.get("parent") is None}
    for node in profile["nodes"]:
        name = method_names.get(node["method"])
        if node.get("parent") in roots and name in cpu:
            cpu[name] += node["cum"]["cpu_ns"] / 1e9
    return cpu


def profile_header(path):
    """The top-level fields of a pcct JSON profile (total, stats, sampler, vm) without parsing the tree.

    They all come before `"methods":[`; a javac profile at 1 ms is tens of MB.
    """
    with open(path) as f:
        head = f.read(1 << 20)
    cut = head.find(',"methods":[')
    if cut < 0:
        with open(path) as f:
            return json.load(f)
    return json.loads(head[:cut] + "}")


def compact_sampler(sampler):
    """The sampler's counters with histograms reduced to sum and count, failures as a dict."""
    out = {}
    for key, value in sampler.items():
        if isinstance(value, dict) and "sum_ns" in value:
            out[key] = {"sum_ns": value["sum_ns"], "count": value["count"]}
        elif key == "agct_failures":
            out[key] = {reason: count for reason, count in value}
        else:
            out[key] = value
    return out


def convert_jfr(recording, interval_ns, classes):
    """A JFR recording -> a pcct JSON profile; returns its path and JfrStacks' counts."""
    stacks = recording.with_suffix(".stacks")
    converted = recording.with_suffix(".jfr.json")
    result = run([JAVA, "-cp", classes, "JfrStacks", recording, stacks], capture_output=True, text=True, timeout=600)
    counts = json.loads(result.stdout.strip().splitlines()[-1])
    run([PCCT, "import-stacks", stacks, converted, "--interval-ns", interval_ns], capture_output=True, timeout=600)
    stacks.unlink()
    return converted, counts


def tail(path, size=2000):
    with open(path, "rb") as f:
        f.seek(max(0, os.path.getsize(path) - size))
        return f.read().decode(errors="replace")


def one_run(workload, setup, config, spec, output_base, timeout_s, classes, jvm_options=()):
    """Runs one JVM (with `jvm_options` before the profiler's flags); returns its JSON record (never raises
    for a failed run)."""
    flags, profile = jvm_flags(spec, output_base)
    if setup.get("clean"):
        shutil.rmtree(setup["clean"], ignore_errors=True)
        Path(setup["clean"]).mkdir(parents=True)
    record = {"type": "run", "workload": workload, "config": config, "timeout_s": timeout_s,
              "stdout": f"{output_base}.stdout", "stderr": f"{output_base}.stderr", "profile": None}
    record.update(run_jvm([str(JAVA), *jvm_options, *flags, *setup["args"]], setup["cwd"], record["stdout"],
                          record["stderr"], timeout_s))
    error = None
    if record["timed_out"]:
        error = f"killed after the {timeout_s:.0f} s timeout"
    elif record["exit_status"] != 0:
        error = f"exit status {record['exit_status']}"
    elif profile is not None and not profile.exists():
        error = f"no profile written to {profile}"
    elif {"ap", "ap_alloc", "ap_all"} & spec.keys():
        record.update(profile=str(profile))
    elif "pcct" in spec:
        try:
            header = profile_header(profile)
            record.update(profile=str(profile), profile_total=header.get("total", {}),
                          sampler=compact_sampler(header.get("sampler", {})))
            if pcct_options(spec["pcct"]).get("threads") == "all":
                record.update(profile_kind_cpu_s=profile_roots_cpu_s(profile, THREAD_KINDS))
        except (OSError, ValueError) as failure:
            error = f"unreadable profile {profile}: {failure}"
    elif "jfr" in spec:
        try:
            converted, counts = convert_jfr(profile, config_interval_ns(spec), classes)
            record.update(profile=str(converted), recording=str(profile), jfr=counts)
        except (subprocess.SubprocessError, OSError, ValueError, IndexError) as failure:
            error = f"JFR conversion failed: {failure}"
    if error is None and profile is not None:
        error = record_shares(record, spec)
    if error is None and setup.get("truth"):
        error = record_truth(record, setup["truth"])
    record["ok"] = error is None
    if error:
        record["error"] = error
        record["stderr_tail"] = tail(record["stderr"])
    return record


def record_alloc_shares(record, spec):
    """Adds the run's allocated bytes by allocating method (deepest Java frame below the type), from
    async-profiler's alloc stacks or pcct's (`pcct report --format collapsed --resource alloc_bytes`)."""
    if "ap_alloc" in spec:
        collapsed = Path(record["profile"])
    else:
        collapsed = Path(record["profile"]).with_suffix(".alloc.collapsed")
        result = subprocess.run([str(PCCT), "report", record["profile"], "--format", "collapsed",
                                 "--resource", "alloc_bytes"], capture_output=True, text=True)
        if result.returncode != 0:
            return f"pcct report --resource alloc_bytes failed: {result.stderr.strip()[-300:]}"
        collapsed.write_text(result.stdout)
    try:
        shares, _, total = allocator_shares(collapsed.read_text())
    except OSError as failure:
        return f"unreadable allocation stacks {collapsed}: {failure}"
    record.update(alloc_shares={m: v for m, v in shares.items() if v >= 1e-5}, alloc_total=total)
    return None


def record_shares(record, spec):
    """Adds the run's CPU shares by method (deepest real Java frame) and its share without a Java frame,
    from collapsed stacks: async-profiler's own, or pcct's profile (pcct's or JFR's, converted) written by
    `pcct report --format collapsed`; and for pcct with allocation sampling and async-profiler's alloc
    event, the allocated bytes by allocating method (none for async-profiler's every event, a JFR file
    measured for its cost only). Returns an error, or None."""
    if "ap_all" in spec:
        return None
    if "ap_alloc" in spec:
        return record_alloc_shares(record, spec)
    if "pcct" in spec and pcct_options(spec["pcct"]).get("alloc") != "off":
        error = record_alloc_shares(record, spec)
        if error:
            return error
    if "ap" in spec:
        collapsed = Path(record["profile"] or "")
    else:
        collapsed = Path(record["profile"]).with_suffix(".collapsed")
        result = subprocess.run([str(PCCT), "report", record["profile"], "--format", "collapsed"],
                                capture_output=True, text=True)
        if result.returncode != 0:
            return f"pcct report --format collapsed failed: {result.stderr.strip()[-300:]}"
        collapsed.write_text(result.stdout)
    native = None if "ap" in spec else pcct_native_names(record["profile"])
    try:
        text = collapsed.read_text()
        shares, no_java, total = self_shares(text, native or frozenset())
    except OSError as failure:
        return f"unreadable collapsed stacks {collapsed}: {failure}"
    # Methods below 0.001 % change no correlation: left out, to keep the records small.
    record.update(method_shares={m: v for m, v in shares.items() if v >= 1e-5}, no_java_share=no_java,
                  collapsed=str(collapsed), collapsed_total=total)
    if "ap" in spec or native:
        # Native functions below the Java frames (pcct with native=on, async-profiler's cpu event).
        functions, with_native, _ = native_shares(text, native)
        record.update(native_shares={f: v for f, v in functions.items() if v >= 1e-5}, native_share=with_native)
    return None


def pcct_native_names(profile):
    """The names pcct's collapsed stacks give native functions (its JSON profile's methods of kind
    `native`): empty without native frames."""
    try:
        methods = json.loads(Path(profile).read_text()).get("methods", [])
    except (OSError, ValueError):
        return frozenset()
    return frozenset(m["name"] for m in methods if m.get("kind") == "native")


def record_truth(record, truth_of):
    """Adds the program's own split of its methods' CPU (`truth_shares`, parsed from its stdout by
    `truth_of`) and, for a profiled run, the profile's inclusive shares of the same methods
    (`truth_profile_shares`). Returns an error, or None."""
    try:
        truth = truth_of(Path(record["stdout"]).read_text())
    except OSError as failure:
        return f"unreadable stdout {record['stdout']}: {failure}"
    if truth is None:
        return "the program printed no measure of its own split"
    record["truth_shares"] = truth
    if record.get("collapsed"):
        record["truth_profile_shares"] = inclusive_shares(Path(record["collapsed"]).read_text(), list(truth))
    return None


def append_jsonl(path, record):
    # One line per finished run, flushed at once: a failure or an interrupt
    # later in a two-hour run loses nothing measured before it.
    with open(path, "a") as f:
        f.write(json.dumps(record, sort_keys=True) + "\n")
        f.flush()
        os.fsync(f.fileno())


def timeout_for(workload, setup, results):
    """5x the expected time (or the base runs' median wall, if longer), at least 120 s."""
    walls = [r["wall_s"] for r in results if r["workload"] == workload and r["config"] == "base" and r["ok"]]
    expected = max(setup["expected_s"], statistics.median(walls) if walls else 0)
    return max(MIN_TIMEOUT_S, 5 * expected)


# ---------------------------------------------------------------- meta


def machine_meta(args, seed, workloads, configs):
    cpu = "unknown CPU"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    version = subprocess.run([str(JAVA), "-version"], capture_output=True, text=True).stderr.strip().splitlines()
    return {
        "type": "meta",
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "command": shlex.join(["python3", *sys.argv]),
        "seed": seed,
        "rounds": args.rounds,
        "cpu": cpu,
        "nproc": os.cpu_count(),
        "kernel": platform.release(),
        "jdk": version[1] if len(version) > 1 else " ".join(version),
        "workloads": workloads,
        "configs": configs,
        "git": subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty"],
                              capture_output=True, text=True).stdout.strip(),
    }


def load_results(path):
    meta, runs = None, []
    with open(path) as f:
        for line in f:
            if line.strip():
                record = json.loads(line)
                if record["type"] == "meta":
                    meta = record
                else:
                    runs.append(record)
    if meta is None:
        raise SystemExit(f"{path} has no meta line")
    return meta, runs


# ---------------------------------------------------------------- summary

# Every signal pcct sends ends in exactly one of these (sampler/src/counters.rs).
OUTCOMES = ("samples_recorded", "samples_failed", "samples_filtered", "samples_deferred", "samples_dropped_full",
            "samples_lost", "samples_retired")
COUNTER_COLUMNS = (
    ("signals_sent", "signals"), ("samples_recorded", "recorded"), ("samples_failed", "failed"),
    ("samples_filtered", "filtered"), ("samples_deferred", "deferred"), ("samples_idle", "idle"),
    ("samples_busy", "busy"), ("samples_lost", "lost"),
    ("samples_retired", "retired"), ("samples_dropped_full", "dropped full"), ("samples_truncated", "truncated"),
    ("signal_failures", "signal failures"), ("ticks", "ticks"), ("ticks_late", "late"),
    ("ticks_missed", "missed"), ("walks_vm", "walked by pcct"), ("walks_agct", "by AsyncGetCallTrace"),
    ("walks_partial", "partial"), ("frames_walked", "frames"), ("frames_reused", "frames reused"),
)
HISTOGRAMS = (("handler_time", "handler µs"), ("drain_time", "drain µs"), ("tick_time", "tick µs"))


def median_or_none(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def ratio(a, b):
    return a / b if a is not None and b else None


def correlate(a, b):
    """`pcct correlate` of two JSON profiles: {"per_method": r|None, "per_context": r|None}."""
    if not (a and b and os.path.exists(a) and os.path.exists(b)):
        return {"per_method": None, "per_context": None}
    result = subprocess.run([str(PCCT), "correlate", a, b], capture_output=True, text=True)
    if result.returncode != 0:
        log(f"pcct correlate {a} {b} failed: {result.stderr.strip()}")
        return {"per_method": None, "per_context": None}
    return json.loads(result.stdout)


def profile_cpu_s(run):
    return run.get("profile_total", {}).get("cpu_ns", 0) / 1e9


def pcct_samples(run):
    sampler = run.get("sampler", {})
    return sampler.get("samples_recorded", 0) + sampler.get("samples_failed", 0)


def conservation_violation(run):
    """signals_sent - (recorded+failed+filtered+dropped_full+lost+retired), or None if it holds."""
    sampler = run["sampler"]
    difference = sampler.get("signals_sent", 0) - sum(sampler.get(name, 0) for name in OUTCOMES)
    return difference or None


def counters_medians(runs):
    """Median over the rounds of each counter, failure code and mean histogram time."""
    samplers = [r["sampler"] for r in runs]
    medians = {name: median_or_none([s.get(name) for s in samplers]) for name, _ in COUNTER_COLUMNS}
    codes = sorted({code for s in samplers for code in s.get("agct_failures", {})})
    medians["agct_failures"] = {code: statistics.median(s.get("agct_failures", {}).get(code, 0) for s in samplers)
                                for code in codes}
    for name, _ in HISTOGRAMS:
        medians[name] = median_or_none([s[name]["sum_ns"] / s[name]["count"] / 1e3 if s.get(name, {}).get("count")
                                        else None for s in samplers])
    medians["profile_vs_rusage"] = median_or_none(
        [ratio(profile_cpu_s(r), r["cpu_s"]) for r in runs])
    medians["agent_accounted"] = median_or_none(
        [ratio(s.get("cpu_ns_recorded", 0) + s.get("cpu_ns_filtered", 0), s.get("cpu_ns_observed")) for s in samplers])
    return medians


# Workloads that run for a fixed time report the work they did; their
# overhead is the CPU (and wall time) per unit of that work. javac and H2
# do a fixed job, so the whole run is the unit. GroundTruth runs until its
# thread has used fixed CPU budgets: no overhead can show in it (it is
# there for precision and CPU accounting).
WORK_DONE = {"demo": re.compile(r"handled (\d+) orders"), "service": re.compile(r"served (\d+) requests")}
NO_OVERHEAD = {"groundtruth", "syscall"}


def work_done(run):
    """Units of work the run did (1 for a fixed job), or None if unknown."""
    pattern = WORK_DONE.get(run["workload"])
    if pattern is None:
        return 1
    try:
        found = pattern.search(Path(run["stdout"]).read_text())
    except OSError:
        return None
    return int(found.group(1)) if found and int(found.group(1)) > 0 else None


def per_work(run, key):
    work = work_done(run)
    return None if work is None else run[key] / work


def summarise_config(runs, base_by_round, spec):
    """One workload x configuration: ratios, precision, samples, counters."""
    entry = {"runs": len(runs), "wall_s": median_or_none(r["wall_s"] for r in runs),
             "cpu_s": median_or_none(r["cpu_s"] for r in runs)}
    paired = [(r, base_by_round[r["round"]]) for r in runs if r["round"] in base_by_round]
    if runs and runs[0]["workload"] in NO_OVERHEAD:
        entry["cpu_ratios"], entry["wall_ratio"] = [], None
    else:
        entry["cpu_ratios"] = [ratio(per_work(r, "cpu_s"), per_work(b, "cpu_s")) for r, b in paired
                               if per_work(r, "cpu_s") and per_work(b, "cpu_s")]
        entry["wall_ratio"] = median_or_none(ratio(per_work(r, "wall_s"), per_work(b, "wall_s")) for r, b in paired
                                             if per_work(r, "wall_s") and per_work(b, "wall_s"))
    if not spec or "ap_alloc" in spec or "ap_all" in spec:
        return entry  # async-profiler's alloc event: in the allocation table only
    # Over real methods only: the share without a Java frame, and the
    # correlation of successive rounds' shares by deepest Java frame.
    entry["no_java_share"] = median_or_none(r.get("no_java_share") for r in runs)
    entry["precision_real"] = [shares_correlation(a["method_shares"], b["method_shares"])
                               for a, b in zip(runs, runs[1:]) if "method_shares" in a and "method_shares" in b]
    # The same over every pair of rounds: 45 pairs of 10 rounds instead of 9, a steadier figure to
    # compare two configurations by (a workload's own round-to-round changes, such as JIT decisions
    # that move a hot method's time to its caller, weigh on both).
    entry["precision_real_all"] = [shares_correlation(a["method_shares"], b["method_shares"])
                                   for a, b in itertools.combinations([r for r in runs if "method_shares" in r], 2)]
    if "ap" in spec:
        entry["precision_method"], entry["precision_context"] = entry["precision_real"], None
        entry["samples_per_cpu_s"] = median_or_none(ratio(r.get("collapsed_total"), r["java_threads_cpu_s"])
                                                    for r in runs)
        return entry
    # Precision: one correlation per pair of successive successful rounds;
    # all are kept (None when undefined), the table shows their median.
    pairs = [correlate(a.get("profile"), b.get("profile")) for a, b in zip(runs, runs[1:])]
    entry["precision_method"] = [p["per_method"] for p in pairs]
    entry["precision_context"] = None if is_hot_methods(spec) else [p["per_context"] for p in pairs]
    if "pcct" in spec:
        entry["samples_per_cpu_s"] = median_or_none(ratio(pcct_samples(r), r["java_threads_cpu_s"]) for r in runs)
        # Against the Java threads' CPU at the last poll, and (a lower
        # bound) with all the CPU after it added as if Java threads used it.
        entry["cpu_accounted"] = median_or_none(ratio(profile_cpu_s(r), r["java_threads_cpu_s"]) for r in runs)
        entry["cpu_accounted_with_tail"] = median_or_none(
            ratio(profile_cpu_s(r), r["java_threads_cpu_s"] + r.get("unpolled_tail_cpu_s", 0)) for r in runs)
        entry["counters"] = counters_medians(runs)
        # The agent's own cost, measured directly: the sampler thread's CPU
        # clock plus the handlers' CPU and the event callbacks' time (their
        # wall time since 2026-11-26: about their CPU, never less) and the
        # park hook's checks (since 2026-11-29), per CPU-second of the Java
        # threads.
        entry["agent_cpu_share"] = agent_cpu_share(runs)
        entry["violations"] = [(r["round"], conservation_violation(r), r["sampler"]) for r in runs
                               if conservation_violation(r)]
    else:
        entry["samples_per_cpu_s"] = median_or_none(ratio(r["jfr"]["samples"], r["java_threads_cpu_s"]) for r in runs)
        entry["jfr_samples"] = median_or_none(r["jfr"]["samples"] for r in runs)
        entry["jfr_truncated_share"] = median_or_none(ratio(r["jfr"]["truncated"], r["jfr"]["samples"]) for r in runs)
    return entry


def agent_cpu_share(runs):
    """The agent's CPU (sampler thread, signal handlers, event callbacks and the park hook's checks: absent
    before they were timed) per CPU-second of the Java threads, median of pcct's `runs`."""
    def cpu_ns(sampler):
        return (sampler.get("sampler_cpu_ns", 0) + sampler.get("handler_time", {}).get("sum_ns", 0)
                + sampler.get("callback_time", {}).get("sum_ns", 0) + sampler.get("park_check_ns", 0))
    return median_or_none(ratio(cpu_ns(r["sampler"]) / 1e9, r["java_threads_cpu_s"]) for r in runs if r.get("sampler"))


def peer_config(configs, spec):
    """The async-profiler configuration whose interval is nearest this configuration's, if any ran."""
    interval = config_interval_ns(spec)
    peers = [name for name, other in configs.items() if "ap" in other]
    if not peers or interval is None:
        return None
    return min(peers, key=lambda name: abs(config_interval_ns(configs[name]) - interval))


def summarise(meta, runs):
    summary = {}
    for workload in meta["workloads"]:
        ok = [r for r in runs if r["workload"] == workload and r["ok"]]
        base_by_round = {r["round"]: r for r in ok if r["config"] == "base"}
        for config, spec in meta["configs"].items():
            mine = sorted((r for r in ok if r["config"] == config), key=lambda r: r["round"])
            if mine:
                summary[(workload, config)] = entry = summarise_config(mine, base_by_round, spec)
                peer = peer_config(meta["configs"], spec) if spec else None
                if peer and peer != config:
                    # Agreement with async-profiler in the same round (same workload, nearest interval).
                    peer_by_round = {r["round"]: r for r in ok if r["config"] == peer}
                    entry["agreement_peer"] = peer
                    entry["agreement"] = [shares_correlation(r["method_shares"], peer_by_round[r["round"]]["method_shares"])
                                          for r in mine if r["round"] in peer_by_round and "method_shares" in r
                                          and "method_shares" in peer_by_round[r["round"]]]
                    entry["native_agreement"] = [
                        shares_correlation(r["native_shares"], peer_by_round[r["round"]]["native_shares"])
                        for r in mine if r["round"] in peer_by_round and r.get("native_shares")
                        and peer_by_round[r["round"]].get("native_shares")]
    return summary


# ---------------------------------------------------------------- Markdown


def fmt(value, digits=3):
    return "—" if value is None else f"{value:.{digits}f}"


def fmt_interval(ns):
    return "—" if ns is None else (f"{ns / 1e6:g} ms" if ns >= 1_000_000 else f"{ns / 1e3:g} µs")


def fmt_ratios(values):
    if not values:
        return "—"
    if len(values) == 1:
        return f"{values[0]:.3f}"
    return f"{statistics.median(values):.3f} ({min(values):.3f}–{max(values):.3f})"


def fmt_precision(values):
    """Median of the successive-run correlations, their range, and how many were undefined."""
    if values is None:
        return "—"  # hot-method counters have no contexts
    numbers = [v for v in values if v is not None]
    if not numbers:
        return "n/a" if values else "—"
    text = f"{statistics.median(numbers):.3f}"
    if len(numbers) > 1:
        text += f" ({min(numbers):.3f}–{max(numbers):.3f})"
    if len(numbers) < len(values):
        text += f", {len(values) - len(numbers)} n/a"
    return text


def fmt_accounted(entry):
    if entry.get("cpu_accounted") is None:
        return "—"
    return f"{entry['cpu_accounted']:.3f} ({fmt(entry['cpu_accounted_with_tail'])})"


def fmt_count(value):
    """A count, or a median of counts (which may end in .5)."""
    if value is None:
        return "—"
    return f"{value:,.0f}" if value == int(value) else f"{value:,.1f}"


def figure_table(meta, summary):
    """Workload x interval rows, pcct and the peers side by side (Whaley's Figures 13 and 14)."""
    lines = [
        "| workload | interval | configuration | CPU ratio per unit of work (min–max) | wall ratio | precision per method (min–max) "
        "| precision per context (min–max) | samples / CPU-s | CPU accounted (with tail) |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    configs = meta["configs"]
    for workload in meta["workloads"]:
        base = summary.get((workload, "base"))
        if base:
            lines.append(f"| {workload} | — | base: {fmt(base['cpu_s'], 2)} s CPU, {fmt(base['wall_s'], 2)} s wall "
                         f"| 1 | 1 | | | | |")
        order = sorted((c for c in configs if c != "base"),
                       key=lambda c: (config_interval_ns(configs[c]) or 1 << 62, "jfr" in configs[c], not is_hot_methods(configs[c])))
        for config in order:
            entry = summary.get((workload, config))
            if not entry or "ap_alloc" in configs[config] or "ap_all" in configs[config]:
                continue
            lines.append(
                f"| {workload} | {fmt_interval(config_interval_ns(configs[config]))} | {config} "
                f"| {fmt_ratios(entry['cpu_ratios'])} | {fmt(entry['wall_ratio'])} "
                f"| {fmt_precision(entry['precision_method'])} | {fmt_precision(entry['precision_context'])} "
                f"| {fmt(entry['samples_per_cpu_s'], 0)} | {fmt_accounted(entry)} |")
    return lines


def accuracy_table(summary):
    """What each configuration says about real methods: its share of samples without a Java frame, its
    precision over real methods, its agreement with async-profiler in the same rounds, and pcct's handler time."""
    lines = [
        "| workload | configuration | samples without a Java frame | precision over real methods (min–max) "
        "| the same over all pairs of rounds | agreement with async-profiler, same rounds (min–max) "
        "| handler µs per sample | agent CPU (sampler + handlers) |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for (workload, config), entry in summary.items():
        if "no_java_share" not in entry:
            continue
        share = entry["no_java_share"]
        agreement = fmt_precision(entry.get("agreement")) if entry.get("agreement") is not None else "—"
        if entry.get("agreement_peer"):
            agreement += f" ({entry['agreement_peer']})"
        handler = fmt(entry.get("counters", {}).get("handler_time"), 1) if entry.get("counters") else "—"
        agent = entry.get("agent_cpu_share")
        lines.append(f"| {workload} | {config} | {'—' if share is None else f'{100 * share:.2f} %'} "
                     f"| {fmt_precision(entry['precision_real'])} | {fmt_precision(entry.get('precision_real_all'))} "
                     f"| {agreement} | {handler} "
                     f"| {'—' if agent is None else f'{100 * agent:.2f} %'} |")
    return lines


def truth_table(runs):
    """Each configuration's error against the program's own split (workloads with a truth): per method,
    the profile's share less the truth's in points, mean (standard deviation) over the rounds."""
    lines = ["| workload | configuration | rounds | " + "method: truth, error in points (sd) |", "|---|---|---:|---|"]
    groups = {}
    for run in runs:
        if run["ok"] and run.get("truth_profile_shares"):
            groups.setdefault((run["workload"], run["config"]), []).append(run)
    for (workload, config), mine in sorted(groups.items()):
        cells = []
        for method in mine[0]["truth_shares"]:
            truth = [r["truth_shares"][method] for r in mine]
            errors = [100 * (r["truth_profile_shares"].get(method, 0.0) - r["truth_shares"][method]) for r in mine]
            spread = statistics.stdev(errors) if len(errors) > 1 else 0.0
            cells.append(f"`{method}` {100 * statistics.fmean(truth):.1f} %: "
                         f"{statistics.fmean(errors):+.2f} ({spread:.2f})")
        lines.append(f"| {workload} | {config} | {len(mine)} | {'; '.join(cells)} |")
    return lines


def counters_table(summary):
    header = [label for _, label in COUNTER_COLUMNS] + ["failed by code"] + [label for _, label in HISTOGRAMS]
    lines = [
        "| workload | configuration | " + " | ".join(header) + " | profile CPU / rusage | agent's own accounted |",
        "|---|---|" + "---:|" * (len(header) + 2),
    ]
    for (workload, config), entry in summary.items():
        counters = entry.get("counters")
        if not counters:
            continue
        failed = ", ".join(f"{code} {fmt_count(n)}" for code, n in counters["agct_failures"].items() if n) or "none"
        cells = [fmt_count(counters[name]) for name, _ in COUNTER_COLUMNS] + [failed]
        cells += [fmt(counters[name], 1) for name, _ in HISTOGRAMS]
        cells += [fmt(counters["profile_vs_rusage"]), fmt(counters["agent_accounted"])]
        lines.append(f"| {workload} | {config} | " + " | ".join(cells) + " |")
    return lines


def peers_table(summary):
    lines = ["| workload | configuration | samples | stacks truncated |", "|---|---|---:|---:|"]
    for (workload, config), entry in summary.items():
        if "jfr_samples" in entry:
            share = entry["jfr_truncated_share"]
            lines.append(f"| {workload} | {config} | {fmt_count(entry['jfr_samples'])} "
                         f"| {'—' if share is None else f'{100 * share:.2f} %'} |")
    return lines


def warnings(runs, summary):
    lines = []
    for run in runs:
        if not run["ok"]:
            last = run.get("stderr_tail", "").strip().splitlines()[-1:] or [""]
            lines.append(f"- FAILED: {run['workload']}/{run['config']} round {run['round'] + 1}: {run['error']}; "
                         f"stderr: `{last[0][:200]}` (full: {run['stderr']})")
    for (workload, config), entry in summary.items():
        for round_index, difference, sampler in entry.get("violations", []):
            outcomes = " + ".join(f"{sampler.get(n, 0)} {n.removeprefix('samples_')}" for n in OUTCOMES)
            lines.append(f"- WARNING: {workload}/{config} round {round_index + 1}: signals_sent "
                         f"{sampler.get('signals_sent', 0)} != {outcomes} (off by {difference})")
    return lines


def paired_ratios(runs, workload, config, reference):
    """CPU per unit of work of `config` over `reference` in the same round, one ratio per round."""
    ok = [r for r in runs if r["ok"] and r["workload"] == workload]
    reference_by_round = {r["round"]: r for r in ok if r["config"] == reference}
    return [ratio(per_work(r, "cpu_s"), per_work(reference_by_round[r["round"]], "cpu_s")) for r in ok
            if r["config"] == config and r["round"] in reference_by_round
            and per_work(r, "cpu_s") and per_work(reference_by_round[r["round"]], "cpu_s")]


def allocation_table(meta, runs):
    """The cost of allocation sampling (each profiler over itself without it, same rounds) and pcct's
    agreement with async-profiler's alloc event per allocating method."""
    lines = [
        "| workload | configuration | over | CPU ratio (min–max) | agent CPU (sampler + handlers + callbacks): "
        "this / over | allocations recorded / s | thinned / s "
        "| agreement per allocating method with ap-alloc, same rounds (min–max) |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for workload in meta["workloads"]:
        ok = [r for r in runs if r["ok"] and r["workload"] == workload]
        peer_by_round = {r["round"]: r for r in ok if r["config"] == "ap-alloc"}
        for config, reference in ALLOC_PAIRS:
            if config not in meta["configs"] or reference not in meta["configs"]:
                continue
            mine = [r for r in ok if r["config"] == config]
            rate = median_or_none(ratio(r.get("sampler", {}).get("allocations_recorded"), r["wall_s"]) for r in mine)
            thinned = median_or_none(ratio(r.get("sampler", {}).get("allocations_thinned"), r["wall_s"]) for r in mine)
            agent = "—"
            if "pcct" in meta["configs"][config] and "pcct" in meta["configs"][reference]:
                shares = [agent_cpu_share([r for r in ok if r["config"] == name]) for name in (config, reference)]
                agent = " / ".join("—" if share is None else f"{100 * share:.2f} %" for share in shares)
            agreement = None
            if "pcct" in meta["configs"][config] and peer_by_round:
                agreement = [shares_correlation(r["alloc_shares"], peer_by_round[r["round"]]["alloc_shares"])
                             for r in mine if r["round"] in peer_by_round and "alloc_shares" in r
                             and "alloc_shares" in peer_by_round[r["round"]]]
            lines.append(f"| {workload} | {config} | {reference} | {fmt_ratios(paired_ratios(runs, workload, config, reference))} "
                         f"| {agent} | {fmt(rate, 0)} | {fmt(thinned, 0)} "
                         f"| {fmt_precision(agreement) if agreement is not None else '—'} |")
    return lines


def whole_process_table(runs):
    """Per workload and configuration with threads=all: profile CPU / process CPU, and per thread kind its
    share of the process's CPU by the profile and by /proc, medians of the rounds."""
    kinds = list(THREAD_KINDS)
    lines = ["| workload | configuration | profile CPU / process CPU | "
             + " | ".join(f"{kind} profile / kernel" for kind in kinds) + " |",
             "|---|---|---|" + "---|" * len(kinds)]
    groups = {}
    for run in runs:
        if run.get("ok") and run.get("profile_kind_cpu_s"):
            groups.setdefault((run["workload"], run["config"]), []).append(run)
    for (workload, config), mine in sorted(groups.items()):
        cells = [fmt(median_or_none(ratio(profile_cpu_s(r), r["cpu_s"]) for r in mine))]
        for kind in kinds:
            profile = median_or_none(ratio(r["profile_kind_cpu_s"].get(kind, 0.0), r["cpu_s"]) for r in mine)
            kernel = median_or_none(ratio(r.get("kind_cpu_s", {}).get(kind, 0.0), r["cpu_s"]) for r in mine)
            cells.append(f"{fmt(100 * profile, 1) if profile is not None else '—'} % / "
                         f"{fmt(100 * kernel, 1) if kernel is not None else '—'} %")
        lines.append(f"| {workload} | {config} | " + " | ".join(cells) + " |")
    return lines


def native_table(runs, summary):
    """Per workload and configuration with native frames: the median share of the Java threads' samples with
    a native frame, and the agreement per native function with async-profiler in the same rounds."""
    lines = ["| workload | configuration | samples with native frames (median) | agreement per native function "
             "with async-profiler, same rounds (min–max) |", "|---|---|---|---|"]
    for (workload, config), entry in sorted(summary.items()):
        shares = [r["native_share"] for r in runs
                  if r["workload"] == workload and r["config"] == config and r.get("ok") and "native_share" in r]
        if not shares or not any(shares):
            continue
        agreement = entry.get("native_agreement")
        lines.append(f"| {workload} | {config} | {100 * statistics.median(shares):.1f} % "
                     f"| {fmt_precision(agreement) if agreement else '—'} |")
    return lines


def markdown(meta, runs, summary):
    done = len({r["round"] for r in runs})
    lines = [
        f"Measured {meta['date']} on {meta['cpu']} ({meta['nproc']} CPUs), Linux {meta['kernel']}, {meta['jdk']}, "
        f"pcct {meta.get('git', '?')}; {done} of {meta['rounds']} rounds, configurations in shuffled order "
        f"each round (seed {meta['seed']}). Command: `{meta['command']}`",
        "",
        *figure_table(meta, summary),
        "",
        "CPU ratio: user+sys of the JVM (wait4) over the unprofiled run of the same round, median of the rounds "
        "(min–max). Precision: correlation between successive rounds' profiles (`pcct correlate`, sample "
        "counts), median of all pairs (min–max; n/a: undefined). Samples / CPU-s and CPU accounted are per "
        "CPU-second of the Java threads (utime+stime from /proc/<pid>/task/*/stat, JVM service threads "
        "excluded, polled every 200 ms); CPU accounted = the profile's total CPU / that, and in parentheses / that "
        "plus all the JVM's CPU after the last poll (the tail: the last <=200 ms of every thread, the exit, the "
        "dump): the truth is between the two. pcct runs with "
        "`http=off,quiet=on` (unless a configuration names http): the HTTP server is not part of the sampling "
        "cost. JFR runs with "
        f"`-XX:FlightRecorderOptions:stackdepth={JFR_STACK_DEPTH}`.",
        "",
    ]
    accuracy = accuracy_table(summary)
    if len(accuracy) > 2:
        lines += ["Real methods: each sample by its deepest Java frame, pseudo-frames (failed walks) left out and "
                  "counted in the first column; precision is the correlation of successive rounds' shares; "
                  "agreement is the correlation with async-profiler's run of the same workload and round "
                  "(benches/jvm/shares.py); handler time is the handler's CPU per sample:", "", *accuracy, ""]
    truths = truth_table(runs)
    if len(truths) > 2:
        lines += ["Against the program's own measure of its split (each method's CPU by its thread's clock, around "
                  "every call): each profile's inclusive shares of the same methods (pcct by CPU, async-profiler "
                  "and JFR by samples), their error in points:", "", *truths, ""]
    counters = counters_table(summary)
    if len(counters) > 2:
        lines += ["pcct's counters, medians of the rounds (handler, drain and tick: mean times):", "", *counters, ""]
    allocations = allocation_table(meta, runs)
    if len(allocations) > 2:
        lines += ["Allocation sampling (pcct: every 512 KiB on average, contended monitors recorded too; JFR: "
                  "jdk.ObjectAllocationSample, throttled to 150 events/s by default.jfc; async-profiler: alloc "
                  "every 512 KiB): CPU per unit of work over the same profiler without it in the same round; "
                  "agreement: correlation of the allocated bytes by allocating method (deepest Java frame below the "
                  "allocated type, benches/jvm/shares.py) with async-profiler's run of the same round:", "",
                  *allocations, ""]
    whole = whole_process_table(runs)
    if len(whole) > 2:
        lines += ["The whole process (pcct with threads=all): the profile's CPU over the process's (wait4), and the "
                  "share of the process's CPU under each JVM thread kind, by the profile and by the kernel "
                  "(/proc/<pid>/task/*/stat, polled every 200 ms), medians of the rounds:", "", *whole, ""]
    natives = native_table(runs, summary)
    if len(natives) > 2:
        lines += ["Native frames (pcct with native=on, async-profiler's cpu event): the share of the Java threads' "
                  "samples with a native frame below their deepest Java frame, and the agreement per native "
                  "function (each such sample by its deepest native frame that is not the kernel's) with "
                  "async-profiler's run of the same workload and round (benches/jvm/shares.py, native_shares):",
                  "", *natives, ""]
    peers = peers_table(summary)
    if len(peers) > 2:
        lines += ["JFR samples and truncated stacks, medians of the rounds:", "", *peers, ""]
    problems = warnings(runs, summary)
    if problems:
        lines += problems + [""]
    return "\n".join(lines)


def record_in_benchmarks(text):
    """Replaces the marked block of BENCHMARKS.md; without the markers, changes nothing and says so."""
    content = BENCHMARKS.read_text() if BENCHMARKS.exists() else ""
    if MARK_BEGIN not in content or MARK_END not in content:
        log(f"--record: {BENCHMARKS} has no {MARK_BEGIN} ... {MARK_END} block, so it was not changed; add the two "
            f"markers where the tables belong and re-run with --summarise-only <results.jsonl> --record")
        return
    block = f"{MARK_BEGIN}\n{text}{MARK_END}"
    BENCHMARKS.write_text(re.sub(re.escape(MARK_BEGIN) + r".*?" + re.escape(MARK_END), lambda _: block, content,
                                 count=1, flags=re.S))
    log(f"--record: tables written into {BENCHMARKS}")


def compare_precision(configs, paths):
    """Prints, per workload, two configurations' all-pairs precision over real methods (rounds pooled
    over `paths`), their difference and its bootstrap interval."""
    first, _, second = configs.partition(",")
    runs = [run for path in paths for run in load_results(path)[1]
            if run.get("ok") and "method_shares" in run and run["config"] in (first, second)]
    print(f"| workload | rounds {first} / {second} | {first} - {second}, all pairs | 95 % bootstrap interval |")
    print("|---|---:|---:|---:|")
    for workload in sorted({run["workload"] for run in runs}):
        shares = [[run["method_shares"] for run in runs if run["workload"] == workload and run["config"] == config]
                  for config in (first, second)]
        result = precision_difference(*shares) if all(len(s) > 1 for s in shares) else None
        if result is None:
            print(f"| {workload} | {len(shares[0])} / {len(shares[1])} | n/a | n/a |")
            continue
        difference, low, high = result
        print(f"| {workload} | {len(shares[0])} / {len(shares[1])} | {difference:+.4f} | [{low:+.4f}, {high:+.4f}] |")


def paired_cost_difference(pairs, resamples=2000, seed=1):
    """(median of a - b, its 95 % bootstrap interval) over rounds' (a, b) pairs: a round's two ratios share
    its base run and its moment of the machine, so the difference is taken within each round first."""
    differences = [a - b for a, b in pairs]
    rng = random.Random(seed)
    draws = sorted(statistics.median(rng.choices(differences, k=len(differences))) for _ in range(resamples))
    return statistics.median(differences), draws[int(0.025 * resamples)], draws[int(0.975 * resamples) - 1]


def compare_cost(configs, paths):
    """Prints, per workload, two configurations' whole-JVM CPU per unit of work over the unprofiled run's
    of the same round (rounds pooled over `paths`), the rounds' median difference and its bootstrap
    interval."""
    first, _, second = configs.partition(",")
    runs = [dict(run, path_index=index) for index, path in enumerate(paths) for run in load_results(path)[1]
            if run.get("ok")]
    print(f"| workload | rounds | CPU ratio {first} (min-max) | {second} (min-max) | {first} - {second}, "
          "median of rounds | 95 % bootstrap interval |")
    print("|---|---:|---:|---:|---:|---:|")
    for workload in sorted({run["workload"] for run in runs}):
        by_round = {}
        for run in runs:
            if run["workload"] == workload:
                by_round.setdefault((run["path_index"], run["round"]), {})[run["config"]] = run
        pairs = []
        for found in by_round.values():
            if all(name in found for name in ("base", first, second)):
                base, a, b = (per_work(found[name], "cpu_s") for name in ("base", first, second))
                if base and a and b:
                    pairs.append((a / base, b / base))
        if len(pairs) < 2:
            print(f"| {workload} | {len(pairs)} | n/a | n/a | n/a | n/a |")
            continue
        difference, low, high = paired_cost_difference(pairs)
        spread = [f"{statistics.median(v):.3f} ({min(v):.3f}-{max(v):.3f})" for v in zip(*pairs)]
        print(f"| {workload} | {len(pairs)} | {spread[0]} | {spread[1]} | {difference:+.3f} | "
              f"[{low:+.3f}, {high:+.3f}] |")


def method_spread_table(configs, paths, top=8):
    """Prints, per workload, each of two configurations' spread across rounds (rounds pooled over
    `paths`): the variance summed over methods, and the `top` methods by the larger standard deviation."""
    pair = configs.split(",")
    runs = [run for path in paths for run in load_results(path)[1]
            if run.get("ok") and run.get("method_shares") and run["config"] in pair]
    for workload in sorted({run["workload"] for run in runs}):
        spreads = [method_spread([run["method_shares"] for run in runs
                                  if run["workload"] == workload and run["config"] == config]) for config in pair]
        if None in spreads:
            print(f"{workload}: fewer than two rounds of {' or '.join(pair)}\n")
            continue
        counts = [sum(1 for run in runs if run["workload"] == workload and run["config"] == c) for c in pair]
        print(f"{workload}: variance summed over methods, " + ", ".join(
            f"{config} {summed:.6f} ({count} rounds)" for config, (_, summed), count in zip(pair, spreads, counts)))
        print("\n| method | " + " | ".join(f"{config}: mean (sd), largest" for config in pair) + " |")
        print("|---|" + "---:|" * len(pair))
        methods = set().union(*(per_method for per_method, _ in spreads))
        ranked = sorted(methods, key=lambda m: -max(s[0].get(m, (0, 0, 0))[1] for s in spreads))[:top]
        for method in ranked:
            cells = [s[0].get(method, (0.0, 0.0, 0.0)) for s in spreads]
            print(f"| `{method}` | " + " | ".join(
                f"{mean * 100:.2f} % ({spread * 100:.2f}), {largest * 100:.2f} %" for mean, spread, largest in cells)
                + " |")
        print()


def report(jsonl, record):
    meta, runs = load_results(jsonl)
    summary = summarise(meta, runs)
    text = markdown(meta, runs, summary)
    print(text)
    if record:
        record_in_benchmarks(text)
    return meta, runs, summary


def smoke_check(runs, summary):
    """The smoke run passes if every run succeeded and pcct and JFR both gave samples and a correlation."""
    problems = [f"{r['workload']}/{r['config']} failed: {r['error']}" for r in runs if not r["ok"]]
    for config in ("pcct-10ms", "jfr-default"):
        entry = summary.get(("demo", config))
        if not entry or not entry.get("samples_per_cpu_s") \
                or all(v is None for v in entry["precision_method"]):
            problems.append(f"demo/{config}: no samples or no correlation")
    for problem in problems:
        log(f"smoke: {problem}")
    log("smoke run passed" if not problems else "smoke run FAILED")
    return not problems


# ---------------------------------------------------------------- main


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", default=",".join(WORKLOADS), help="comma-separated, from: %(default)s")
    parser.add_argument("--configs", default=",".join(CONFIGS), help="comma-separated, from: %(default)s")
    parser.add_argument("--define", action="append", default=[], metavar="NAME=pcct:OPTS|NAME=jfr:SETTINGS",
                        help="add a configuration (pcct options separated by ';')")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--demo-seconds", type=int, default=15)
    parser.add_argument("--groundtruth-seconds", type=int, default=15)
    parser.add_argument("--busy-seconds", type=int, default=10)
    parser.add_argument("--service-seconds", type=int, default=15)
    parser.add_argument("--syscall-seconds", type=float, default=6, help="SyscallTruth's CPU budget")
    parser.add_argument("--seed", type=int, default=None, help="shuffle seed (default: random, recorded)")
    parser.add_argument("--smoke", action="store_true",
                        help="demo for 3 s with base, pcct-10ms and jfr-default, 2 rounds (two are needed for one "
                             "correlation); checks every run succeeded and pcct and JFR gave samples and a "
                             "precision; under a minute after the release build")
    parser.add_argument("--record", action="store_true", help="replace the harness block in BENCHMARKS.md")
    parser.add_argument("--summarise-only", metavar="JSONL", help="summarise a results.jsonl without running")
    parser.add_argument("--no-build", action="store_true", help="do not run cargo build --release first")
    parser.add_argument("--jvm-options", default="", metavar="'OPTIONS'",
                        help="JVM options for every run, the unprofiled one too (e.g. '-Xms2g -Xmx2g "
                             "-XX:+AlwaysPreTouch': a heap touched at start takes no page faults)")
    parser.add_argument("--compare-cost", nargs="+", metavar="A,B JSONL",
                        help="two configurations' whole-JVM CPU per unit of work over the same round's base run, "
                             "the rounds' median difference and its bootstrap interval (no run)")
    parser.add_argument("--compare-precision", nargs="+", metavar="A,B JSONL",
                        help="two configurations' precision over real methods, pooled over stored results, and "
                             "how surely they differ (no run)")
    parser.add_argument("--method-spread", nargs="+", metavar="A,B JSONL",
                        help="where two configurations' rounds vary: per method and summed, pooled over stored "
                             "results (no run)")
    args = parser.parse_args()
    if args.smoke:
        for key, value in SMOKE.items():
            setattr(args, key, value)
    return args


def main():
    args = parse_args()
    if args.summarise_only:
        report(args.summarise_only, args.record)
        return
    if args.compare_precision:
        if len(args.compare_precision) < 2 or "," not in args.compare_precision[0]:
            raise SystemExit("--compare-precision A,B JSONL [JSONL ...]: two configurations, then results files")
        compare_precision(args.compare_precision[0], args.compare_precision[1:])
        return
    if args.compare_cost:
        if len(args.compare_cost) < 2 or "," not in args.compare_cost[0]:
            raise SystemExit("--compare-cost A,B JSONL [JSONL ...]: two configurations, then results files")
        compare_cost(args.compare_cost[0], args.compare_cost[1:])
        return
    if args.method_spread:
        if len(args.method_spread) < 2 or "," not in args.method_spread[0]:
            raise SystemExit("--method-spread A,B JSONL [JSONL ...]: two configurations, then results files")
        method_spread_table(args.method_spread[0], args.method_spread[1:])
        return
    workloads = args.workloads.split(",")
    for workload in workloads:
        if workload not in WORKLOADS:
            raise SystemExit(f"unknown workload {workload}; known: {', '.join(WORKLOADS)}")
    configs = resolve_configs(args.configs.split(","), args.define)
    if not args.no_build:
        run(["cargo", "build", "--release", "-q", "-p", "pcct-agent", "-p", "pcct-cli"], cwd=ROOT)
    for binary in (AGENT, PCCT):
        if not binary.exists():
            raise SystemExit(f"{binary} is missing: cargo build --release -p pcct-agent -p pcct-cli")

    ensure_jdk()
    WORK.mkdir(parents=True, exist_ok=True)
    classes = Path(tempfile.mkdtemp(prefix="pcct-bench-classes-"))
    atexit.register(shutil.rmtree, classes, True)
    compile_java(BENCH_SOURCES, classes)
    setups = {workload: WORKLOADS[workload](args, classes) for workload in workloads}

    out_dir = RESULTS / time.strftime("%Y%m%d-%H%M%S")
    out_dir.mkdir(parents=True, exist_ok=True)
    jsonl = out_dir / "results.jsonl"
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 32)
    append_jsonl(jsonl, machine_meta(args, seed, workloads, configs))
    log(f"results: {jsonl}")
    rng = random.Random(seed)
    results = []
    try:
        for round_index in range(args.rounds):
            order = [(w, c) for w in workloads for c in configs]
            rng.shuffle(order)
            for workload, config in order:
                timeout_s = timeout_for(workload, setups[workload], results)
                record = one_run(workload, setups[workload], config, configs[config],
                                 out_dir / f"{workload}-{config}-r{round_index}", timeout_s, classes,
                                 shlex.split(args.jvm_options))
                record["round"] = round_index
                append_jsonl(jsonl, record)
                results.append(record)
                status = "ok" if record["ok"] else f"FAILED: {record['error']}"
                log(f"round {round_index + 1}/{args.rounds} {workload:11} {config:17} wall {record['wall_s']:6.2f} s "
                    f"cpu {record['cpu_s']:6.2f} s  {status}")
    except KeyboardInterrupt:
        log(f"interrupted; the finished runs are in {jsonl} (summarise them with --summarise-only {jsonl})")
        raise
    _, runs, summary = report(jsonl, args.record)
    if args.smoke and not smoke_check(runs, summary):
        sys.exit(1)


if __name__ == "__main__":
    main()
