#!/usr/bin/env python3
"""Alternated runs of agent builds or options on one real workload: the A/B of a
change to the signal handler, the walker or the sampler thread (BENCHMARKS.md,
"The frame cache in one huge page").

Each variant is an agent library, optionally with extra agent options after a
`|`; every round runs each variant once, in the order given, so slow drifts of
a noisy machine fall on all of them. Per run it prints what the agent measured
of itself (its profile's `sampler` section): the handler's CPU per call and per
walked sample (over the calls it timed), the share of handler calls not timed
because the thread was switched out during them ("switched %": a timer's
handler timed by the processor's counter, sampler/src/tsc.rs), the CPU the
samples accounted for against the CPU the threads used while observed, the
sampler thread's CPU, the drain's mean time per tick, the event callbacks' CPU,
walks, and frames walked and reused; then the medians per variant. The workload
is set up as benches/jvm/harness.py sets it up (javac compiling java/util, or H2
running its script), at `interval=1ms` unless the options say otherwise.

  python3 benches/jvm/handler_ab.py --workload javac --rounds 4 \\
      /tmp/before.so target/release/libpcct_agent.so 'target/release/libpcct_agent.so|walker=agct'

An agent from before a counter existed gets 0 for it (its walks: every
sample recorded or failed), so a build of any age can be the "before".

Run nothing else meanwhile: these are CPU times of one process's threads, and
a busy machine moves them by ±10 %.

With --cycles, each variant must be an agent built with the `cycles` feature
(`cargo build --release -p pcct-agent --features pcct-sampler/cycles`), and
each run also prints where the handler's cycles went (sampler/src/cycles.rs):
per handler call, its two CPU-clock reads and gettid; per walk, the walk and
its search for the previous walk's frames (with the share of walks that took
them, the verifications tried a walk and the share of those refused); how the
top frame was found (frame cache or segment map: % of walks) and, for a top
frame decoded, its cycles (finding the blob, PcDesc and scopes, jmethodIDs);
compiled frames from the frame cache and interpreted frames below the top, per
walk, and each one's cycles.
"""

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402  (the workloads' setup and the JVM)


CYCLES_PREFIX = "pcct cycles "


def cycle_figures(stderr):
    """Where a `cycles` build's handler time went, from its `pcct cycles` line."""
    found = [text for text in stderr.splitlines() if text.startswith(CYCLES_PREFIX)]
    if not found:
        raise SystemExit("no 'pcct cycles' line: build the agent with --features pcct-sampler/cycles")
    sums = json.loads(found[-1][len(CYCLES_PREFIX):])
    top, below = sums["top"], sums["below"]
    handlers, walks = max(sums["handlers"], 1), max(sums["walks"], 1)
    # A top frame decoded: found in the segment map, not in the frame cache.
    decoded = max(top["blob"][0], 1)
    return {
        "cyc handler": sums["handler_cycles"] / handlers,
        "cyc clock1": sums["first_clock_cycles"] / handlers,
        "cyc gettid": sums["gettid_cycles"] / handlers,
        "cyc clock2": sums["closing_clock_cycles"] / handlers,
        "cyc walk": sums["walk_cycles"] / walks,
        "cyc reuse": sums["reuse_cycles"] / walks,
        "reused %": 100 * sums["reused_walks"] / walks,
        "reuse tries": sums["reuse_tries"] / walks,
        "refused %": 100 * sums["reuse_refused"] / max(sums["reuse_tries"], 1),
        "top frame %": 100 * top["cached_frame"][0] / walks,
        "top segmap %": 100 * top["blob"][0] / walks,
        "cyc top decode": top["blob"][1] / decoded,
        "cyc find": sums["top_find_cycles"] / decoded,
        "cyc scopes": sums["top_scopes_cycles"] / decoded,
        "cyc ids": sums["top_method_id_cycles"] / decoded,
        "cached below": below["cached_frame"][0] / walks,
        "cyc cached": below["cached_frame"][1] / max(below["cached_frame"][0], 1),
        "interp below": below["interpreted"][0] / walks,
        "cyc interp": below["interpreted"][1] / max(below["interpreted"][0], 1),
    }


def measure(variant, setup, out_dir, cycles=False):
    """One run of `variant` ("lib.so" or "lib.so|options"); its sampler figures."""
    library, _, extra = variant.partition("|")
    profile = Path(out_dir) / "profile.json"
    options = f"interval=1ms,http=off,quiet=on,file={profile}" + (f",{extra}" if extra else "")
    if setup.get("clean"):
        subprocess.run(["rm", "-rf", str(setup["clean"])], check=True)
        Path(setup["clean"]).mkdir(parents=True)
    command = [str(harness.JAVA), f"-agentpath:{Path(library).resolve()}={options}", *setup["args"]]
    children_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(command, cwd=setup["cwd"], capture_output=True, text=True)
    children_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    # The JVM's whole CPU (every thread, start to exit), as the kernel counts it.
    process_s = (children_after.ru_utime + children_after.ru_stime) - (
        children_before.ru_utime + children_before.ru_stime)
    if done.returncode != 0:
        raise SystemExit(f"{variant}: exit status {done.returncode}: {done.stderr[-2000:]}")
    written = json.loads(profile.read_text())
    sampler = written["sampler"]
    handler, drain = sampler["handler_time"], sampler.get("drain_time", {"sum_ns": 0, "count": 0})
    walks = [sampler.get(name) for name in ("walks_vm", "walks_agct", "walks_partial")]
    # Agents from before pcct's walker count no walks: every sample recorded or failed was walked.
    walked = sum(walks) if None not in walks else sampler["samples_recorded"] + sampler["samples_failed"]
    # Calls timed by the processor's counter during which the thread was
    # switched out are counted, not timed (sampler/src/tsc.rs): the means are
    # over the timed calls.
    switched = sampler.get("handler_switched", 0)
    timed_share = handler["count"] / max(handler["count"] + switched, 1)
    observed = sampler.get("cpu_ns_observed", 0)
    return {
        "handler µs/call": handler["sum_ns"] / max(handler["count"], 1) / 1e3,
        "handler µs/walked": handler["sum_ns"] / max(walked * timed_share, 1) / 1e3,
        "switched %": 100 * (1 - timed_share),
        "cpu accounted %": 100 * (sampler.get("cpu_ns_recorded", 0) + sampler.get("cpu_ns_filtered", 0))
        / max(observed, 1),
        "sampler s": sampler.get("sampler_cpu_ns", 0) / 1e9,
        # The profile's CPU over the process's (threads=all: the whole process).
        "profile/process %": 100 * written["total"]["cpu_ns"] / 1e9 / max(process_s, 1e-9),
        # The agent's own CPU (sampler thread and handlers) over the CPU the
        # sampled threads used (the acceptance figure of the batched sampler).
        "agent %": 100 * (sampler.get("sampler_cpu_ns", 0) + handler["sum_ns"]) / max(observed, 1),
        "drain µs/tick": drain["sum_ns"] / max(drain["count"], 1) / 1e3,
        "callbacks s": sampler.get("callback_time", {}).get("sum_ns", 0) / 1e9,
        "walked": walked,
        "frames": sampler.get("frames_walked", 0),
        "reused": sampler.get("frames_reused", 0),
        **(cycle_figures(done.stderr) if cycles else {}),
    }


def line(label, figures):
    return f"{label:40} " + "  ".join(
        f"{key} {value:8.2f}" if isinstance(value, float) else f"{key} {value:8d}" for key, value in figures.items())


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workload", choices=["javac", "h2", "busy"], default="javac")
    parser.add_argument("--busy-seconds", type=int, default=10, help="busy: its wall-clock seconds")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cycles", action="store_true", help="also where the handler's cycles went (see above)")
    parser.add_argument("variants", nargs="+", help="agent.so or 'agent.so|extra,options'")
    args = parser.parse_args()
    harness.ensure_jdk()
    classes = Path(tempfile.mkdtemp(prefix="pcct-ab-classes-"))
    harness.compile_java([harness.HERE / "BusyDeep.java"], classes)
    setup = harness.WORKLOADS[args.workload](args, classes)
    results = {variant: [] for variant in args.variants}
    with tempfile.TemporaryDirectory(prefix="pcct-ab-") as out_dir:
        for round_index in range(args.rounds):
            for variant in args.variants:
                figures = measure(variant, setup, out_dir, args.cycles)
                results[variant].append(figures)
                print(line(f"{round_index + 1} {variant}", figures), flush=True)
    print(f"\nmedians of {args.rounds} rounds ({args.workload}):")
    for variant, runs in results.items():
        medians = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
        print(line(variant, {k: float(v) if isinstance(v, float) else int(v) for k, v in medians.items()}))


if __name__ == "__main__":
    main()
