#!/usr/bin/env python3
"""JIT feedback: does acting on pcct's advice change throughput? (issue 14)

For each workload:
  1. Profile: one run with the agent at 1 ms writing a JSON profile, then
     `pcct advise <profile> --format json` (the hot edges HotSpot did not
     inline, each with what to do) and `-o directives.json` (HotSpot compiler
     directives for those to inline).
  2. Rounds: every configuration once per round, in a new shuffled order
     each round (seeded; the seed is recorded):
       base           no agent, no directives
       startup        no agent; the directives at start-up
                      (-XX:+UnlockDiagnosticVMOptions -XX:CompilerDirectivesFile=)
       agent          the agent (interval 10 ms, HTTP on), no directives
       agent-startup  the agent and the directives at start-up
       agent-live     the agent; as soon as its live advice has an edge to
                      inline, `pcct advise --apply <pid>` (jcmd
                      Compiler.directives_add, then the agent retransforms the
                      classes concerned so HotSpot compiles them again)
       agent-recompile  the control arm of agent-live: at the same moment the
                      agent retransforms the same classes (POST
                      /api/jit/recompile), with no directive: what --apply
                      costs without its effect
  The agent runs with a control token (a file of this run), which the
  recompile requests carry. javac's classes are the JDK's own, so its
  directives and recompiles match JDK methods (--match-jdk).
  Throughput is work per CPU second of the JVM process (user+sys from wait4),
  except for jitadvice, whose worker reports its own iterations and CPU:
       jitadvice  tests/java/JitAdvice.java for --jitadvice-seconds of its
                  worker's CPU: iterations per worker CPU second, overall and
                  steady (the median of its half-second rates in the second half)
       javac      javac compiling java/util (as benches/jvm/harness.py runs it)
       h2         H2 running benches/jvm/h2-workload.sql (as harness.py runs it)
  Reported: per-round pair ratios startup/base, agent-startup/agent,
  agent-live/agent, agent-recompile/agent and agent-live/agent-recompile
  (median of the rounds and its 95 % bootstrap interval); for the agent runs, the advised edges'
  share and `inlined` state at exit (the profile's jit_advice), and for
  agent-live the state just before the apply and how long the apply took.

With --cost it measures instead what the inline records cost (the same
workloads and rounds, every configuration with the agent at 10 ms):
       agent-nojit    compiled=off: no CompiledMethodLoad events
       agent-default  the defaults (compiled=on, recompile=on): the events and
                      the inline table; the capability to retransform classes
                      is added only at a recompile request, so never here
  Reported: per-round ratios of process CPU and wall time, agent-default /
  agent-nojit, and the table's size. DebugNonSafepoints is on in both (pcct
  turns it on). The workload `startup` (java -version: the agent's start-up,
  its JIT thread's GenerateEvents and its exit) measures the start-up cost.

Outputs, in benches/results/jit-<date-time>/: results.jsonl (a meta line, the
advice, one line per run), each run's stdout, stderr and profile, the
directives file; a Markdown summary on stdout.

Commands (the release build of the agent and the CLI must exist:
cargo build --release -p pcct-agent -p pcct-cli):
  python3 benches/jvm/jit_feedback.py                      # jitadvice, javac, h2; 6 rounds; about 1 h
  python3 benches/jvm/jit_feedback.py --workloads jitadvice --rounds 8
  python3 benches/jvm/jit_feedback.py --smoke              # jitadvice 3 s, 1 round: proves the script, ~2 min
  python3 benches/jvm/jit_feedback.py --jdk /usr/lib/jvm/temurin-25-jdk-amd64
  python3 benches/jvm/jit_feedback.py --cost --workloads javac,h2 --rounds 10   # what the events cost, ~40 min
  python3 benches/jvm/jit_feedback.py --cost --smoke       # jitadvice 3 s, 1 round
"""

import argparse
import shutil
import json
import os
import random
import re
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402  (beside this script: the javac and H2 set-ups)

ROOT = harness.ROOT
AGENT = ROOT / "target" / "release" / "libpcct_agent.so"
PCCT = ROOT / "target" / "release" / "pcct"
CONFIGS = ["base", "startup", "agent", "agent-startup", "agent-live", "agent-recompile"]
PAIRS = [("startup", "base"), ("agent-startup", "agent"), ("agent-live", "agent"), ("agent-recompile", "agent"),
         ("agent-live", "agent-recompile")]
