import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/**
 * Two runs with a known difference for `pcct diff` (tests/tests/diff.rs):
 * the main thread splits its CPU between DiffTarget.a and DiffTarget.b in
 * rounds of 20 units of 0.5 ms, <percentA> percent of each round in a and
 * the rest in b, scheduled on the thread's cumulative CPU clock (as
 * GroundTruth does), so the long-run shares are exact whatever the load.
 * Run once with 25 and once with 50: a's share doubles, b's falls from 75
 * to 50 percent. The clock is read about once a millisecond of work, not
 * more: on a loaded machine a preempted thread is mostly switched out at a
 * system call's exit, where a signal then lands (README, "Signals"), so
 * frequent clock reads (every 0.1 ms before) drew up to 38 % of the
 * samples in one CI run while using 1-2 % of the CPU.
 *
 * Usage: java DiffTarget <seconds of CPU> <percentA>. Prints "done".
 */
public class DiffTarget {
    static final long UNIT_NS = 500_000L;
    /** Iterations between two reads of the clock: about a millisecond. */
    static final int WORK = 500_000;
    static final ThreadMXBean MX = ManagementFactory.getThreadMXBean();
    static volatile long sink;

    static long cpu() {
        return MX.getCurrentThreadCpuTime();
    }

    static long a(long endNs) {
        long x = endNs | 1;
        do {
            for (int i = 0; i < WORK; i++) {
                x ^= x << 13; x ^= x >>> 7; x ^= x << 17;
            }
        } while (cpu() < endNs);
        return x;
    }

    static long b(long endNs) {
        long x = endNs | 3;
        do {
            for (int i = 0; i < WORK; i++) {
                x ^= x << 13; x ^= x >>> 7; x ^= x << 17;
            }
        } while (cpu() < endNs);
        return x;
    }

    public static void main(String[] args) {
        long durationNs = (long) (Double.parseDouble(args[0]) * 1e9);
        int percentA = Integer.parseInt(args[1]);
        long unitsA = 20L * percentA / 100;
        long start = cpu();
        long end = start;
        long x = 0;
        while (end - start < durationNs) {
            end += unitsA * UNIT_NS;
            x ^= a(end);
            end += (20 - unitsA) * UNIT_NS;
            x ^= b(end);
        }
        sink = x;
        System.out.println("done");
    }
}
