import java.io.InputStream;
import java.util.function.LongUnaryOperator;

/**
 * Class-unloading churn (tests/tests/class_churn.rs): defines ChurnHelper
 * again and again, each time in a new throwaway class loader, calls it,
 * drops it, and runs System.gc() every few classes so the classes are
 * unloaded while the profiler samples them and resolves their method ids.
 *
 * Usage: java ClassChurn <seconds>. Runs that long, and on until at least
 * MIN_CLASSES classes were defined (a loaded machine makes the run longer,
 * not the churn smaller). Prints "classes=<n>" at the end.
 */
public class ClassChurn {
    static volatile long sink;
    static final int MIN_CLASSES = 100;

    static final class Throwaway extends ClassLoader {
        Throwaway() {
            super(ClassChurn.class.getClassLoader());
        }

        Class<?> define(byte[] bytes) {
            return defineClass("ChurnHelper", bytes, 0, bytes.length);
        }

        @Override
        protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
            // ChurnHelper must come from this loader, never from the parent.
            if (name.equals("ChurnHelper")) {
                throw new ClassNotFoundException(name);
            }
            return super.loadClass(name, resolve);
        }
    }

    static byte[] helperBytes() throws Exception {
        try (InputStream in = ClassChurn.class.getResourceAsStream("/ChurnHelper.class")) {
            return in.readAllBytes();
        }
    }

    static long oneClass(byte[] bytes, long x) throws Exception {
        Class<?> helper = new Throwaway().define(bytes);
        LongUnaryOperator op = (LongUnaryOperator) helper.getDeclaredConstructor().newInstance();
        for (int i = 0; i < 10; i++) {
            x = op.applyAsLong(x);
        }
        return x;
    }

    public static void main(String[] args) throws Exception {
        double seconds = Double.parseDouble(args[0]);
        byte[] bytes = helperBytes();
        long start = System.nanoTime();
        long x = 1;
        int classes = 0;
        while (System.nanoTime() - start < (long) (seconds * 1e9) || classes < MIN_CLASSES) {
            x = oneClass(bytes, x);
            classes++;
            if (classes % 20 == 0) {
                System.gc();
            }
        }
        sink = x;
        System.out.println("classes=" + classes);
    }
}
