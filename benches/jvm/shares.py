"""Shares of the CPU by method from collapsed stacks, for comparing profiles
of different profilers by what they agree on: each sample's deepest real
Java frame, pseudo-frames left out, and the share of samples without one.

pcct's collapsed frames are `pkg.Class.method`, its failed walks bracketed
pseudo-frames (`[unknown_Java]`, `[break_compiled]`, ...). async-profiler's
(with its `ann` option) are `pkg/Class.method_[j]` (`_[i]` inlined, `_[0]`
interpreted, `_[1]` C1), native frames unsuffixed, and it samples every
thread: a stack with no Java frame counts only when it ends in an error
frame (`[unknown]`, ...), as ../shared/peers/README.md says; JVM threads'
native stacks are left out. Lambda and hidden-class names carry addresses
that change every run: they are normalised.
"""

import collections
import math
import random
import re
import statistics

JAVA_SUFFIX = re.compile(r"_\[(j|i|0|1)\]$")
ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
LAMBDA = re.compile(r"\$\$Lambda[^.;]*")


def normalise(frame):
    """`java/util/Map.get` -> `java.util.Map.get`; lambda and hidden-class addresses dropped."""
    return ADDRESS.sub("0x", LAMBDA.sub("$$Lambda", frame.replace("/", ".")))


def self_shares(collapsed_text, native=frozenset()):
    """(method -> share of the samples' weight by self, share without a Java frame, total weight).
    `native`: the names of pcct's native frames (`native=on`; async-profiler's are known by their missing
    suffix), which are not Java frames."""
    per_method = collections.Counter()
    total = 0.0
    no_java = 0.0
    lines = [line for line in collapsed_text.splitlines() if line.strip()]
    annotated = any("_[j]" in line or "_[0]" in line or "_[i]" in line for line in lines[:500])
    for line in lines:
        stack, _, value = line.rpartition(" ")
        try:
            weight = float(value)
        except ValueError:
            continue
        frames = stack.split(";")
        if annotated:
            java = [JAVA_SUFFIX.sub("", frame) for frame in frames if JAVA_SUFFIX.search(frame)]
            if not java and not any(frame.startswith("[") for frame in frames):
                continue  # a JVM thread's native stack
        else:
            java = [frame for frame in frames if not frame.startswith("[") and frame not in native]
        total += weight
        if java:
            per_method[normalise(java[-1])] += weight
        else:
            no_java += weight
    if total == 0:
        return {}, 0.0, 0.0
    return {method: weight / total for method, weight in per_method.items()}, no_java / total, total


KERNEL_SUFFIX = "_[k]"


def weighted_stacks(collapsed_text):
    """Each line of collapsed stacks as (frames, weight); lines without a number at the end are skipped."""
    for line in collapsed_text.splitlines():
        stack, _, value = line.rpartition(" ")
        try:
            weight = float(value)
        except ValueError:
            continue
        yield stack.split(";"), weight


GLIBC_ALIAS = re.compile(r"^_*(GI_+|libc_+)?_*")
CLONE_SUFFIX = re.compile(r" \[clone [^]]*\]$")


def native_key(frame):
    """A native function's name as both profilers can agree on it: a library without symbols by its file
    name (async-profiler writes its path), a C++ function without its parameters and clone suffix
    (async-profiler writes `CodeHeap::find_blob_unsafe`, pcct `CodeHeap::find_blob_unsafe(void*) const`),
    and glibc's aliases of one function by its plain name (pcct names `write` what async-profiler may call
    `__GI_write` or `__libc_write`, and `pthread_cond_signal` its `___pthread_cond_signal`)."""
    name = frame.rsplit("/", 1)[-1] if frame.startswith("/") else frame
    name = CLONE_SUFFIX.sub("", name)
    if "::" in name and "(" in name:
        name = name[: name.index("(")]  # C++: async-profiler leaves out the parameters
    return GLIBC_ALIAS.sub("", name) or frame


def native_shares(collapsed_text, native=None):
    """(native function -> share, share of the Java threads' weight with a native frame below the deepest
    Java frame, that weight): each such sample by its deepest native frame that is not the kernel's (`_[k]`),
    the Java threads' samples only. `native`: pcct's native frame names (from its JSON profile's methods of
    kind `native`); None for async-profiler's annotated stacks, where a native frame is one without a suffix.
    A library without symbols is named by its file name (async-profiler writes its path)."""
    per_function = collections.Counter()
    java_total = 0.0
    for frames, weight in weighted_stacks(collapsed_text):
        if native is None:
            is_java = [bool(JAVA_SUFFIX.search(frame)) for frame in frames]
            is_native = [not java and not frame.endswith(KERNEL_SUFFIX) and not frame.startswith("[")
                         for frame, java in zip(frames, is_java)]
        else:
            is_native = [frame in native for frame in frames]
            is_java = [not own and not frame.startswith("[") for frame, own in zip(frames, is_native)]
        if not any(is_java):
            continue  # not a Java thread's sample
        java_total += weight
        deepest_java = max(index for index, java in enumerate(is_java) if java)
        below = [frame for frame, own in zip(frames[deepest_java + 1:], is_native[deepest_java + 1:]) if own]
        if below:
            per_function[native_key(below[-1])] += weight
    with_native = sum(per_function.values())
    if with_native == 0:
        return {}, 0.0, java_total
    shares = {function: weight / with_native for function, weight in per_function.items()}
    return shares, with_native / java_total, java_total


