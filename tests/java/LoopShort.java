/**
 * A long-running loop in one method calling a short method many times
 * (tests/tests/marked_frames.rs), the PCCT paper's marked-frames example:
 * main -> LoopShort.loop (entered once, runs for the whole duration) ->
 * LoopShort.shortCall (called millions of times, each call a few
 * microseconds). The loop body and shortCall do the same amount of
 * arithmetic, so about half the samples land in each.
 *
 * The edge main -> loop is new in one sample only (the first); the edge
 * loop -> shortCall is new in every sample in shortCall whose previous
 * sample was in the loop body (about a quarter of all samples).
 *
 * Usage: java LoopShort <seconds of CPU>. Prints "done" at the end.
 */
public class LoopShort {
    static final int WORK = 2_000;
    static volatile long sink;

    static long shortCall(long x) {
        for (int i = 0; i < WORK; i++) {
            x ^= x << 13; x ^= x >>> 7; x ^= x << 17;
        }
        return x;
    }

    /** Runs until this thread has used durationNs of CPU (not of wall time:
     *  a loaded machine makes the run longer, not the profile smaller). */
    static long loop(long durationNs) {
        java.lang.management.ThreadMXBean clock = java.lang.management.ManagementFactory.getThreadMXBean();
        long start = clock.getCurrentThreadCpuTime();
        long x = 1;
        long y = 2;
        while (true) {
            for (int round = 0; round < 16; round++) {
                x = shortCall(x);
                for (int i = 0; i < WORK; i++) {
                    y ^= y << 13; y ^= y >>> 7; y ^= y << 17;
                }
            }
            if (clock.getCurrentThreadCpuTime() - start >= durationNs) return x ^ y;
        }
    }

    public static void main(String[] args) {
        double seconds = Double.parseDouble(args[0]);
        sink = loop((long) (seconds * 1e9));
        System.out.println("done");
    }
}
