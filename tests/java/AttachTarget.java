import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/**
 * A loaded program to attach to (tests/tests/stress_attach.rs): <workers>
 * busy threads and a thread that keeps starting short-lived threads. Prints
 * "ready", then reads commands on stdin:
 *
 *   finish <ms>                  work <ms> more milliseconds, print "finished", exit 0
 *   finish-cpu <ms>              the same once the workers used <ms> more CPU
 *                                together (however loaded the machine)
 *   exit <code> <hook ms>        System.exit(<code>) now; a shutdown hook
 *                                keeps the VM exiting for <hook ms> while the
 *                                workers still run
 *   (end of input)               exit 0
 *
 * Exits 3 after <max seconds> whatever happens (a safety net).
 *
 * Usage: java AttachTarget <max seconds> <workers>.
 */
public class AttachTarget {
    static volatile boolean stop;
    static volatile long sink;

    static long busyWork(long x) {
        for (int i = 0; i < 10_000; i++) {
            x ^= x << 13; x ^= x >>> 7; x ^= x << 17;
        }
        return x;
    }

    /** CPU time the threads used so far, nanoseconds. */
    @SuppressWarnings("deprecation") // Thread.getId: threadId() is JDK 19+
    static long cpuNs(ThreadMXBean mx, Thread[] threads) {
        long sum = 0;
        for (Thread t : threads) {
            sum += Math.max(0, mx.getThreadCpuTime(t.getId()));
        }
        return sum;
    }

    static void daemon(String name, Runnable body) {
        Thread t = new Thread(body, name);
        t.setDaemon(true);
        t.start();
    }

    public static void main(String[] args) throws Exception {
        long maxMs = (long) (Double.parseDouble(args[0]) * 1000);
        int workers = Integer.parseInt(args[1]);
        Thread[] threads = new Thread[workers];
        for (int i = 0; i < workers; i++) {
            final long seed = i + 1;
            threads[i] = new Thread(() -> {
                long x = seed;
                while (!stop) {
                    x = busyWork(x);
                }
                sink = x;
            }, "attach-worker-" + i);
            threads[i].setDaemon(true);
            threads[i].start();
        }
        daemon("attach-churner", () -> {
            long n = 0;
            while (!stop) {
                final long seed = n++;
                Thread t = new Thread(() -> sink ^= busyWork(seed), "attach-short");
                t.start();
                try {
                    t.join();
                } catch (InterruptedException e) {
                    return;
                }
            }
        });
        daemon("attach-safety-net", () -> {
            try {
                Thread.sleep(maxMs);
            } catch (InterruptedException e) {
                return;
            }
            System.out.println("max duration reached");
            Runtime.getRuntime().halt(3);
        });
        System.out.println("ready");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            String[] words = line.trim().split("\\s+");
            if (words[0].equals("finish")) {
                Thread.sleep(Long.parseLong(words[1]));
                break;
            }
            if (words[0].equals("finish-cpu")) {
                ThreadMXBean mx = ManagementFactory.getThreadMXBean();
                long until = cpuNs(mx, threads) + Long.parseLong(words[1]) * 1_000_000L;
                while (cpuNs(mx, threads) < until) {
                    Thread.sleep(10);
                }
                break;
            }
            if (words[0].equals("exit")) {
                int code = Integer.parseInt(words[1]);
                long hookMs = Long.parseLong(words[2]);
                Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                    try {
                        Thread.sleep(hookMs);
                    } catch (InterruptedException e) {
                        // exit anyway
                    }
                }, "attach-slow-hook"));
                System.out.println("exiting");
                System.out.flush();
                System.exit(code);
            }
        }
        stop = true;
        for (Thread t : threads) {
            t.join();
        }
        System.out.println("finished");
    }
}
