import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/**
 * A busy program to attach to (tests/tests/late_attach.rs). A worker thread
 * spins in Attachee.busyWork; main prints "ready" once it started, then
 * reads commands on stdin:
 *
 *   finish <ms>   let the worker use <ms> more milliseconds of its own CPU
 *                 (or wait 20 x <ms> of wall time, whichever comes first),
 *                 print "finished", exit 0. CPU, not wall time: on a busy
 *                 machine the worker may get a fraction of a CPU, and the
 *                 test counts the samples of its work.
 *   (end of input) exit 0 at once
 *
 * Whatever happens, it exits 0 once <max seconds> passed (a safety net for a
 * test that forgets it; the test's own deadline is shorter).
 *
 * Usage: java Attachee <max seconds>.
 */
public class Attachee {
    static volatile boolean stop;
    static volatile long sink;

    static long busyWork() {
        long x = 1;
        while (!stop) {
            for (int i = 0; i < 10_000; i++) {
                x ^= x << 13; x ^= x >>> 7; x ^= x << 17;
            }
        }
        return x;
    }

    /** Waits until `worker` used `ms` more milliseconds of CPU, or 20 x `ms` of wall time passed. */
    static void workFor(Thread worker, long ms) throws InterruptedException {
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        long start = threads.getThreadCpuTime(worker.getId());
        long deadline = System.nanoTime() + ms * 20_000_000L;
        while (threads.getThreadCpuTime(worker.getId()) - start < ms * 1_000_000L && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
    }

    public static void main(String[] args) throws Exception {
        long maxMs = (long) (Double.parseDouble(args[0]) * 1000);
        Thread worker = new Thread(() -> sink = busyWork(), "attachee-worker");
        worker.start();
        Thread safety = new Thread(() -> {
            try {
                Thread.sleep(maxMs);
            } catch (InterruptedException e) {
                return;
            }
            System.out.println("max duration reached");
            System.exit(0);
        }, "attachee-safety-net");
        safety.setDaemon(true);
        safety.start();
        System.out.println("ready");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            line = line.trim();
            if (line.startsWith("finish ")) {
                workFor(worker, Long.parseLong(line.substring(7).trim()));
                break;
            }
        }
        stop = true;
        worker.join();
        System.out.println("finished");
    }
}
