import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/**
 * Two virtual call sites with three receiver types each, for the JIT
 * advice's receiver rule (tests/tests/jit_advice.rs).
 *
 * {@code even} calls {@code Step.apply} on A, B and C in turn: a third of
 * its calls each, a megamorphic site where C2 inlines no receiver, and no
 * compiler directive makes it. {@code major} calls A 38 times in 40 (95 %),
 * B and C once each: C2 can inline A behind a type check
 * (TypeProfileMajorReceiverPercent, 90 by default; the program stays clear
 * of the threshold, where neither C2's counts nor samples can say which
 * side a site is on). Every {@code apply} is too big for C2 to inline on
 * its own ("hot method too big") and costs the same, so a receiver's share
 * of the samples is its share of the calls.
 *
 * Usage: java JitReceivers <seconds of CPU> [--until-eof]
 * Prints "ready" after the first round and "done <rounds>" at the end (with
 * --until-eof, when stdin is closed; after its seconds it then exits with
 * status 3).
 */
public class JitReceivers {
    static volatile boolean stop;
    static volatile double sink;

    interface Step {
        double apply(double x);
    }

    /** Receiver A: {@code apply} has over 500 bytes of bytecode, over C2's FreqInlineSize. */
    static final class A implements Step {
        public double apply(double x) {
            double y = x * 1.0000001 + 1.0;
            y = y * 1.0000001 + 0.2; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000002 + 0.9; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000003 + 0.7; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000004 + 0.5; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000005 + 0.3; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000006 + 0.1; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000007 + 0.8; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000008 + 0.6; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000009 + 0.4; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000010 + 0.2; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000011 + 0.9; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000012 + 0.7; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000013 + 0.5; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000014 + 0.3; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000015 + 0.1; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000016 + 0.8; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000017 + 0.6; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000018 + 0.4; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000019 + 0.2; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000020 + 0.9; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000021 + 0.7; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000022 + 0.5; if (y > 1.0e6) y -= 1.0e6;
            return y;
        }
    }

    /** Receiver B: {@code apply} has over 500 bytes of bytecode, over C2's FreqInlineSize. */
    static final class B implements Step {
        public double apply(double x) {
            double y = x * 1.0000001 + 2.0;
            y = y * 1.0000002 + 0.3; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000003 + 0.1; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000004 + 0.8; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000005 + 0.6; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000006 + 0.4; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000007 + 0.2; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000008 + 0.9; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000009 + 0.7; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000010 + 0.5; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000011 + 0.3; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000012 + 0.1; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000013 + 0.8; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000014 + 0.6; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000015 + 0.4; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000016 + 0.2; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000017 + 0.9; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000018 + 0.7; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000019 + 0.5; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000020 + 0.3; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000021 + 0.1; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000022 + 0.8; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000023 + 0.6; if (y > 1.0e6) y -= 1.0e6;
            return y;
        }
    }

    /** Receiver C: {@code apply} has over 500 bytes of bytecode, over C2's FreqInlineSize. */
    static final class C implements Step {
        public double apply(double x) {
            double y = x * 1.0000001 + 3.0;
            y = y * 1.0000003 + 0.4; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000004 + 0.2; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000005 + 0.9; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000006 + 0.7; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000007 + 0.5; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000008 + 0.3; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000009 + 0.1; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000010 + 0.8; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000011 + 0.6; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000012 + 0.4; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000013 + 0.2; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000014 + 0.9; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000015 + 0.7; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000016 + 0.5; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000017 + 0.3; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000018 + 0.1; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000019 + 0.8; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000020 + 0.6; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000021 + 0.4; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000022 + 0.2; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000023 + 0.9; if (y > 1.0e6) y -= 1.0e6;
            y = y * 1.0000024 + 0.7; if (y > 1.0e6) y -= 1.0e6;
            return y;
        }
    }

    static final Step[] EVEN = {new A(), new B(), new C()};
    static final Step[] MAJOR = new Step[40];

    static {
        for (int i = 0; i < MAJOR.length; i++) {
            MAJOR[i] = i == 13 ? new B() : i == 27 ? new C() : new A();
        }
    }

    /** The megamorphic site: A, B and C a third each. */
    static double even(double x, int n) {
        for (int i = 0; i < n; i++) {
            x = EVEN[i % 3].apply(x);
        }
        return x;
    }

    /** The site with a major receiver: A in 95 % of the calls. */
    static double major(double x, int n) {
        for (int i = 0; i < n; i++) {
            x = MAJOR[i % 40].apply(x);
        }
        return x;
    }

    static void work(long budgetNs) {
        ThreadMXBean clock = ManagementFactory.getThreadMXBean();
        long start = clock.getCurrentThreadCpuTime();
        double x = 1.0;
        long rounds = 0;
        x = major(even(x, 120_000), 120_000);
        System.out.println("ready");
        while (!stop && clock.getCurrentThreadCpuTime() - start < budgetNs) {
            x = major(even(x, 120_000), 120_000);
            rounds++;
        }
        sink = x;
        System.out.println("done " + rounds);
    }

    public static void main(String[] args) throws Exception {
        long budgetNs = (long) (Double.parseDouble(args[0]) * 1e9);
        boolean untilEof = args.length > 1 && args[1].equals("--until-eof");
        Thread worker = new Thread(() -> work(budgetNs), "worker");
        worker.start();
        if (untilEof) {
            Thread reader = new Thread(() -> {
                try {
                    while (System.in.read() >= 0) {
                        // Wait for the end of input.
                    }
                } catch (java.io.IOException e) {
                    // As the end of input.
                }
                stop = true;
            }, "stdin");
            reader.setDaemon(true);
            reader.start();
        }
        worker.join();
        if (untilEof && !stop) {
            System.exit(3);
        }
    }
}