def allocator_shares(collapsed_text):
    """(allocating method -> share of the allocated bytes, share without a Java frame, total) from
    allocation stacks, whose last frame is the allocated type (pcct's `byte[]`, async-profiler's
    `byte[]_[i]` or `_[k]`): each stack by its deepest Java frame below the type."""
    cut = []
    for line in collapsed_text.splitlines():
        stack, _, value = line.rpartition(" ")
        frames = stack.split(";")
        if len(frames) > 1:
            cut.append(f"{';'.join(frames[:-1])} {value}")
    return self_shares("\n".join(cut))


def correlation(a, b):
    """Pearson correlation of two method -> share maps over the union of their methods."""
    keys = sorted(set(a) | set(b))
    if len(keys) < 2:
        return None
    xs = [a.get(key, 0.0) for key in keys]
    ys = [b.get(key, 0.0) for key in keys]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    cov = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    vx = sum((x - mx) ** 2 for x in xs)
    vy = sum((y - my) ** 2 for y in ys)
    return cov / math.sqrt(vx * vy) if vx and vy else None


def all_pairs_median(matrix, rounds):
    """Median correlation over all pairs of distinct `rounds` (indices into `matrix`; a round drawn twice
    by a bootstrap is not paired with itself). None when no pair has a correlation."""
    values = [matrix[i][j] for a, i in enumerate(rounds) for j in rounds[a + 1:]
              if i != j and matrix[i][j] is not None]
    return statistics.median(values) if values else None


def correlation_matrix(share_maps):
    """Correlations of every pair of method -> share maps (None on the diagonal)."""
    n = len(share_maps)
    matrix = [[None] * n for _ in range(n)]
    for i in range(n):
        for j in range(i + 1, n):
            matrix[i][j] = matrix[j][i] = correlation(share_maps[i], share_maps[j])
    return matrix


def precision_difference(shares_a, shares_b, resamples=2000, seed=1):
    """How far two configurations' precision differs, and how surely: (all-pairs median of a - that of b,
    2.5th and 97.5th percentiles of the same difference over `resamples` bootstrap draws of each one's
    rounds). The rounds of a workload differ by more than sampling error (the JIT's choices, the file
    system's state), so ten rounds leave the difference uncertain by about a point; an interval holding 0
    says the rounds cannot tell the two apart."""
    rng = random.Random(seed)
    matrix_a, matrix_b = correlation_matrix(shares_a), correlation_matrix(shares_b)
    observed = all_pairs_median(matrix_a, list(range(len(shares_a)))), \
        all_pairs_median(matrix_b, list(range(len(shares_b))))
    if None in observed:
        return None
    draws = []
    for _ in range(resamples):
        a = all_pairs_median(matrix_a, [rng.randrange(len(shares_a)) for _ in shares_a])
        b = all_pairs_median(matrix_b, [rng.randrange(len(shares_b)) for _ in shares_b])
        if a is not None and b is not None:
            draws.append(a - b)
    draws.sort()
    return observed[0] - observed[1], draws[int(0.025 * len(draws))], draws[int(0.975 * len(draws)) - 1]


def inclusive_shares(collapsed_text, methods):
    """For each of `methods` (normalised names, `SyscallTruth.readBig`), its inclusive weight (the stacks it
    is on) over the weight of the stacks on any of them: what a program that measures its own methods' split
    (the harness's truth) can be held against. A stack on several counts for the first of them in `methods`;
    stacks on none are left out. {} when no stack is on any."""
    weights = dict.fromkeys(methods, 0.0)
    for stack, weight in weighted_stacks(collapsed_text):
        frames = {normalise(JAVA_SUFFIX.sub("", frame)) for frame in stack}
        for method in methods:
            if method in frames:
                weights[method] += weight
                break
    total = sum(weights.values())
    return {method: weight / total for method, weight in weights.items()} if total else {}


def method_spread(share_maps):
    """How a configuration's rounds vary per method: (method -> (mean share, standard deviation, largest
    share), the variance across rounds summed over methods). Two profilers of the same workload both see
    its own variance (the JIT's choices, the heap's growth): a profiler that adds to it, or moves time
    between methods, shows here as a larger sum or as methods whose mean or spread differs. None with
    fewer than two rounds."""
    if len(share_maps) < 2:
        return None
    methods = set().union(*share_maps)
    per_method = {}
    for method in methods:
        values = [shares.get(method, 0.0) for shares in share_maps]
        per_method[method] = (statistics.fmean(values), statistics.stdev(values), max(values))
    return per_method, sum(spread ** 2 for _, spread, _ in per_method.values())


