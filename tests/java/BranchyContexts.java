import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.util.SplittableRandom;
import java.util.function.LongUnaryOperator;

/**
 * A huge number of distinct calling contexts (tests/tests/stress_memory.rs):
 * <threads> threads each recurse <depth> levels for <seconds>, choosing at
 * every level one of four methods (two random bits each), and spin a few
 * microseconds at the bottom: about 4^depth different paths, so a profile
 * of calling contexts grows until its arena is full.
 *
 * With <generate> = yes, one more thread generates classes for as long
 * (and at least MIN_CLASSES of them):
 * each is Gen0000000 (below) with the digits in its name and its method's
 * name replaced by a counter, defined in a throwaway class loader and run
 * for about a millisecond, so new method names, jmethodIDs and contexts
 * keep coming (and old classes are unloaded).
 *
 * Usage: java BranchyContexts <seconds> <threads> <depth> [generate], where
 * <seconds> is wall time, "cpu:<s>": each worker runs until it has used
 * that much CPU itself (however long a loaded machine makes that take), or
 * "<wall>,cpu:<s>": until both hold; the generator runs as long as the
 * workers.
 * Prints "ready" once running, "paths=<n>" and "generated=<n>" at the end.
 */
public class BranchyContexts {
    static volatile long sink;
    /** Set once every worker finished: the generator stops. */
    static volatile boolean workersDone;
    static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
    /** Classes defined between two collections that unload them. */
    static final int GC_EVERY = 200;
    /** Classes defined at least, however slow the machine: two runs then
     *  load comparable numbers of classes. */
    static final int MIN_CLASSES = 1000;

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

    /** Whether a worker is done: past `endNs`, and past `cpuNs` of its own CPU time (when not 0). */
    static boolean done(long endNs, long cpuNs) {
        return System.nanoTime() >= endNs && (cpuNs == 0 || THREADS.getCurrentThreadCpuTime() >= cpuNs);
    }

    /** The CPU ("cpu:<s>") or the wall part of a duration, in nanoseconds (0 when absent). */
    static long nanosOf(String duration, boolean cpu) {
        long nanos = 0;
        for (String part : duration.split(",")) {
            if (part.startsWith("cpu:") == cpu) {
                nanos = (long) (Double.parseDouble(cpu ? part.substring(4) : part) * 1e9);
            }
        }
        return nanos;
    }

    static long run(long endNs, long cpuNs, int depth, long seed) {
        SplittableRandom random = new SplittableRandom(seed);
        long paths = 0;
        long x = seed;
        while (!done(endNs, cpuNs)) {
            for (int i = 0; i < 100; i++) {
                x = step(depth, random.nextLong(), x);
                paths++;
            }
        }
        sink = x;
        return paths;
    }

    static final class Throwaway extends ClassLoader {
        Throwaway() {
            super(BranchyContexts.class.getClassLoader());
        }

        Class<?> define(String name, byte[] bytes) {
            return defineClass(name, bytes, 0, bytes.length);
        }
    }

    /** Replaces every occurrence of `from` by `to` (same length) in `bytes`. */
    static byte[] patched(byte[] bytes, byte[] from, byte[] to) {
        byte[] out = bytes.clone();
        for (int i = 0; i + from.length <= out.length; i++) {
            boolean match = true;
            for (int j = 0; j < from.length && match; j++) {
                match = out[i + j] == from[j];
            }
            if (match) {
                System.arraycopy(to, 0, out, i, to.length);
            }
        }
        return out;
    }

    static long generate() throws Exception {
        byte[] template;
        try (InputStream in = BranchyContexts.class.getResourceAsStream("/Gen0000000.class")) {
            template = in.readAllBytes();
        }
        byte[] token = "0000000".getBytes(StandardCharsets.US_ASCII);
        long count = 0;
        long x = 7;
        while (!workersDone || count < MIN_CLASSES) {
            count++;
            String digits = String.format("%07d", count % 10_000_000);
            byte[] bytes = patched(template, token, digits.getBytes(StandardCharsets.US_ASCII));
            Class<?> c = new Throwaway().define("Gen" + digits, bytes);
            LongUnaryOperator op = (LongUnaryOperator) c.getDeclaredConstructor().newInstance();
            long until = System.nanoTime() + 1_000_000;
            while (System.nanoTime() < until) {
                x = op.applyAsLong(x);
            }
            // Unload every few hundred classes: the classes alive at once
            // (and so the metaspace's peak) then do not depend on how many
            // a run managed to define, which varies with the machine's load
            // (stress_memory compares two runs' peak memory).
            if (count % GC_EVERY == 0) {
                System.gc();
            }
        }
        sink = x;
        return count;
    }

    public static void main(String[] args) throws Exception {
        long wallNs = nanosOf(args[0], false);
        long cpuNs = nanosOf(args[0], true);
        int threads = Integer.parseInt(args[1]);
        int depth = Integer.parseInt(args[2]);
        boolean generate = args.length > 3 && args[3].equals("yes");
        long end = System.nanoTime() + wallNs;
        long[] generated = new long[1];
        Thread generator = new Thread(() -> {
            try {
                generated[0] = generate();
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        }, "generator");
        if (generate) {
            generator.start();
        }
        long[] paths = new long[threads];
        Thread[] workers = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            final int index = t;
            workers[t] = new Thread(() -> paths[index] = run(end, cpuNs, depth, 17 + index), "branchy-" + t);
            workers[t].start();
        }
        System.out.println("ready");
        System.out.flush();
        long total = 0;
        for (int t = 0; t < threads; t++) {
            workers[t].join();
            total += paths[t];
        }
        workersDone = true;
        if (generate) {
            generator.join();
        }
        System.out.println("paths=" + total);
        System.out.println("generated=" + generated[0]);
    }
}

