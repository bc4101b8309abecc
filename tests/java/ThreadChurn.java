/**
 * Thread churn (tests/tests/stress_threads.rs, tests/tests/signal_stray.rs):
 * starts <threads> short-lived threads, <concurrency> at a time, each doing
 * a few microseconds of work, while one long-lived thread keeps a core busy
 * (so there is always something to sample); stops early after <max seconds>.
 * Thread ids are reused by the kernel as the threads come and go (pid_max
 * is often 32768).
 *
 * Usage: java ThreadChurn <threads> <concurrency> <max seconds>. Prints
 * "ready" once churning, and "threads=<n>" (the number started) at the end.
 */
public class ThreadChurn {
    static volatile long sink;
    static volatile boolean stop;

    static long shortWork(long x) {
        for (int i = 0; i < 2_000; i++) {
            x ^= x << 13; x ^= x >>> 7; x ^= x << 17;
        }
        return x;
    }

    static long steadyWork() {
        long x = 3;
        while (!stop) {
            x = shortWork(x);
        }
        return x;
    }

    public static void main(String[] args) throws Exception {
        long wanted = Long.parseLong(args[0]);
        int concurrency = Integer.parseInt(args[1]);
        long durationNs = (long) (Double.parseDouble(args[2]) * 1e9);
        Thread steady = new Thread(() -> sink = steadyWork(), "churn-steady");
        steady.start();
        long start = System.nanoTime();
        long threads = 0;
        Thread[] batch = new Thread[concurrency];
        System.out.println("ready");
        System.out.flush();
        while (threads < wanted && System.nanoTime() - start < durationNs) {
            for (int i = 0; i < concurrency; i++) {
                final long seed = threads + i;
                batch[i] = new Thread(() -> sink ^= shortWork(seed), "churn-" + (threads + i));
                batch[i].start();
            }
            for (int i = 0; i < concurrency; i++) {
                batch[i].join();
            }
            threads += concurrency;
        }
        stop = true;
        steady.join();
        System.out.println("threads=" + threads);
    }
}
