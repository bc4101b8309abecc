#!/usr/bin/env python3
"""The HTTP API's cost (issue 4's benchmark), measured on a real profiled JVM.

1. Latency and throughput: a JVM runs tests/java/BranchyContexts.java
   (millions of distinct calling contexts) under the agent at 1 ms until
   the profile holds at least --nodes nodes (default 100k); then
   `wrk -t1 -c<connections> -d<seconds>s --latency` asks
   /api/hot-methods?limit=20 over loopback, while sampling goes on.
   Reported: p50/p90/p99 latency, requests/s, and the agent's deferred
   drains during the run (a drain waits for the profile lock at most half
   an interval; a deferred one means a reader held it).
2. Slowdown of the profiled program while a client polls: the demo
   (demo/Demo.java, fixed duration, it counts the orders it handled) runs
   under the agent at 1 ms, with and without a poller that GETs
   /api/hot-methods?limit=20 every 100 ms, interleaved in shuffled order
   over --rounds rounds. Reported: the median ratio of orders handled per
   CPU-second of the JVM (rusage) with/without the poller, the same for
   orders per wall second, the per-round ratios, and, precisely, the CPU
   the agent's HTTP threads used (schedstat) as a share of the JVM's.

Usage (needs the release agent and wrk, Debian package `wrk`):
  cargo build --release -p pcct-agent
  python3 benches/http/bench.py [--rounds 8] [--nodes 100000] [--seconds 20]

Prints a Markdown section to paste into BENCHMARKS.md.
"""

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
AGENT = ROOT / "target" / "release" / "libpcct_agent.so"


def java_tool(name):
    home = os.environ.get("JAVA_HOME")
    if home:
        return str(Path(home) / "bin" / name)
    return shutil.which(name) or name


def compile_java(sources, out):
    subprocess.run([java_tool("javac"), "-d", str(out)] + [str(s) for s in sources], check=True)


def get_json(address, path, timeout=10):
    with urllib.request.urlopen(f"http://{address}{path}", timeout=timeout) as answer:
        return json.load(answer)


def wait_for(predicate, deadline, what):
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    sys.exit(f"timed out waiting for {what}")


def start_jvm(classes, main, args, options, workdir, name):
    """Starts java with the agent; stdout/stderr go to files (never a pipe
    read only after exit)."""
    out = open(workdir / f"{name}.out", "w")
    err = open(workdir / f"{name}.err", "w")
    command = [java_tool("java"), f"-agentpath:{AGENT}={options}", "-cp", str(classes), main] + args
    return subprocess.Popen(command, stdout=out, stderr=err), out, err


def read_address(path, process, deadline):
    def ready():
        if process.poll() is not None:
            sys.exit(f"the JVM exited early ({process.returncode}); see {path.parent}")
        try:
            return path.read_text().strip() or None
        except FileNotFoundError:
            return None

    return wait_for(ready, deadline, f"the agent's address in {path}")


def latency(classes, workdir, nodes, seconds, connections):
    addr_file = workdir / "addr-latency"
    options = f"interval=1ms,port=0,addr_file={addr_file},quiet=on"
    process, out, err = start_jvm(classes, "BranchyContexts", ["600", "2", "14"], options, workdir, "latency")
    try:
        address = read_address(addr_file, process, time.time() + 60)
        grown = wait_for(
            lambda: (s := get_json(address, "/api/status"))["profile"]["nodes"] >= nodes and s,
            time.time() + 300,
            f"{nodes} nodes in the profile",
        )
        before = grown["counters"]
        wrk = subprocess.run(
            ["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "--latency",
             f"http://{address}/api/hot-methods?limit=20"],
            check=True, capture_output=True, text=True,
        ).stdout
        after = get_json(address, "/api/status")
    finally:
        process.terminate()
        process.wait(timeout=60)
        out.close()
        err.close()
    percentiles = dict(re.findall(r"^\s+(50|75|90|99)%\s+(\S+)", wrk, re.M))
    rate = re.search(r"Requests/sec:\s+(\S+)", wrk).group(1)
    return {
        "nodes": after["profile"]["nodes"],
        "p50": percentiles.get("50"),
        "p90": percentiles.get("90"),
        "p99": percentiles.get("99"),
        "requests_per_s": float(rate),
        "connections": connections,
        "seconds": seconds,
        "drains_deferred": after["counters"]["drains_deferred"] - before["drains_deferred"],
        "ticks": after["counters"]["ticks"] - before["ticks"],
        "wrk": wrk,
    }


def server_cpu_ns(pid):
    """CPU time (ns, from schedstat) of the agent's HTTP threads (`pcct-http*`)."""
    total = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    for tid in tasks:
        try:
            if not Path(f"/proc/{pid}/task/{tid}/comm").read_text().startswith("pcct-http"):
                continue
            total += int(Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()[0])
        except (OSError, ValueError):
            continue
    return total


class Poller(threading.Thread):
    """GETs /api/hot-methods?limit=20 every 100 ms until stopped."""

    def __init__(self, address, pid):
        super().__init__(daemon=True)
        self.address = address
        self.pid = pid
        self.stop = threading.Event()
        self.answers = 0
        self.server_ns = 0

    def run(self):
        while not self.stop.wait(0.1):
            try:
                get_json(self.address, "/api/hot-methods?limit=20", timeout=5)
                self.answers += 1
            except OSError:
                pass
            # The server threads' CPU so far (kept from the last reading
            # before the JVM exits).
            reading = server_cpu_ns(self.pid)
            if reading is not None:
                self.server_ns = max(self.server_ns, reading)


