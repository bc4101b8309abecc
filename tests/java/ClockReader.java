import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/**
 * A busy thread that does nothing but read its own CPU clock
 * (tests/tests/cpu_accounted.rs): a thread that enters the kernel every
 * few hundred nanoseconds, like one polling a clock, a socket or a lock.
 * A sampling signal reaches such a thread on its way out of the same
 * system call, again and again, with the same registers each time; it is
 * running all the time nevertheless, and its CPU time must be accounted.
 *
 * Usage: java ClockReader <seconds>. At the end prints on stdout
 * busy_cpu_ns=<CPU time of the busy thread, from ThreadMXBean>.
 */
public class ClockReader {
    static final ThreadMXBean MX = ManagementFactory.getThreadMXBean();
    static volatile long busyCpuNs = -1;

    /** Reads the clock until it passes untilNs. */
    static long readClock(long untilNs) {
        long now;
        do {
            now = MX.getCurrentThreadCpuTime();
        } while (now < untilNs);
        return now;
    }

    /** The busy thread's body. */
    static void busy(long durationNs) {
        long start = System.nanoTime();
        while (System.nanoTime() - start < durationNs) {
            readClock(MX.getCurrentThreadCpuTime() + 10_000_000L);
        }
        busyCpuNs = MX.getCurrentThreadCpuTime();
    }

    public static void main(String[] args) throws Exception {
        long durationNs = (long) (Double.parseDouble(args[0]) * 1e9);
        Thread busy = new Thread(() -> busy(durationNs), "busy");
        busy.start();
        busy.join();
        System.out.println("busy_cpu_ns=" + busyCpuNs);
    }
}
