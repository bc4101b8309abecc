import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/**
 * A hot call HotSpot does not inline, and one it does, for the JIT feedback
 * tests (tests/tests/jit_advice.rs) and the experiment in BENCHMARKS.md
 * (benches/jvm/jit_feedback.py).
 *
 * The worker computes Mandelbrot escape counts, z = z * z + c, with complex
 * numbers as objects. Complex.times follows C99 Annex G's rules for
 * infinities and NaNs, which makes it 407 bytes of bytecode: over C2's
 * FreqInlineSize (325), so C2 does not inline it ("hot method too big"),
 * every product is a call, and every Complex escapes and is allocated.
 * Complex.plus is small and inlined. With times inlined (a compiler
 * directive), escape analysis removes the allocations: the loop runs about
 * twice as fast.
 *
 * Every round computes the same 64 x 64 grid; its checksum must equal the
 * first round's (the program checks that recompiled code computes what the
 * interpreter did, and exits 1 with "WRONG" when not).
 *
 * Usage: java JitAdvice <seconds of CPU> [--until-eof]
 * Prints "ready" after the first round, "rate <iterations per CPU second>"
 * every half second of the worker's CPU, and "done <iterations> <cpu ns>"
 * when it has used its seconds of CPU (or, with --until-eof, when stdin is
 * closed; after its seconds it then exits with status 3).
 */
public class JitAdvice {
    static volatile boolean stop;

    /** A complex number; times is too big to inline. */
    static final class Complex {
        final double re, im;

        Complex(double re, double im) {
            this.re = re;
            this.im = im;
        }

        Complex plus(Complex o) {
            return new Complex(re + o.re, im + o.im);
        }

        Complex times(Complex o) {
            double a = re, b = im, c = o.re, d = o.im;
            double ac = a * c, bd = b * d, ad = a * d, bc = b * c;
            double x = ac - bd, y = ad + bc;
            if (Double.isNaN(x) && Double.isNaN(y)) {
                boolean recalc = false;
                if (Double.isInfinite(a) || Double.isInfinite(b)) {
                    a = Math.copySign(Double.isInfinite(a) ? 1.0 : 0.0, a);
                    b = Math.copySign(Double.isInfinite(b) ? 1.0 : 0.0, b);
                    if (Double.isNaN(c)) c = Math.copySign(0.0, c);
                    if (Double.isNaN(d)) d = Math.copySign(0.0, d);
                    recalc = true;
                }
                if (Double.isInfinite(c) || Double.isInfinite(d)) {
                    c = Math.copySign(Double.isInfinite(c) ? 1.0 : 0.0, c);
                    d = Math.copySign(Double.isInfinite(d) ? 1.0 : 0.0, d);
                    if (Double.isNaN(a)) a = Math.copySign(0.0, a);
                    if (Double.isNaN(b)) b = Math.copySign(0.0, b);
                    recalc = true;
                }
                if (!recalc && (Double.isInfinite(ac) || Double.isInfinite(bd)
                        || Double.isInfinite(ad) || Double.isInfinite(bc))) {
                    if (Double.isNaN(a)) a = Math.copySign(0.0, a);
                    if (Double.isNaN(b)) b = Math.copySign(0.0, b);
                    if (Double.isNaN(c)) c = Math.copySign(0.0, c);
                    if (Double.isNaN(d)) d = Math.copySign(0.0, d);
                    recalc = true;
                }
                if (recalc) {
                    x = Double.POSITIVE_INFINITY * (a * c - b * d);
                    y = Double.POSITIVE_INFINITY * (a * d + b * c);
                }
            }
            return new Complex(x, y);
        }
    }

    static double norm(Complex z) {
        return z.re * z.re + z.im * z.im;
    }

    /** The caller of the hot edges escape -> Complex.times and escape -> Complex.plus. */
    static int escape(double cr, double ci) {
        Complex c = new Complex(cr, ci);
        Complex z = new Complex(0, 0);
        int n = 0;
        while (n < 1000 && norm(z) <= 4.0) {
            z = z.times(z).plus(c);
            n++;
        }
        return n;
    }

    /** One round: the grid's escape counts, summed. */
    static long round() {
        long sum = 0;
        for (int row = 0; row < 64; row++) {
            for (int col = 0; col < 64; col++) {
                sum += escape(-2.0 + col / 32.0, -1.0 + row / 32.0);
            }
        }
        return sum;
    }

    static void work(long budgetNs) {
        ThreadMXBean clock = ManagementFactory.getThreadMXBean();
        long start = clock.getCurrentThreadCpuTime();
        long expected = round();
        System.out.println("ready");
        long mark = clock.getCurrentThreadCpuTime(), iterations = 0, total = 0;
        while (!stop) {
            long sum = round();
            if (sum != expected) {
                System.out.println("WRONG checksum " + sum + ", expected " + expected);
                System.exit(1);
            }
            iterations += sum;
            long now = clock.getCurrentThreadCpuTime();
            if (now - mark >= 500_000_000L) {
                System.out.println("rate " + (iterations * 1_000_000_000L / (now - mark)));
                total += iterations;
                iterations = 0;
                mark = now;
            }
            if (now - start >= budgetNs) {
                break;
            }
        }
        total += iterations;
        System.out.println("done " + total + " " + (clock.getCurrentThreadCpuTime() - start));
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
