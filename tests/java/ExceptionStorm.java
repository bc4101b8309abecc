import java.io.InputStream;
import java.lang.reflect.Method;
import java.util.Set;

/**
 * Exceptions and deoptimisation storms (tests/tests/stress_stack.rs), for
 * <seconds>:
 *  - two threads throw exceptions through 100 frames and catch them at the
 *    top ("exceptions");
 *  - a deoptimisation storm ("deopt_rounds"): each round defines a fresh
 *    class hierarchy (DeoptBase with the single subclass DeoptImplA) in a
 *    throwaway class loader, runs DeoptDriver.run's loop on a worker thread
 *    until C2 compiled it with DeoptBase.value devirtualised and inlined
 *    (class hierarchy analysis: one implementation), then loads DeoptImplB
 *    while the loop runs: the compiled code's dependency is invalidated and
 *    the running frame deoptimised; the loop then also meets an instance of
 *    the new class (an uncommon trap). Loaders are dropped and collected.
 *
 * Usage: java ExceptionStorm <seconds>. Prints "exceptions=<n>" and
 * "deopt_rounds=<n>" at the end.
 */
public class ExceptionStorm {
    static volatile long sink;
    static final Set<String> CHILD_FIRST = Set.of("DeoptBase", "DeoptImplA", "DeoptImplB", "DeoptDriver");

    static final class Deep extends RuntimeException {
        Deep(int n) {
            super("depth " + n);
        }
    }

    static long thrower(int depth, long x) {
        if (depth == 0) {
            if ((x & 1) == 0) {
                throw new Deep(depth);
            }
            throw new IllegalStateException("odd " + x);
        }
        return thrower(depth - 1, x * 31 + depth) + 1;
    }

    static long throwLoop(long endNs, long seed) {
        long count = 0;
        long x = seed;
        while (System.nanoTime() < endNs) {
            try {
                sink = thrower(100, x++);
            } catch (Deep | IllegalStateException expected) {
                count++;
            }
        }
        return count;
    }

    static final class ChildFirst extends ClassLoader {
        ChildFirst() {
            super(ExceptionStorm.class.getClassLoader());
        }

        @Override
        protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
            if (!CHILD_FIRST.contains(name)) {
                return super.loadClass(name, resolve);
            }
            synchronized (getClassLoadingLock(name)) {
                Class<?> c = findLoadedClass(name);
                if (c == null) {
                    try (InputStream in = ExceptionStorm.class.getResourceAsStream("/" + name + ".class")) {
                        byte[] bytes = in.readAllBytes();
                        c = defineClass(name, bytes, 0, bytes.length);
                    } catch (java.io.IOException e) {
                        throw new ClassNotFoundException(name, e);
                    }
                }
                return c;
            }
        }
    }

    static void deoptRound() throws Exception {
        ChildFirst loader = new ChildFirst();
        Class<?> driver = Class.forName("DeoptDriver", true, loader);
        Object a = Class.forName("DeoptImplA", true, loader).getDeclaredConstructor().newInstance();
        Method run = driver.getMethod("run", Object.class, long.class);
        Method stop = driver.getMethod("stop");
        Method warm = driver.getMethod("warm");
        Thread worker = new Thread(() -> {
            try {
                sink = (long) run.invoke(null, a, 400_000_000L);
            } catch (ReflectiveOperationException e) {
                throw new RuntimeException(e);
            }
        }, "deopt-worker");
        worker.start();
        // Wait until the loop ran long enough to be compiled by C2.
        long until = System.nanoTime() + 300_000_000L;
        while ((boolean) warm.invoke(null) == false && System.nanoTime() < until) {
            Thread.sleep(1);
        }
        // A second implementation invalidates the devirtualised call.
        Object b = Class.forName("DeoptImplB", true, loader).getDeclaredConstructor().newInstance();
        driver.getMethod("offer", Object.class).invoke(null, b);
        Thread.sleep(5);
        stop.invoke(null);
        worker.join();
    }

    public static void main(String[] args) throws Exception {
        long durationNs = (long) (Double.parseDouble(args[0]) * 1e9);
        long end = System.nanoTime() + durationNs;
        long[] counts = new long[2];
        Thread[] throwers = new Thread[2];
        for (int i = 0; i < 2; i++) {
            final int index = i;
            throwers[i] = new Thread(() -> counts[index] = throwLoop(end, index * 1000), "thrower-" + i);
            throwers[i].start();
        }
        long rounds = 0;
        while (System.nanoTime() < end) {
            deoptRound();
            rounds++;
            if (rounds % 10 == 0) {
                System.gc();
            }
        }
        for (Thread t : throwers) {
            t.join();
        }
        System.out.println("exceptions=" + (counts[0] + counts[1]));
        System.out.println("deopt_rounds=" + rounds);
    }
}
