import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.concurrent.locks.LockSupport;

/**
 * A program for the live HTTP tests (tests/tests/http_*.rs): it runs until
 * its stdin is closed, so a test queries the agent for as long as it needs
 * and then lets the JVM exit normally.
 *
 * Threads:
 *   busy    spins in phase one: LiveTarget.alpha (3 parts of its CPU) and
 *           LiveTarget.gamma (1 part); after "switch" on stdin, in phase
 *           two: LiveTarget.beta (3 parts) and gamma (1 part). Chunks are
 *           about 1 ms of spinning.
 *   parked  a daemon thread parked forever in LiveTarget.parkForever (it
 *           never runs: with prefilter=off its samples are filtered by the
 *           register checksum).
 *   main    reads stdin.
 *
 * stdin: "switch" moves the busy thread to phase two; the busy thread
 * prints "switched" on stdout just before its first call of beta. End of input
 * stops the busy thread; the program prints "done" and exits 0. As a
 * safety net it exits with status 3 after <seconds> (default 120).
 *
 * Usage: java LiveTarget [seconds]. Prints "ready" once both threads run.
 */
public class LiveTarget {
    static volatile boolean phaseTwo;
    static volatile boolean stop;
    static volatile long sink;

    static void parkForever() {
        while (true) {
            LockSupport.park();
        }
    }

    // Each method spins in its own loop (no shared helper: an inlined
    // helper would be the leaf frame of every sample).
    static long alpha(long x) {
        for (int i = 0; i < 1_200_000; i++) {
            x ^= x << 13; x ^= x >>> 7; x ^= x << 17;
        }
        return x;
    }

    static long beta(long x) {
        x |= 1;
        for (int i = 0; i < 1_200_000; i++) {
            x ^= x << 13; x ^= x >>> 7; x ^= x << 17;
        }
        return x;
    }

    static long gamma(long x) {
        x |= 3;
        for (int i = 0; i < 400_000; i++) {
            x ^= x << 13; x ^= x >>> 7; x ^= x << 17;
        }
        return x;
    }

    static void busy() {
        long x = 1;
        boolean announced = false;
        while (!stop) {
            if (phaseTwo) {
                if (!announced) {
                    announced = true;
                    System.out.println("switched");
                    System.out.flush();
                }
                x = beta(x);
            } else {
                x = alpha(x);
            }
            x = gamma(x);
        }
        sink = x;
    }

    public static void main(String[] args) throws Exception {
        long seconds = args.length > 0 ? Long.parseLong(args[0]) : 120;
        Thread parked = new Thread(LiveTarget::parkForever, "parked");
        parked.setDaemon(true);
        parked.start();
        Thread busy = new Thread(LiveTarget::busy, "busy");
        busy.start();
        Thread timeout = new Thread(() -> {
            try {
                Thread.sleep(seconds * 1000);
            } catch (InterruptedException e) {
                return;
            }
            System.out.println("timeout");
            System.exit(3);
        }, "timeout");
        timeout.setDaemon(true);
        timeout.start();
        System.out.println("ready");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while (!stop && (line = in.readLine()) != null) {
            if (line.trim().equals("switch")) {
                phaseTwo = true;
            }
        }
        stop = true;
        busy.join();
        System.out.println("done");
    }
}
