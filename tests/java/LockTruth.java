import java.util.concurrent.Semaphore;

/**
 * Ground truth for monitor contention (tests/tests/lock_truth.rs).
 *
 * Two monitors, of classes LockTruth$MonitorA and LockTruth$MonitorB. A
 * holder thread takes one of them and holds it (7 ms for A, 3 ms for B);
 * once it holds it, the waiter thread enters the same monitor from its
 * own method (waitOnA or waitOnB) and blocks until the holder lets go. So
 * every wait is a contended enter, in a known context, on a known
 * monitor, of a known nominal length. The waiter measures each wait
 * itself (System.nanoTime around the synchronized block) and prints the
 * sums, which are the truth the profile is compared with (a loaded
 * machine makes the holds longer, and then the measured waits too).
 *
 * Usage: java LockTruth <cycles>. Each cycle is one wait on A and one on B.
 * Prints wait_a_ns=, wait_b_ns= and cycles= at the end.
 */
public class LockTruth {
    static final class MonitorA {}

    static final class MonitorB {}

    static final MonitorA A = new MonitorA();
    static final MonitorB B = new MonitorB();
    static volatile long sink;

    /** Released by the holder once it holds the monitor; by the waiter once it got it. */
    static final Semaphore held = new Semaphore(0);
    static final Semaphore done = new Semaphore(0);

    static void waitOnA() {
        synchronized (A) {
            sink++;
        }
    }

    static void waitOnB() {
        synchronized (B) {
            sink++;
        }
    }

    static void hold(Object monitor, long millis) throws InterruptedException {
        synchronized (monitor) {
            held.release();
            Thread.sleep(millis);
        }
        done.acquire();
    }

    public static void main(String[] args) throws Exception {
        int cycles = Integer.parseInt(args[0]);
        Thread holder = new Thread(() -> {
            try {
                for (int cycle = 0; cycle < cycles; cycle++) {
                    hold(A, 7);
                    hold(B, 3);
                }
            } catch (InterruptedException e) {
                throw new RuntimeException(e);
            }
        }, "holder");
        long waitA = 0;
        long waitB = 0;
        holder.start();
        for (int cycle = 0; cycle < cycles; cycle++) {
            held.acquire();
            long start = System.nanoTime();
            waitOnA();
            waitA += System.nanoTime() - start;
            done.release();
            held.acquire();
            start = System.nanoTime();
            waitOnB();
            waitB += System.nanoTime() - start;
            done.release();
        }
        holder.join();
        System.out.println("wait_a_ns=" + waitA);
        System.out.println("wait_b_ns=" + waitB);
        System.out.println("cycles=" + cycles);
    }
}
