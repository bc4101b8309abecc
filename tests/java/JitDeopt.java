import java.io.BufferedReader;
import java.io.InputStreamReader;

/**
 * A hot call that C2 inlines by class-hierarchy analysis, then a class
 * loaded that breaks it: HotSpot makes the caller's code not entrant (a
 * deoptimization), for tests/tests/jit_events.rs.
 *
 * Shape is abstract and, until "load", Square is its only subclass: in
 * JitDeopt.total, the call shape.area() has one possible target, so C2
 * inlines Square.area with a dependency on that (no type check). The test
 * runs with -XX:CompileCommand=dontinline,JitDeopt::total, so total has
 * code of its own (not only inlined into its caller's), and with
 * -XX:-UseOnStackReplacement, so that code is its only code.
 *
 * stdin: "load" loads Circle, a second subclass of Shape: HotSpot flushes
 * the code that depended on Square being the only one (total's), then the
 * program prints "loaded" and stops calling total (so total is not compiled
 * again meanwhile). End of input: prints "done" and exits 0; as a safety
 * net it exits with status 3 after <seconds> (default 120).
 *
 * Usage: java JitDeopt [seconds]. Prints "ready" once running.
 */
public class JitDeopt {
    abstract static class Shape {
        abstract long area(long x);
    }

    static final class Square extends Shape {
        @Override
        long area(long x) {
            for (int i = 0; i < 64; i++) {
                x ^= x << 13;
                x ^= x >>> 7;
                x ^= x << 17;
            }
            return x;
        }
    }

    static final class Circle extends Shape {
        @Override
        long area(long x) {
            return x * 3;
        }
    }

    static volatile boolean calling = true;
    static volatile boolean stop;
    static volatile long sink;

    static long total(Shape[] shapes, long x) {
        for (Shape shape : shapes) {
            x = shape.area(x);
        }
        return x;
    }

    static void busy() {
        Shape[] shapes = new Shape[256];
        for (int i = 0; i < shapes.length; i++) {
            shapes[i] = new Square();
        }
        long x = 1;
        while (!stop) {
            if (calling) {
                x = total(shapes, x);
            } else {
                try {
                    Thread.sleep(10);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }
        sink = x;
    }

    public static void main(String[] args) throws Exception {
        long seconds = args.length > 0 ? Long.parseLong(args[0]) : 120;
        Thread safety = new Thread(() -> {
            try {
                Thread.sleep(seconds * 1000);
            } catch (InterruptedException e) {
                return;
            }
            System.out.println("timed out");
            System.exit(3);
        }, "safety");
        safety.setDaemon(true);
        safety.start();
        Thread worker = new Thread(JitDeopt::busy, "busy");
        worker.start();
        System.out.println("ready");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.trim().equals("load")) {
                calling = false;
                Class.forName("JitDeopt$Circle");
                System.out.println("loaded");
                System.out.flush();
            }
        }
        stop = true;
        worker.join();
        System.out.println("done");
        System.out.flush();
    }
}
