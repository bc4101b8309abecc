import java.util.concurrent.CountDownLatch;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Ground truth for waits on java.util.concurrent locks
 * (tests/tests/park_truth.rs), as LockTruth.java is for monitors.
 *
 * Two ReentrantLocks, A and B. A holder thread takes one of them and
 * holds it (7 ms for A, 3 ms for B); once it holds it, the waiter thread
 * locks the same one from its own method (waitOnA or waitOnB) and parks
 * until the holder unlocks it. So every wait is a park on a lock, in a
 * known context, of a known nominal length. The waiter measures each wait
 * itself (System.nanoTime around lock()) and prints the sums, which are
 * the truth the profile is compared with.
 *
 * The two threads hand each cycle over with CountDownLatches: a latch's
 * await parks too, but on a CountDownLatch$Sync, which is not a lock and
 * must not be recorded as one.
 *
 * Usage: java ParkTruth <cycles>. Prints wait_a_ns=, wait_b_ns= and
 * cycles= at the end.
 */
public class ParkTruth {
    static final ReentrantLock A = new ReentrantLock();
    static final ReentrantLock B = new ReentrantLock();
    static volatile long sink;

    static long waitOnA() {
        long start = System.nanoTime();
        A.lock();
        long waited = System.nanoTime() - start;
        try {
            sink++;
        } finally {
            A.unlock();
        }
        return waited;
    }

    static long waitOnB() {
        long start = System.nanoTime();
        B.lock();
        long waited = System.nanoTime() - start;
        try {
            sink++;
        } finally {
            B.unlock();
        }
        return waited;
    }

    /** Holds `lock` for `millis` once the waiter may come; waits for it to be done. */
    static void hold(ReentrantLock lock, long millis, CountDownLatch held, CountDownLatch done)
            throws InterruptedException {
        lock.lock();
        try {
            held.countDown();
            // Until the waiter is parked on it (or the time is over).
            long until = System.nanoTime() + millis * 1_000_000L;
            while (!lock.hasQueuedThreads() && System.nanoTime() < until) {
                Thread.onSpinWait();
            }
            long left = until - System.nanoTime();
            if (left > 0) {
                Thread.sleep(left / 1_000_000L, (int) (left % 1_000_000L));
            }
        } finally {
            lock.unlock();
        }
        done.await();
    }

    public static void main(String[] args) throws Exception {
        int cycles = Integer.parseInt(args[0]);
        CountDownLatch[] heldA = new CountDownLatch[cycles];
        CountDownLatch[] heldB = new CountDownLatch[cycles];
        CountDownLatch[] doneA = new CountDownLatch[cycles];
        CountDownLatch[] doneB = new CountDownLatch[cycles];
        for (int cycle = 0; cycle < cycles; cycle++) {
            heldA[cycle] = new CountDownLatch(1);
            heldB[cycle] = new CountDownLatch(1);
            doneA[cycle] = new CountDownLatch(1);
            doneB[cycle] = new CountDownLatch(1);
        }
        Thread holder = new Thread(() -> {
            try {
                for (int cycle = 0; cycle < cycles; cycle++) {
                    hold(A, 7, heldA[cycle], doneA[cycle]);
                    hold(B, 3, heldB[cycle], doneB[cycle]);
                }
            } catch (InterruptedException e) {
                throw new RuntimeException(e);
            }
        }, "holder");
        long waitA = 0;
        long waitB = 0;
        holder.start();
        for (int cycle = 0; cycle < cycles; cycle++) {
            heldA[cycle].await();
            waitA += waitOnA();
            doneA[cycle].countDown();
            heldB[cycle].await();
            waitB += waitOnB();
            doneB[cycle].countDown();
        }
        holder.join();
        System.out.println("wait_a_ns=" + waitA);
        System.out.println("wait_b_ns=" + waitB);
        System.out.println("cycles=" + cycles);
    }
}
