import java.io.BufferedReader;
import java.io.InputStreamReader;

/**
 * A program that allocates and contends until its stdin is closed, for the
 * live HTTP tests of allocation and lock resources
 * (tests/tests/http_resources.rs).
 *
 * Threads:
 *   allocator  allocates byte[4096] arrays in EventTarget.allocate, kept in
 *              a ring so none is optimised away, about 1 ms of CPU at a time;
 *   holder     takes EventTarget$Gate's monitor and holds it 2 ms, again
 *              and again (with 1 ms between);
 *   waiter     enters the same monitor in EventTarget.waitAtGate, so it
 *              waits for the holder most of the time;
 *   main       reads stdin.
 *
 * Usage: java EventTarget [seconds]. Prints "ready" once the threads run;
 * at the end of input prints "done" and exits 0 (status 3 after <seconds>,
 * default 120, as a safety net).
 */
public class EventTarget {
    static final class Gate {}

    static final Gate GATE = new Gate();
    static final Object[] RING = new Object[1024];
    static volatile boolean stop;
    static volatile long sink;

    static void allocate() {
        for (int i = 0; i < 256; i++) {
            RING[i & (RING.length - 1)] = new byte[4096];
        }
    }

    static void waitAtGate() {
        synchronized (GATE) {
            sink++;
        }
    }

    static void hold() throws InterruptedException {
        synchronized (GATE) {
            Thread.sleep(2);
        }
        Thread.sleep(1);
    }

    static Thread start(String name, Runnable body) {
        Thread thread = new Thread(body, name);
        thread.setDaemon(true);
        thread.start();
        return thread;
    }

    public static void main(String[] args) throws Exception {
        long seconds = args.length > 0 ? Long.parseLong(args[0]) : 120;
        Thread safety = start("safety", () -> {
            try {
                Thread.sleep(seconds * 1000);
            } catch (InterruptedException e) {
                return;
            }
            System.exit(3);
        });
        start("allocator", () -> {
            while (!stop) {
                allocate();
            }
        });
        start("holder", () -> {
            try {
                while (!stop) {
                    hold();
                }
            } catch (InterruptedException e) {
                // stop
            }
        });
        start("waiter", () -> {
            while (!stop) {
                waitAtGate();
            }
        });
        System.out.println("ready");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        while (in.readLine() != null) {
            // any line: nothing to do
        }
        stop = true;
        safety.interrupt();
        System.out.println("done");
    }
}
