import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;

/**
 * An allocation storm on a small heap (tests/tests/stress_gc.rs): <threads>
 * threads allocate arrays and small object graphs for <seconds>, keeping a
 * window of them alive (about 24 MB in all) so that collections are
 * frequent and move live objects while the profiler samples.
 *
 * Usage: java -Xmx64m GcStorm <seconds> <threads>. Prints "allocated_mb=<n>"
 * and "collections=<n>" at the end; exits 1 if a worker failed.
 */
public class GcStorm {
    static volatile long sink;

    static final class Node {
        final Node next;
        final long[] payload;

        Node(Node next, int size) {
            this.next = next;
            this.payload = new long[size];
        }
    }

    static long storm(long endNs, int seed) {
        Object[] window = new Object[2_000];
        long bytes = 0;
        int i = seed;
        while (System.nanoTime() < endNs) {
            int slot = Math.floorMod(i * 7919, window.length);
            if ((i & 3) == 0) {
                Node chain = null;
                for (int k = 0; k < 16; k++) {
                    chain = new Node(chain, 4 + (k & 7));
                }
                window[slot] = chain;
                bytes += 16 * 96;
            } else {
                int size = 64 + Math.floorMod(i * 31, 8_000);
                window[slot] = new byte[size];
                bytes += size;
            }
            i++;
        }
        sink = window.length;
        return bytes;
    }

    public static void main(String[] args) throws Exception {
        long durationNs = (long) (Double.parseDouble(args[0]) * 1e9);
        int threads = Integer.parseInt(args[1]);
        long end = System.nanoTime() + durationNs;
        Thread.setDefaultUncaughtExceptionHandler((thread, error) -> {
            error.printStackTrace();
            Runtime.getRuntime().halt(1);
        });
        long[] bytes = new long[threads];
        Thread[] workers = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            final int index = t;
            workers[t] = new Thread(() -> bytes[index] = storm(end, index * 104_729), "storm-" + t);
            workers[t].start();
        }
        long total = 0;
        for (int t = 0; t < threads; t++) {
            workers[t].join();
            total += bytes[t];
        }
        long collections = 0;
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
            collections += Math.max(0, gc.getCollectionCount());
        }
        System.out.println("allocated_mb=" + (total >> 20));
        System.out.println("collections=" + collections);
    }
}
