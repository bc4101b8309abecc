// The demo workload as it was with a HashMap<Integer, Integer> catalog (see
// demo/Demo.java): a case HotSpot's debug information gets wrong. With
// Catalog.lookup (boxing, HashMap.get) and Pricing.discount (an unrolled
// counted loop, about 70% of the CPU) inlined into Pricing.price, C2 leaves
// the unrolled loop's instructions undescribed and HotSpot charges them to
// the next described instruction, lookup's Integer.valueOf call site: every
// profiler that reads the information (pcct, async-profiler) names
// Catalog.lookup. benches/jvm/inlining.py measures it beside the truth.
//
// Usage: java BoxedCatalog [seconds]   (default 10)

import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

public class BoxedCatalog {
    static final AtomicLong handled = new AtomicLong();
    static volatile long sink;

    static final class Order {
        final int customer;
        final int[] items;
        Order(int customer, int[] items) { this.customer = customer; this.items = items; }
    }

    static final class Parser {
        static Order parse(String text) {
            int customer = 0;
            int[] items = new int[8];
            int count = 0, value = 0;
            for (int i = 0; i < text.length(); i++) {
                char c = text.charAt(i);
                if (c >= '0' && c <= '9') {
                    value = value * 10 + (c - '0');
                } else if (c == ',' || c == ';') {
                    if (customer == 0) customer = value; else if (count < items.length) items[count++] = value;
                    value = 0;
                }
            }
            // Re-scan for a checksum, as real parsers validate their input.
            int checksum = 0;
            for (int round = 0; round < 6; round++)
                for (int i = 0; i < text.length(); i++) checksum = checksum * 31 + text.charAt(i);
            sink += checksum;
            return new Order(customer, java.util.Arrays.copyOf(items, count));
        }
    }

    static final class Validator {
        static boolean check(Order order) {
            long h = order.customer;
            for (int round = 0; round < 40; round++)
                for (int item : order.items) h = h * 1_000_003L ^ item;
            return h != 42;
        }
    }

    static final class Catalog {
        static final Map<Integer, Integer> prices = new HashMap<>();
        static {
            for (int i = 0; i < 10_000; i++) prices.put(i, 100 + (i * 37) % 900);
        }
        static int lookup(int item) {
            Integer price = prices.get(item % 10_000);
            return price == null ? 0 : price;
        }
    }

    static final class Pricing {
        static long price(Order order) {
            long total = 0;
            for (int item : order.items) total += Catalog.lookup(item);
            return discount(order.customer, total);
        }
        static long discount(int customer, long total) {
            long d = total;
            for (int i = 0; i < 1_800; i++) d = (d * 6364136223846793005L + customer) >>> 1;
            return total - (d & 7);
        }
    }

    static final class Audit {
        static String record(Order order, long price) {
            StringBuilder line = new StringBuilder();
            for (int round = 0; round < 20; round++)
                line.append(order.customer).append(':').append(price).append(';');
            return line.toString();
        }
    }

    static long handle(String text) {
        Order order = Parser.parse(text);
        if (!Validator.check(order)) return 0;
        long price = Pricing.price(order);
        if ((handled.incrementAndGet() & 15) == 0) sink += Audit.record(order, price).length();
        return price;
    }

    static final class Worker extends Thread {
        final long deadline;
        final int seed;
        Worker(String name, long deadline, int seed) { super(name); this.deadline = deadline; this.seed = seed; }
        @Override public void run() {
            int n = seed;
            StringBuilder text = new StringBuilder();
            while (System.nanoTime() < deadline) {
                text.setLength(0);
                text.append(1000 + n % 500).append(';');
                for (int i = 0; i < 8; i++) text.append((n * 7 + i * 13) % 10_000).append(',');
                sink += handle(text.toString());
                n++;
            }
        }
    }

    public static void main(String[] args) throws Exception {
        int seconds = args.length > 0 ? Integer.parseInt(args[0]) : 10;
        long deadline = System.nanoTime() + seconds * 1_000_000_000L;
        Worker[] workers = { new Worker("worker-1", deadline, 1), new Worker("worker-2", deadline, 7) };
        Thread reporter = new Thread(() -> {
            while (System.nanoTime() < deadline) {
                try { Thread.sleep(50); } catch (InterruptedException e) { return; }
                sink += handled.get();
            }
        }, "reporter");
        Thread janitor = new Thread(() -> {
            try { Thread.sleep(Long.MAX_VALUE); } catch (InterruptedException e) { }
        }, "janitor");
        janitor.setDaemon(true);
        for (Worker w : workers) w.start();
        reporter.start();
        janitor.start();
        for (Worker w : workers) w.join();
        reporter.join();
        System.out.println("demo: handled " + handled.get() + " orders in " + seconds + " s");
    }
}
