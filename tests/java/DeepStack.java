/**
 * Deep stacks (tests/tests/stress_stack.rs): alternates, for <seconds>,
 * between
 *  - recursing until a StackOverflowError, which it catches ("overflows"),
 *  - recursing to <depth> frames and spinning at the bottom for a few
 *    milliseconds, so that samples see stacks deeper than the profiler's
 *    configured depth ("deep").
 *
 * Usage: java DeepStack <seconds> <depth>. Prints "overflows=<n>" and
 * "deep=<n>" at the end.
 */
public class DeepStack {
    static volatile long sink;

    static long overflow(long n) {
        return overflow(n + 1) + 1;
    }

    static long spin(long ns) {
        long end = System.nanoTime() + ns;
        long x = 7;
        while (System.nanoTime() < end) {
            for (int i = 0; i < 1_000; i++) {
                x ^= x << 13; x ^= x >>> 7; x ^= x << 17;
            }
        }
        return x;
    }

    static long deep(int depth) {
        if (depth == 0) {
            return spin(3_000_000);
        }
        return deep(depth - 1) + 1;
    }

    public static void main(String[] args) {
        long durationNs = (long) (Double.parseDouble(args[0]) * 1e9);
        int depth = Integer.parseInt(args[1]);
        long start = System.nanoTime();
        long overflows = 0;
        long deeps = 0;
        while (System.nanoTime() - start < durationNs) {
            try {
                sink = overflow(0);
            } catch (StackOverflowError expected) {
                overflows++;
            }
            for (int i = 0; i < 5; i++) {
                sink = deep(depth);
                deeps++;
            }
        }
        System.out.println("overflows=" + overflows);
        System.out.println("deep=" + deeps);
    }
}