def self_test():
    pcct = "A.main;A.run;A.leaf 300\nA.main;A.run 100\n[unknown_Java] 100\n[break_compiled];A.leaf 100\n"
    shares, no_java, total = self_shares(pcct)
    assert abs(shares["A.leaf"] - 400 / 600) < 1e-9 and abs(shares["A.run"] - 100 / 600) < 1e-9, shares
    assert abs(no_java - 100 / 600) < 1e-9 and total == 600
    ap = ("start_thread;A/main_[j];A/leaf_[i] 3\nA/main_[j] 1\nthread_native_entry;GCThread::run 50\n"
          "[unknown] 1\nA/Foo$$Lambda.0x00007f00aa_[j] 1\n")
    shares, no_java, _ = self_shares(ap)
    assert abs(shares["A.leaf"] - 0.5) < 1e-9 and abs(no_java - 1 / 6) < 1e-9, (shares, no_java)
    assert "A.Foo$$Lambda.0x" in shares, shares
    assert abs(correlation({"a": 0.6, "b": 0.4}, {"a": 0.6, "b": 0.4}) - 1.0) < 1e-9
    allocations = "A.main;A.big;byte[] 600\nA.main;A.small;A$Small 300\nA.main;A.big;long[] 100\n"
    shares, _, total = allocator_shares(allocations)
    assert abs(shares["A.big"] - 0.7) < 1e-9 and abs(shares["A.small"] - 0.3) < 1e-9 and total == 1000, shares
    ap_allocations = "A/main_[j];A/big_[j];byte[]_[i] 6\nA/main_[j];A/small_[j];A$Small_[k] 4\n"
    shares, _, _ = allocator_shares(ap_allocations)
    assert abs(shares["A.big"] - 0.6) < 1e-9 and abs(shares["A.small"] - 0.4) < 1e-9, shares
    assert correlation({"a": 1.0}, {"a": 1.0}) is None
    steady = [{"a": 0.5, "b": 0.3, "c": 0.2}, {"a": 0.49, "b": 0.31, "c": 0.2}, {"a": 0.51, "b": 0.29, "c": 0.2}]
    shifting = [{"a": 0.5, "b": 0.3, "c": 0.2}, {"a": 0.2, "b": 0.3, "c": 0.5}, {"a": 0.3, "b": 0.5, "c": 0.2}]
    difference, low, high = precision_difference(steady, steady, resamples=200)
    assert difference == 0 and low <= 0 <= high, (difference, low, high)
    difference, low, high = precision_difference(steady, shifting, resamples=200)
    assert difference > 1 and low <= difference <= high, (difference, low, high)
    per_method, summed = method_spread(shifting)
    assert abs(per_method["a"][0] - 1 / 3) < 1e-9 and per_method["b"][2] == 0.5 and per_method["c"][1] > 0.17
    assert abs(summed - sum(statistics.variance([r[m] for r in shifting]) for m in "abc")) < 1e-12
    assert method_spread(steady)[1] < summed and method_spread(steady[:1]) is None
    stacks = ("T.main;T.read;F.readBytes 700\nT.main;T.spin 200\nT.main;T.stat;F.exists 100\nT.main 50\n"
              "T/main_[j];T/read_[j];read_[k] 3\n")
    inclusive = inclusive_shares(stacks, ["T.spin", "T.read", "T.stat"])
    assert abs(inclusive["T.read"] - 703 / 1003) < 1e-9 and abs(inclusive["T.stat"] - 100 / 1003) < 1e-9, inclusive
    assert inclusive_shares("T.main 5\n", ["T.spin"]) == {}
    pcct_native = ("G.main;D.deflateBytesBytes;Java_D;deflate;libz.so.1 60\nG.main;D.deflateBytesBytes;Java_D;deflate 30\n"
                   "G.main;G.work 10\n[GC];[GC Thread];GCThread::run 50\n")
    names = {"Java_D", "deflate", "libz.so.1", "GCThread::run"}
    shares, with_native, total = native_shares(pcct_native, names)
    assert shares == {"libz.so.1": 60 / 90, "deflate": 30 / 90} and with_native == 0.9 and total == 100, shares
    shares, _, _ = self_shares(pcct_native, names)
    assert abs(shares["D.deflateBytesBytes"] - 90 / 150) < 1e-9, shares
    ap_native = ("G/main_[j];D/deflateBytesBytes_[j];Java_D;deflate;/usr/lib/libz.so.1 6\n"
                 "G/main_[j];D/deflateBytesBytes_[j];Java_D;deflate;do_syscall_64_[k] 3\nG/main_[j] 1\n"
                 "thread_native_entry;GCThread::run 5\n")
    shares, with_native, total = native_shares(ap_native)
    assert shares == {"libz.so.1": 6 / 9, "deflate": 3 / 9} and with_native == 0.9 and total == 10, shares
    assert [native_key(name) for name in ("__GI_write", "___pthread_cond_signal", "__libc_write", "write",
                                          "/usr/lib/libz.so.1", "__futex_abstimed_wait_common",
                                          "CodeHeap::find_blob_unsafe(void*) const",
                                          "InstanceKlass::find(int) [clone .constprop.0]")] == \
        ["write", "pthread_cond_signal", "write", "write", "libz.so.1", "futex_abstimed_wait_common",
         "CodeHeap::find_blob_unsafe", "InstanceKlass::find"]
