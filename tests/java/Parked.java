import java.util.concurrent.locks.LockSupport;

/**
 * One thread parked forever with LockSupport.park (in Parked.parkForever,
 * a daemon thread) beside a busy thread (tests/tests/parked.rs). With the
 * CPU-clock prefilter off, the parked thread is signalled at every tick and
 * its register checksum must filter it: it has not run.
 *
 * Usage: java Parked <seconds> (of the busy thread's CPU). Prints "done"
 * at the end.
 */
public class Parked {
    static volatile long sink;

    static void parkForever() {
        while (true) {
            LockSupport.park();
        }
    }

    /** Spins for durationNs of this thread's CPU time (not wall time: a
     *  loaded machine makes the run longer, not the work smaller). */
    static long spin(long durationNs) {
        java.lang.management.ThreadMXBean mx = java.lang.management.ManagementFactory.getThreadMXBean();
        long start = mx.getCurrentThreadCpuTime();
        long x = 1;
        while (mx.getCurrentThreadCpuTime() - start < durationNs) {
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
