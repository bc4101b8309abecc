import java.util.SplittableRandom;

/**
 * A huge number of distinct calling contexts (tests/tests/stress_memory.rs):
 * <threads> threads each recurse <depth> levels for <seconds>, choosing at
 * every level one of four methods (two random bits each), and spin a few
 * microseconds at the bottom: about 4^depth different paths, so a profile
 * of calling contexts grows until its arena is full.
 *
 * Usage: java BranchyContexts <seconds> <threads> <depth>. Prints "ready"
 * once running and "paths=<n>" at the end.
 */
public class BranchyContexts {
    static volatile long sink;

    static long leaf(long x) {
        for (int i = 0; i < 300; i++) {
            x ^= x << 13; x ^= x >>> 7; x ^= x << 17;
        }
        return x;
    }

    static long step(int depth, long bits, long x) {
        if (depth == 0) {
            return leaf(x);
        }
        switch ((int) (bits & 3)) {
            case 0: return a(depth - 1, bits >>> 2, x);
            case 1: return b(depth - 1, bits >>> 2, x);
            case 2: return c(depth - 1, bits >>> 2, x);
            default: return d(depth - 1, bits >>> 2, x);
        }
    }

    static long a(int depth, long bits, long x) {
        return step(depth, bits, x + 1);
    }

    static long b(int depth, long bits, long x) {
        return step(depth, bits, x + 2);
    }

    static long c(int depth, long bits, long x) {
        return step(depth, bits, x + 3);
    }

    static long d(int depth, long bits, long x) {
        return step(depth, bits, x + 4);
    }

    static long run(long endNs, int depth, long seed) {
        SplittableRandom random = new SplittableRandom(seed);
        long paths = 0;
        long x = seed;
        while (System.nanoTime() < endNs) {
            for (int i = 0; i < 100; i++) {
                x = step(depth, random.nextLong(), x);
                paths++;
            }
        }
        sink = x;
        return paths;
    }

    public static void main(String[] args) throws Exception {
        long durationNs = (long) (Double.parseDouble(args[0]) * 1e9);
        int threads = Integer.parseInt(args[1]);
        int depth = Integer.parseInt(args[2]);
        long end = System.nanoTime() + durationNs;
        long[] paths = new long[threads];
        Thread[] workers = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            final int index = t;
            workers[t] = new Thread(() -> paths[index] = run(end, depth, 17 + index), "branchy-" + t);
            workers[t].start();
        }
        System.out.println("ready");
        System.out.flush();
        long total = 0;
        for (int t = 0; t < threads; t++) {
            workers[t].join();
            total += paths[t];
        }
        System.out.println("paths=" + total);
    }
}
