//! `pcct`: run a Java program under the pcct agent and show what it found,
//! attach the agent to a running JVM, and read written profiles.

#![forbid(unsafe_code)]

mod advise;
mod commands;
mod directive_stack;
mod http;
mod input;
mod locate;
mod summary;

use std::process::ExitCode;

const USAGE: &str = "\
pcct — sampling profiler for the JVM (partial calling context tree)

usage:
  pcct demo [--seconds N] [--interval D] [--java PATH] [--keep]
        build nothing, compile and profile the bundled demo workload, print what it found
  pcct run [--options OPTS] [--out FILE.json] [--java PATH] -- <java arguments...>
        run java with the agent, then print the hot methods, edges and tree
  pcct attach <pid> [--options OPTS] [--jcmd PATH]
        load the agent into a running JVM (jcmd JVMTI.agent_load)
  pcct report <profile.json> [--format summary|xtree|xarc|xprof|sites|collapsed|json|pprof] [--top N]
                             [--min-share X] [--resource R]
        print a profile the agent wrote with file=...json, as it goes; R is
        the resource counted: samples, cpu, wall, alloc_bytes, alloc_objects,
        lock_wait_ns, lock_enters (default: the profile's cpu or wall);
        --format sites ranks HPROF's sites (allocated type or monitor class,
        and the code) by it; --metric is another name of --resource;
        pprof: gzipped profile.proto for go tool pprof, Pyroscope, Parca
        (redirect it to a file)
  pcct correlate <a.json> <b.json> [--resource samples|cpu|wall|...]
        precision as Whaley measures it: correlation of two profiles,
        per method and per calling context, and over real methods only
        (pseudo-frames' weight to the Java frame above; the share of
        samples without any Java frame printed beside)
  pcct advise <profile.json | host:port> [--limit N] [--min-share X] [--match-jdk] [--format text|json|directives] [-o FILE]
        the JIT advice: hot edges HotSpot did not inline (ranked, with why) and those it did;
        -o writes a HotSpot compiler directives file (-XX:CompilerDirectivesFile=FILE)
  pcct advise --apply <pid> [--limit N] [--min-share X] [--match-jdk] [--address host:port] [--token-file FILE] [--jcmd PATH]
                            [--wait S]
        add the directives to a running JVM (jcmd Compiler.directives_add), have its agent
        recompile the classes concerned (it needs the control token: --token-file, or
        $PCCT_TOKEN), and wait (30 s, 0..3600) until the edges are reported inlined;
        jcmd is --jcmd, else $JAVA_HOME/bin/jcmd, else jcmd on PATH (never the target's)
  pcct advise --remove <pid> [--token-file FILE] [--jcmd PATH]
        remove the directives --apply added (jcmd Compiler.directives_remove) and recompile
  pcct diff <before.json> <after.json> [--metric cpu|wall|samples] [--top N] [--min-change X]
                                      [--flamegraph FILE.svg]
        what grew or shrank: methods (self and total) and contexts whose share of
        their profile's total changed most; --flamegraph also writes a differential
        flame graph (red: grew, blue: shrank)
  pcct import-stacks <in.stacks> <out.json> [--interval-ns N]
        build a profile from another profiler's sampled stacks
        (time_ns<TAB>thread<TAB>class|method|descriptor|bci or [pseudo]..., root first)

common: --agent PATH (default: libpcct_agent.so next to this program, or $PCCT_AGENT_SO)
        --max-input SIZE (report, correlate, diff, import-stacks): read at most this much
        of an input file (default 2g; k, m, g), else stop with an error
options (OPTS) are the agent's: interval=1ms,mode=cpu,depth=512,... (see the README)";

fn main() -> ExitCode {
    match commands::dispatch(std::env::args_os().skip(1).collect()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(commands::Failure::Usage(message)) => {
            eprintln!("pcct: {message}\n\n{USAGE}");
            ExitCode::from(2)
        }
        Err(commands::Failure::Failed(message)) => {
            eprintln!("pcct: {message}");
            ExitCode::FAILURE
        }
        Err(commands::Failure::Help) => {
            println!("{USAGE}");
            ExitCode::SUCCESS
        }
    }
}
