import java.io.BufferedReader;
import java.io.InputStreamReader;

/**
 * A busy program to attach to (tests/tests/late_attach.rs). A worker thread
 * spins in Attachee.busyWork; main prints "ready" once it started, then
 * reads commands on stdin:
 *
 *   finish <ms>   keep working <ms> more milliseconds, print "finished", exit 0
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
                Thread.sleep(Long.parseLong(line.substring(7).trim()));
                break;
            }
        }
        stop = true;
        worker.join();
        System.out.println("finished");
    }
}
