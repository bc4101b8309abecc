import java.util.concurrent.locks.LockSupport;

/**
 * One thread parked forever with LockSupport.park (in Parked.parkForever,
 * a daemon thread) beside a busy thread (tests/tests/parked.rs). With the
 * CPU-clock prefilter off, the parked thread is signalled at every tick and
 * its register checksum must filter it: it has not run.
 *
 * Usage: java Parked <seconds>. Prints "done" at the end.
 */
public class Parked {
    static volatile long sink;

    static void parkForever() {
        while (true) {
            LockSupport.park();
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
        Thread parked = new Thread(Parked::parkForever, "parked");
        parked.setDaemon(true);
        parked.start();
        Thread busy = new Thread(() -> sink = spin((long) (seconds * 1e9)), "busy");
        busy.start();
        busy.join();
        System.out.println("done");
    }
}