JDK_PREFIXES = ("java.", "javax.", "jdk.", "sun.", "com.sun.")
COST_CONFIGS = {"agent-nojit": "compiled=off", "agent-default": "compiled=on,recompile=on"}
COST_PAIRS = [("agent-default", "agent-nojit")]


def log(message):
    print(f"[jit_feedback] {message}", file=sys.stderr, flush=True)


def setup_jitadvice(args, classes):
    harness.compile_java([ROOT / "tests" / "java" / "JitAdvice.java"], classes)
    return {"args": ["-cp", str(classes), "JitAdvice", str(args.jitadvice_seconds)], "cwd": harness.WORK,
            "expected_s": args.jitadvice_seconds * 2 + 5}


def setups(args, names):
    classes = harness.WORK / "jit-classes"
    classes.mkdir(parents=True, exist_ok=True)
    made = {}
    for name in names:
        if name == "jitadvice":
            made[name] = setup_jitadvice(args, classes)
        elif name == "startup":
            made[name] = {"args": ["-version"], "cwd": harness.WORK, "expected_s": 2}
        else:
            made[name] = harness.WORKLOADS[name](args, classes)
    if "javac" in made:
        made["javac"]["match_jdk"] = True  # javac's classes are the JDK's own (com.sun.tools.javac)
    return made


def agent_flag(options):
    return f"-agentpath:{AGENT}={options}"


def request(address, token, path, body=None):
    """JSON from the agent at `address`, with the control token."""
    data = None if body is None else json.dumps(body).encode()
    ask = urllib.request.Request(f"http://{address}{path}", data=data, headers={"Authorization": f"Bearer {token}"})
    if data is not None:
        ask.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(ask, timeout=60) as answer:
        return json.load(answer)


def advice_of(address, token, min_share):
    return request(address, token, f"/api/jit/advice?limit=20&min_share={min_share}")


def classes_to_recompile(edges, limit, match_jdk):
    """What `pcct advise --apply` retransforms for these edges: the classes of the code that runs each call
    and of its caller, the JDK's left out unless `match_jdk` (pcct_jit::directives::classes_to_recompile)."""
    classes = []
    for edge in edges[:limit]:
        for method in (edge.get("compiled_in"), edge["caller"]):
            jdk = method and not match_jdk and method["class"].startswith(JDK_PREFIXES)
            if method and not jdk and method["class"] not in classes:
                classes.append(method["class"])
    return classes


def edge_summary(edge):
    return {"caller": f"{edge['caller']['class']}.{edge['caller']['name']}", "bci": edge["call_site"]["bci"],
            "callee": f"{edge['callee']['class']}.{edge['callee']['name']}", "share": edge["share"],
            "inlined": edge["inlined"], "caller_level": edge["caller_level"], "action": edge["action"],
            "compiled_in": edge["compiled_in"] and f"{edge['compiled_in']['class']}.{edge['compiled_in']['name']}"}


def live_apply(process, address_file, args, outcome, control, match_jdk):
    """Waits for the agent's address and an edge to inline, then applies the advice to the running JVM, or
    with `control`, retransforms the same classes without directives."""
    deadline = time.monotonic() + args.apply_deadline
    address = None
    while time.monotonic() < deadline and process.poll() is None:
        if address is None and address_file.exists() and address_file.read_text().strip():
            address = address_file.read_text().strip()
        if address:
            try:
                advice = advice_of(address, args.token, args.min_share)
                candidates = [e for e in advice["not_inlined"] if e["action"] == "inline"]
                if candidates:
                    outcome["before"] = [edge_summary(e) for e in candidates]
                    outcome["classes"] = classes_to_recompile(candidates, args.limit, match_jdk)
                    break
            except (OSError, ValueError):
                pass
        time.sleep(0.5)
    if "before" not in outcome:
        outcome["applied"] = False
        outcome["why"] = "the run ended first" if process.poll() is not None else "no edge to inline in time"
        return
    started = time.monotonic()
    if control:
        try:
            answer = request(address, args.token, "/api/jit/recompile", {"classes": outcome["classes"]})
            outcome.update(applied=bool(answer.get("retransformed")), apply_s=time.monotonic() - started,
                           apply_output=json.dumps(answer)[-3000:])
            if not outcome["applied"]:
                outcome["why"] = "nothing retransformed"
        except (OSError, ValueError) as error:
            outcome.update(applied=False, why=f"recompile: {error}")
        outcome["apply_at_s"] = started - outcome["started"]
        return
    result = subprocess.run([str(PCCT), "advise", "--apply", str(process.pid), "--address", address,
                             "--token-file", str(args.token_file), "--min-share", str(args.min_share),
                             "--limit", str(args.limit), "--wait", "60", *(["--match-jdk"] if match_jdk else [])],
                            capture_output=True, text=True)
    output = result.stdout + result.stderr
    outcome.update(applied=result.returncode == 0 and "inlined after" in output, apply_s=time.monotonic() - started,
                   apply_output=output[-3000:])
    if not outcome["applied"]:
        outcome["why"] = "nothing to apply" if "nothing to apply" in output else f"pcct advise --apply: exit {result.returncode}"
    outcome["apply_at_s"] = started - outcome["started"]


