/**
 * 100 sleeping threads beside one busy thread (tests/tests/sleepers.rs).
 *
 * Each sleeper makes one long Thread.sleep in Sleepers.sleepLong (daemon
 * threads, so the JVM exits when main returns): once asleep it uses no CPU
 * at all, so in cpu mode it must never be sampled; in wall mode it must be.
 * Sleeper i calls sleepLong through i frames of Sleepers.descend, so each
 * sleeper is a calling context of its own and a profile can be checked
 * thread by thread.
 * The busy thread spins in Sleepers.spin for the given duration.
 *
 * Usage: java Sleepers <seconds>. Prints "sleepers=100" once all sleepers
 * started and "done" at the end.
 */
public class Sleepers {
    static final int SLEEPERS = 100;
    static volatile long sink;

    static void sleepLong() {
        try {
            Thread.sleep(3_600_000L);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** sleepLong, depth frames of descend below. */
    static void descend(int depth) {
        if (depth == 0) {
            sleepLong();
        } else {
            descend(depth - 1);
        }
    }

    static long spin(long durationNs) {
        long start = System.nanoTime();
        long x = 1;
        while (System.nanoTime() - start < durationNs) {
            for (int i = 0; i < 10_000; i++) {
                x ^= x << 13; x ^= x >>> 7; x ^= x << 17;
            }
        }
        return x;
    }

    public static void main(String[] args) throws Exception {
        double seconds = Double.parseDouble(args[0]);
        // Load and link the sleep path here, so a sleeper uses next to no
        // CPU between its start and its sleep.
        Thread.sleep(1);
        for (int i = 0; i < SLEEPERS; i++) {
            int depth = i;
            Thread sleeper = new Thread(() -> descend(depth), "sleeper-" + i);
            sleeper.setDaemon(true);
            sleeper.start();
        }
        System.out.println("sleepers=" + SLEEPERS);
        Thread busy = new Thread(() -> sink = spin((long) (seconds * 1e9)), "busy");
        busy.start();
        busy.join();
        System.out.println("done");
    }
}
