import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/**
 * Ground truth for CPU attribution (tests/tests/ground_truth.rs and
 * cpu_accounted.rs).
 *
 * One busy thread ("busy") runs rounds of fixed CPU budgets, measured on
 * its own CPU clock (ThreadMXBean.getCurrentThreadCpuTime), in known
 * methods. Per round of 100 units (a unit is 0.5 ms of CPU):
 *
 *   heavy           40 units  (heavy's self time)
 *   medium          20 units  (medium's self time)
 *   light           10 units  (light's self time)
 *   viaA -> shared  20 units  (shared's self time, called from viaA)
 *   viaB -> shared  10 units  (shared's self time, called from viaB)
 *
 * so by construction the self CPU shares over {heavy, medium, light,
 * shared} are 40/20/10/30 %, and shared's two calling contexts split 2:1.
 * Phase ends are scheduled on the cumulative CPU clock (each phase runs
 * until the clock reaches the sum of all budgets so far), so a phase's
 * overshoot is taken from the next one and the long-run shares are exact.
 * Phases last 5-20 ms, far longer than the sampling interval.
 *
 * Every method spins on the same arithmetic and reads the clock every
 * <checkEvery> iterations (default 100000, about 150 us). Reading the
 * clock is a system call: a sampling signal sent to a running thread is
 * delivered at its next kernel entry (here about 20 us later, when the
 * interrupt arrives), so a thread making a system call every few
 * microseconds receives nearly every signal on the way out of that call.
 * A small checkEvery (2000, about 3 us) makes this program such a thread.
 *
 * Usage: java GroundTruth <seconds> [checkEvery]: the busy thread runs
 * rounds until they add up to <seconds> of its CPU time (not wall time: a
 * loaded machine makes the run longer, not the work smaller). At the end
 * prints on stdout busy_cpu_ns=<CPU time of the busy thread, from
 * ThreadMXBean>.
 */
public class GroundTruth implements Runnable {
    static final long UNIT_NS = 500_000L;
    static final ThreadMXBean MX = ManagementFactory.getThreadMXBean();
    static int checkEvery = 100_000;
    static volatile long sink;

    final long durationNs;
    volatile long busyCpuNs = -1;

    GroundTruth(long durationNs) {
        this.durationNs = durationNs;
    }

    static long cpu() {
        return MX.getCurrentThreadCpuTime();
    }

    /** Spins until this thread's CPU clock reaches endNs. */
    static long heavy(long endNs) {
        long x = endNs | 1;
        do {
            for (int i = 0; i < checkEvery; i++) {
                x ^= x << 13; x ^= x >>> 7; x ^= x << 17;
            }
        } while (cpu() < endNs);
        return x;
    }

    static long medium(long endNs) {
        long x = endNs | 3;
        do {
            for (int i = 0; i < checkEvery; i++) {
                x ^= x << 13; x ^= x >>> 7; x ^= x << 17;
            }
        } while (cpu() < endNs);
        return x;
    }

    static long light(long endNs) {
        long x = endNs | 5;
        do {
            for (int i = 0; i < checkEvery; i++) {
                x ^= x << 13; x ^= x >>> 7; x ^= x << 17;
            }
        } while (cpu() < endNs);
        return x;
    }

    static long shared(long endNs) {
        long x = endNs | 7;
        do {
            for (int i = 0; i < checkEvery; i++) {
                x ^= x << 13; x ^= x >>> 7; x ^= x << 17;
            }
        } while (cpu() < endNs);
        return x;
    }

    static long viaA(long endNs) {
        return shared(endNs);
    }

    static long viaB(long endNs) {
        return shared(endNs);
    }

    public void run() {
        long scheduled = cpu();
        long start = scheduled;
        long x = 0;
        while (scheduled - start < durationNs) {
            x += heavy(scheduled += 40 * UNIT_NS);
            x += medium(scheduled += 20 * UNIT_NS);
            x += light(scheduled += 10 * UNIT_NS);
            x += viaA(scheduled += 20 * UNIT_NS);
            x += viaB(scheduled += 10 * UNIT_NS);
        }
        sink = x;
        busyCpuNs = cpu();
    }

    public static void main(String[] args) throws Exception {
        double seconds = Double.parseDouble(args[0]);
        if (args.length > 1) {
            checkEvery = Integer.parseInt(args[1]);
        }
        GroundTruth task = new GroundTruth((long) (seconds * 1e9));
        Thread busy = new Thread(task, "busy");
        busy.start();
        busy.join();
        System.out.println("busy_cpu_ns=" + task.busyCpuNs);
    }
}