def run_once(workload, setup, config, args, directives, out_base):
    """Runs one JVM of `config`; returns its record."""
    flags, profile = [], None
    if config in ("startup", "agent-startup"):
        flags += ["-XX:+UnlockDiagnosticVMOptions", f"-XX:CompilerDirectivesFile={directives}"]
    address_file = Path(f"{out_base}.addr")
    if config in COST_CONFIGS:
        profile = Path(f"{out_base}.json")
        flags.append(agent_flag(f"interval=10ms,quiet=on,http=off,file={profile},{COST_CONFIGS[config]}"))
    elif config.startswith("agent"):
        profile = Path(f"{out_base}.json")
        flags.append(agent_flag(f"interval=10ms,quiet=on,addr_file={address_file},file={profile},"
                                f"token_file={args.token_file}"))
    if setup.get("clean"):
        shutil.rmtree(setup["clean"], ignore_errors=True)
        Path(setup["clean"]).mkdir(parents=True)
    command = [str(args.java), *flags, *setup["args"]]
    record = {"type": "run", "workload": workload, "config": config, "command": command}
    live = {}
    with open(f"{out_base}.stdout", "wb") as out, open(f"{out_base}.stderr", "wb") as err:
        started = time.monotonic()
        process = subprocess.Popen(command, cwd=setup["cwd"], stdin=subprocess.DEVNULL, stdout=out, stderr=err)
    watcher = None
    if config in ("agent-live", "agent-recompile"):
        live["started"] = started
        control = config == "agent-recompile"
        watcher = threading.Thread(target=live_apply, daemon=True,
                                   args=(process, address_file, args, live, control, setup.get("match_jdk", False)))
        watcher.start()
    _, status, usage = os.wait4(process.pid, 0)
    record.update(wall_s=time.monotonic() - started, cpu_s=usage.ru_utime + usage.ru_stime,
                  exit_status=os.waitstatus_to_exitcode(status))
    if watcher:
        watcher.join(timeout=90)
        live.pop("started", None)
        record["live"] = live
    stdout = Path(f"{out_base}.stdout").read_text(errors="replace")
    done = re.search(r"^done (\d+) (\d+)$", stdout, re.M)
    if done:
        iterations, worker_ns = int(done.group(1)), int(done.group(2))
        record["throughput"] = iterations / (worker_ns / 1e9)
        rates = [int(r) for r in re.findall(r"^rate (\d+)$", stdout, re.M)]
        record["steady"] = statistics.median(rates[len(rates) // 2:]) if rates else None
        record["wrong"] = "WRONG" in stdout
    else:
        record["throughput"] = 1.0 / record["cpu_s"]
    if profile and profile.exists():
        with open(profile) as text:
            jit = json.load(text).get("jit_advice") or {}
        hottest = jit.get("not_inlined", [])[:30] + jit.get("inlined", [])[:30] + jit.get("unknown", [])[:10]
        record["at_exit"] = [edge_summary(e) for e in hottest]
        record["table"] = jit.get("jit", {}).get("table")
    record["ok"] = record["exit_status"] == 0 and not record.get("wrong")
    return record


def profile_and_advise(workload, setup, args, out_dir):
    """The profile run and its advice; returns (advice, directives file)."""
    profile = out_dir / f"{workload}-profile.json"
    command = [str(args.java), agent_flag(f"interval=1ms,quiet=on,http=off,file={profile}"), *setup["args"]]
    if setup.get("clean"):
        shutil.rmtree(setup["clean"], ignore_errors=True)
        Path(setup["clean"]).mkdir(parents=True)
    subprocess.run(command, cwd=setup["cwd"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    directives = out_dir / f"{workload}-directives.json"
    advised = subprocess.run([str(PCCT), "advise", str(profile), "--format", "json", "--min-share", str(args.min_share),
                              "--limit", str(args.limit), "-o", str(directives),
                              *(["--match-jdk"] if setup.get("match_jdk") else [])],
                             capture_output=True, text=True, check=True)
    return json.loads(advised.stdout), directives


def ratios(runs, workload, key, mine, theirs):
    by_round = {}
    for run in runs:
        if run["workload"] == workload and run["ok"] and run.get(key):
            by_round.setdefault(run["round"], {})[run["config"]] = run[key]
    values = [r[mine] / r[theirs] for r in by_round.values() if mine in r and theirs in r]
    return values


def median_interval(values, resamples=2000, seed=1):
    """The median of `values` and its 95 % bootstrap interval."""
    rng = random.Random(seed)
    draws = sorted(statistics.median(rng.choices(values, k=len(values))) for _ in range(resamples))
    return statistics.median(values), draws[int(0.025 * resamples)], draws[int(0.975 * resamples) - 1]


def fmt_ratios(values):
    if not values:
        return "—"
    median, low, high = median_interval(values)
    return f"{median:.3f} [{low:.3f}, {high:.3f}] (n={len(values)})"


def markdown(meta, advice, runs):
    lines = [f"JIT feedback, {meta['date']}, {meta['java_version']}, {meta['rounds']} rounds, seed {meta['seed']}", ""]
    lines += ["Throughput ratios, median of the rounds [95 % bootstrap interval]:", "",
              "| workload | edges to inline | " + " | ".join(f"{a} / {b}" for a, b in PAIRS)
              + " | steady agent-live / agent-recompile |", "|---|---:|" + "---:|" * (len(PAIRS) + 1)]
    for workload, report in advice.items():
        to_inline = [e for e in report["not_inlined"] if e["action"] == "inline"]
        cells = [fmt_ratios(ratios(runs, workload, "throughput", a, b)) for a, b in PAIRS]
        steady = (fmt_ratios(ratios(runs, workload, "steady", "agent-live", "agent-recompile"))
                  if workload == "jitadvice" else "—")
        lines.append(f"| {workload} | {len(to_inline)} | {' | '.join(cells)} | {steady} |")
    lines += ["", "Advised edges (profile run) and their state at exit (median share over the rounds):", "",
              "| workload | edge | profile: share, state | agent | agent-startup | agent-live |", "|---|---|---|---|---|---|"]
    for workload, report in advice.items():
        for edge in [e for e in report["not_inlined"] if e["action"] == "inline"][:5]:
            name = f"{edge['caller']['class']}.{edge['caller']['name']} → {edge['callee']['class']}.{edge['callee']['name']}"
            cells = []
            for config in ("agent", "agent-startup", "agent-live"):
                states = [e for run in runs if run["workload"] == workload and run["config"] == config
                          for e in run.get("at_exit", []) if e["caller"] + " → " + e["callee"] == name]
                if states:
                    inlined = sorted({str(e["inlined"]).lower() for e in states})
                    cells.append(f"{100 * statistics.median(e['share'] for e in states):.1f}%, {'/'.join(inlined)}")
                else:
                    cells.append("not hot")
            lines.append(f"| {workload} | `{name}` | {100 * edge['share']:.1f}%, {str(edge['inlined']).lower()} | {' | '.join(cells)} |")
    for config, what in (("agent-live", "Live applies reported inlined"), ("agent-recompile", "Control retransforms")):
        applied = [r["live"] for r in runs if r.get("live") and r["config"] == config]
        if applied:
            done = [a for a in applied if a.get("applied")]
            why = sorted({a.get("why", "") for a in applied if not a.get("applied")})
            lines += ["", f"{what}: {len(done)} of {len(applied)}" + (f" (others: {'; '.join(why)})" if why else "")
                      + f"; at {fmt_seconds([a['apply_at_s'] for a in done])} into the run, taking "
                      f"{fmt_seconds([a['apply_s'] for a in done])}."]
    return "\n".join(lines)


def cost_markdown(meta, names, runs):
    lines = [f"Cost of the inline records, {meta['date']}, {meta['java_version']}, {meta['rounds']} rounds, seed {meta['seed']}",
             "", "| workload | " + " | ".join(f"CPU {a} / {b}" for a, b in COST_PAIRS) + " | "
             + " | ".join(f"wall {a} / {b}" for a, b in COST_PAIRS) + " | table (median) |",
             "|---" + "|---:" * (2 * len(COST_PAIRS) + 1) + "|"]
    for workload in names:
        cpu = [fmt_ratios(ratios(runs, workload, "cpu_s", a, b)) for a, b in COST_PAIRS]
        wall = [fmt_ratios(ratios(runs, workload, "wall_s", a, b)) for a, b in COST_PAIRS]
        tables = [r["table"] for r in runs if r["workload"] == workload and r.get("table") and r["table"]["codes"]]
        size = (f"{statistics.median(t['codes'] for t in tables):.0f} codes, "
                f"{statistics.median(t['bytes'] for t in tables) / 1024:.0f} KiB") if tables else "—"
        lines.append(f"| {workload} | {' | '.join(cpu)} | {' | '.join(wall)} | {size} |")
    return "\n".join(lines)


def fmt_seconds(values):
    return f"{statistics.median(values):.1f} s (median)" if values else "—"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", default="jitadvice,javac,h2")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--jitadvice-seconds", type=float, default=20)
    parser.add_argument("--min-share", type=float, default=0.01)
    parser.add_argument("--limit", type=int, default=10)
    parser.add_argument("--apply-deadline", type=float, default=60, help="seconds to wait for an edge to inline")
    parser.add_argument("--jdk", default=str(harness.JAVA_HOME))
    parser.add_argument("--seed", type=int)
    parser.add_argument("--smoke", action="store_true", help="jitadvice for 3 s, 1 round")
    parser.add_argument("--cost", action="store_true", help="measure what the inline records cost instead")
    args = parser.parse_args()
    if args.smoke:
        args.workloads, args.rounds, args.jitadvice_seconds = "jitadvice", 1, 3
    args.java = Path(args.jdk) / "bin" / "java"
    for needed in (AGENT, PCCT, args.java):
        if not needed.exists():
            raise SystemExit(f"{needed} is missing (cargo build --release -p pcct-agent -p pcct-cli)")
    names = [w.strip() for w in args.workloads.split(",") if w.strip()]
    harness.WORK.mkdir(parents=True, exist_ok=True)
    made = setups(args, names)
    out_dir = harness.RESULTS / time.strftime("jit-%Y%m%d-%H%M%S")
    out_dir.mkdir(parents=True)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 32)
    version = subprocess.run([str(args.java), "-version"], capture_output=True, text=True).stderr.splitlines()[0]
    meta = {"type": "meta", "date": time.strftime("%Y-%m-%d %H:%M"), "seed": seed, "rounds": args.rounds,
            "java_version": version, "command": sys.argv, "workloads": names}
    args.token = "jit-feedback-" + "".join(random.SystemRandom().choice("abcdefghijkmnpqrstuvwxyz23456789")
                                           for _ in range(24))
    args.token_file = out_dir / "token"
    descriptor = os.open(args.token_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as token_out:
        token_out.write(args.token + "\n")
    jsonl = out_dir / "results.jsonl"
    with open(jsonl, "a") as out:
        out.write(json.dumps(meta) + "\n")
    advice, directives = {}, {}
    for workload in names if not args.cost else []:
        log(f"{workload}: profile run and advice")
        advice[workload], directives[workload] = profile_and_advise(workload, made[workload], args, out_dir)
        with open(jsonl, "a") as out:
            out.write(json.dumps({"type": "advice", "workload": workload, "advice": advice[workload]}) + "\n")
    rng, runs = random.Random(seed), []
    configs = list(COST_CONFIGS) if args.cost else CONFIGS
    for round_index in range(args.rounds):
        order = [(w, c) for w in names for c in configs]
        rng.shuffle(order)
        for workload, config in order:
            record = run_once(workload, made[workload], config, args, directives.get(workload),
                              out_dir / f"{workload}-{config}-r{round_index}")
            record["round"] = round_index
            runs.append(record)
            with open(jsonl, "a") as out:
                out.write(json.dumps(record) + "\n")
            log(f"round {round_index + 1}/{args.rounds} {workload:9} {config:13} cpu {record['cpu_s']:6.2f} s "
                f"throughput {record['throughput']:.4g} {'ok' if record['ok'] else 'FAILED'}")
    print(cost_markdown(meta, names, runs) if args.cost else markdown(meta, advice, runs))
    log(f"results: {jsonl}")
    if args.smoke and not all(run["ok"] for run in runs):
        sys.exit(1)


if __name__ == "__main__":
    main()
