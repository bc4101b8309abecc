/**
 * One busy thread at a deep stack: the cost benchmark of the sampler thread
 * (BENCHMARKS.md, "The sampler thread in batches"). The main thread recurses
 * to <depth> frames and spins there for <seconds> of wall time, so that every
 * sample sees the same deep stack with a moving leaf, the case where the
 * sampler's per-sample work is least and its wake-ups weigh most.
 *
 * Usage: java BusyDeep <seconds> <depth>. Prints "sink=<n>" at the end.
 */
public class BusyDeep {
    static volatile long sink;

    static long spin(long endNanos) {
        long x = 7;
        while (System.nanoTime() < endNanos) {
            for (int i = 0; i < 10_000; i++) {
                x ^= x << 13;
                x ^= x >>> 7;
                x ^= x << 17;
            }
            sink += x;
        }
        return x;
    }

    static long down(int left, long endNanos) {
        if (left <= 0) {
            return spin(endNanos);
        }
        return down(left - 1, endNanos) + 1;
    }

    public static void main(String[] args) {
        double seconds = Double.parseDouble(args[0]);
        int depth = Integer.parseInt(args[1]);
        long end = System.nanoTime() + (long) (seconds * 1e9);
        // Below main: the launcher's frame; each level of down() is one frame.
        System.out.println("sink=" + down(depth - 2, end));
    }
}