def demo_run(classes, workdir, seconds, poll, label):
    addr_file = workdir / f"addr-{label}"
    if addr_file.exists():
        addr_file.unlink()
    options = f"interval=1ms,port=0,addr_file={addr_file},quiet=on"
    started = time.time()
    process, out, err = start_jvm(classes, "Demo", [str(seconds)], options, workdir, label)
    poller = None
    if poll:
        poller = Poller(read_address(addr_file, process, time.time() + 60), process.pid)
        poller.start()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.time() - started
    if poller:
        poller.stop.set()
        poller.join()
    out.close()
    err.close()
    if status != 0:
        sys.exit(f"the demo failed ({status}); see {workdir / label}.err")
    text = (workdir / f"{label}.out").read_text()
    orders = int(re.search(r"handled (\d+) orders", text).group(1))
    return {
        "orders": orders,
        "cpu": usage.ru_utime + usage.ru_stime,
        "wall": wall,
        "answers": poller.answers if poller else 0,
        "server_cpu": poller.server_ns / 1e9 if poller else 0.0,
    }


def slowdown(classes, workdir, rounds, seconds):
    pairs = []
    for round_ in range(rounds):
        order = [False, True]
        random.shuffle(order)
        runs = {poll: demo_run(classes, workdir, seconds, poll, f"demo-{round_}-{int(poll)}") for poll in order}
        base, polled = runs[False], runs[True]
        pairs.append({
            "orders_per_cpu": (polled["orders"] / polled["cpu"]) / (base["orders"] / base["cpu"]),
            "orders_per_wall": (polled["orders"] / polled["wall"]) / (base["orders"] / base["wall"]),
            "answers": polled["answers"],
            "server_share": polled["server_cpu"] / polled["cpu"],
            "server_us_per_answer": polled["server_cpu"] * 1e6 / max(polled["answers"], 1),
        })
        print(f"round {round_ + 1}: {json.dumps(pairs[-1])}", file=sys.stderr)
    return pairs


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--seconds", type=int, default=20, help="wrk's duration")
    parser.add_argument("--demo-seconds", type=int, default=10)
    parser.add_argument("--connections", type=int, default=4)
    arguments = parser.parse_args()
    if not AGENT.is_file():
        sys.exit(f"{AGENT} is missing: cargo build --release -p pcct-agent")
    if not shutil.which("wrk"):
        sys.exit("wrk is missing: apt-get install wrk")
    workdir = Path(tempfile.mkdtemp(prefix="pcct-http-bench-"))
    classes = workdir / "classes"
    compile_java([ROOT / "tests/java/BranchyContexts.java", ROOT / "tests/java/Gen0000000.java",
                  ROOT / "demo/Demo.java"], classes)

    measured = latency(classes, workdir, arguments.nodes, arguments.seconds, arguments.connections)
    pairs = slowdown(classes, workdir, arguments.rounds, arguments.demo_seconds)
    cpu = [1 / p["orders_per_cpu"] - 1 for p in pairs]
    server_share = [p["server_share"] for p in pairs]
    per_answer = [p["server_us_per_answer"] for p in pairs]
    wall = [1 / p["orders_per_wall"] - 1 for p in pairs]
    print(f"""
### /api/hot-methods under load (issue 4)

Command: `python3 benches/http/bench.py --rounds {arguments.rounds} --nodes {arguments.nodes} --seconds {arguments.seconds}`
({time.strftime('%Y-%m-%d')}, {os.cpu_count()} vCPUs; work directory {workdir}).

Latency: wrk, {measured['connections']} connections, {measured['seconds']} s, on a profile of
{measured['nodes']} nodes while BranchyContexts is sampled at 1 ms:

| p50 | p90 | p99 | requests/s | drains deferred / ticks |
|---:|---:|---:|---:|---:|
| {measured['p50']} | {measured['p90']} | {measured['p99']} | {measured['requests_per_s']:.0f} | {measured['drains_deferred']} / {measured['ticks']} |

Poller slowdown: the demo ({arguments.demo_seconds} s, agent at 1 ms) with and without a
client polling /api/hot-methods?limit=20 every 100 ms, {arguments.rounds} interleaved rounds:
extra CPU per order handled, median {statistics.median(cpu) * 100:+.2f}%
(rounds: {', '.join(f'{c * 100:+.2f}%' for c in cpu)}); extra wall time per order,
median {statistics.median(wall) * 100:+.2f}%. These whole-program ratios cannot resolve an
effect under about 5% on this machine (the rounds spread that much either way); the
server's own CPU can: the agent's HTTP threads (`pcct-http*`, from
/proc/<pid>/task/*/schedstat) used a median {statistics.median(server_share) * 100:.3f}% of the
JVM's CPU while polled (rounds: {', '.join(f'{v * 100:.3f}%' for v in server_share)}), about
{statistics.median(per_answer):.0f} µs of CPU per answer.
""")
    (workdir / "wrk.txt").write_text(measured["wrk"])


if __name__ == "__main__":
    main()
