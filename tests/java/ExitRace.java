import java.util.concurrent.CountDownLatch;

/**
 * VM exit races (tests/tests/stress_exit.rs). Busy worker threads (and a
 * thread that keeps starting short-lived threads) run while the JVM is
 * made to exit:
 *
 *   exit <ms> <code>  after <ms> milliseconds, 16 threads call
 *                     System.exit(<code>) at the same moment
 *   term              runs until the JVM is killed with SIGTERM (exit 143)
 *
 * Either way it exits 3 after <limit> seconds (a safety net, default 60;
 * tests pass a limit beyond their own deadline, which a soak run stretches).
 * Prints "ready" once the workers run.
 *
 * Usage: java ExitRace exit <ms> <code> [limit] | java ExitRace term [limit].
 */
public class ExitRace {
    static volatile long sink;

    static long work(long x) {
        for (int i = 0; i < 5_000; i++) {
            x ^= x << 13; x ^= x >>> 7; x ^= x << 17;
        }
        return x;
    }

    static void daemon(String name, Runnable body) {
        Thread t = new Thread(body, name);
        t.setDaemon(true);
        t.start();
    }

    public static void main(String[] args) throws Exception {
        int limitArg = args[0].equals("exit") ? 3 : 1;
        final long limitMs = args.length > limitArg ? (long) (Double.parseDouble(args[limitArg]) * 1000) : 60_000;
        for (int i = 0; i < 4; i++) {
            final long seed = i + 1;
            daemon("exit-worker-" + i, () -> {
                long x = seed;
                while (true) {
                    x = work(x);
                    sink = x;
                }
            });
        }
        daemon("exit-churner", () -> {
            long n = 0;
            while (true) {
                final long seed = n++;
                Thread t = new Thread(() -> sink ^= work(seed), "exit-short-" + n);
                t.setDaemon(true);
                t.start();
                try {
                    t.join();
                } catch (InterruptedException e) {
                    return;
                }
            }
        });
        daemon("exit-safety-net", () -> {
            try {
                Thread.sleep(limitMs);
            } catch (InterruptedException e) {
                return;
            }
            System.out.println("max duration reached");
            Runtime.getRuntime().halt(3);
        });
        System.out.println("ready");
        System.out.flush();
        if (args[0].equals("exit")) {
            long ms = Long.parseLong(args[1]);
            int code = Integer.parseInt(args[2]);
            CountDownLatch go = new CountDownLatch(1);
            for (int i = 0; i < 16; i++) {
                daemon("exit-caller-" + i, () -> {
                    try {
                        go.await();
                    } catch (InterruptedException e) {
                        return;
                    }
                    System.exit(code);
                });
            }
            Thread.sleep(ms);
            go.countDown();
        }
        Thread.sleep(Long.MAX_VALUE);
    }
}
