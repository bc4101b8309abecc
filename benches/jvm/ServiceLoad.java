import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.ReentrantLock;
import java.util.zip.GZIPOutputStream;

/**
 * A multi-threaded HTTP service under load, in one JVM: the benchmarks'
 * server workload (benches/jvm/harness.py, workload "service").
 *
 * The JDK's own HTTP server (com.sun.net.httpserver) answers GET /quote on
 * a pool of worker threads ("worker-N"). A quote prices a basket of items:
 * arithmetic and string building in Java, a shared price cache behind one
 * ReentrantLock (contended: every request takes it per item), a monitor
 * around the service's statistics, allocation of the report, and the
 * report gzipped (java.util.zip.Deflater: zlib, native code). Client
 * threads ("client-N") in the same JVM send requests on keep-alive
 * connections over loopback as fast as they are answered.
 *
 * Usage: java ServiceLoad [seconds] [workers] [clients]
 *   (defaults 15, 8 and 8). Runs for `seconds` of wall time, then prints
 *   "served <n> requests" (the unit of work of the harness's ratios) and
 *   exits 0.
 */
public class ServiceLoad {
    static final int ITEMS = 64;
    static final int CACHE_ENTRIES = 4096;

    static final ReentrantLock cacheLock = new ReentrantLock();
    static final Map<Long, Long> priceCache = new LinkedHashMap<Long, Long>(CACHE_ENTRIES, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<Long, Long> eldest) {
            return size() > CACHE_ENTRIES;
        }
    };
    static final Object statsMonitor = new Object();
    static final Map<String, Long> stats = new HashMap<>();
    static final LongAdder served = new LongAdder();
    static volatile boolean stopping;

    public static void main(String[] args) throws Exception {
        int seconds = args.length > 0 ? Integer.parseInt(args[0]) : 15;
        int workers = args.length > 1 ? Integer.parseInt(args[1]) : 8;
        int clients = args.length > 2 ? Integer.parseInt(args[2]) : 8;
        // The server's headers and body go out in two writes: without
        // TCP_NODELAY, Nagle's algorithm and delayed ACKs add 40 ms each.
        System.setProperty("sun.net.httpserver.nodelay", "true");
        AtomicInteger workerNumber = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(workers, task -> {
            Thread thread = new Thread(task, "worker-" + workerNumber.incrementAndGet());
            thread.setDaemon(true);
            return thread;
        });
        HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 64);
        server.createContext("/quote", ServiceLoad::quote);
        server.setExecutor(pool);
        server.start();
        int port = server.getAddress().getPort();
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < clients; i++) {
            final int seed = i;
            Thread client = new Thread(() -> client(port, seed), "client-" + (i + 1));
            client.setDaemon(true);
            threads.add(client);
            client.start();
        }
        Thread.sleep(seconds * 1000L);
        stopping = true;
        for (Thread client : threads) {
            client.join(5000);
        }
        server.stop(0);
        pool.shutdown();
        pool.awaitTermination(5, TimeUnit.SECONDS);
        System.out.println("served " + served.sum() + " requests");
    }

    /** GET /quote?basket=N: a gzipped price report of basket N. */
    static void quote(HttpExchange exchange) throws IOException {
        try (InputStream body = exchange.getRequestBody()) {
            body.readAllBytes();
        }
        String query = exchange.getRequestURI().getRawQuery();
        long basket = query != null && query.startsWith("basket=") ? Long.parseLong(query.substring(7)) : 0;
        byte[] report = gzip(report(basket));
        exchange.getResponseHeaders().set("Content-Encoding", "gzip");
        exchange.sendResponseHeaders(200, report.length);
        try (OutputStream out = exchange.getResponseBody()) {
            out.write(report);
        }
        synchronized (statsMonitor) {
            stats.merge(exchange.getRequestURI().getPath(), 1L, Long::sum);
        }
        served.increment();
    }

    static String report(long basket) {
        StringBuilder text = new StringBuilder(ITEMS * 64);
        long total = 0;
        for (int item = 0; item < ITEMS; item++) {
            long sku = (basket * 31 + item * 7919L) % 20_000;
            long price = price(sku);
            total += price;
            text.append("item ").append(item).append(" sku ").append(sku)
                .append(" price ").append(price / 100).append('.').append(price % 100)
                .append(" tax ").append(String.format("%.2f", price * 0.0019)).append('\n');
        }
        text.append("total ").append(total).append('\n');
        return text.toString();
    }

    /** A SKU's price: from the shared cache, or computed and cached. */
    static long price(long sku) {
        cacheLock.lock();
        try {
            Long cached = priceCache.get(sku);
            if (cached != null) {
                return cached;
            }
        } finally {
            cacheLock.unlock();
        }
        long price = compute(sku);
        cacheLock.lock();
        try {
            priceCache.put(sku, price);
        } finally {
            cacheLock.unlock();
        }
        return price;
    }

    static long compute(long sku) {
        long x = sku * 0x9E3779B97F4A7C15L + 1;
        for (int i = 0; i < 2_000; i++) {
            x ^= x << 13;
            x ^= x >>> 7;
            x ^= x << 17;
        }
        return 100 + Math.floorMod(x, 100_000);
    }

    static byte[] gzip(String text) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(text.length() / 3);
        try (GZIPOutputStream out = new GZIPOutputStream(bytes)) {
            out.write(text.getBytes(StandardCharsets.UTF_8));
        }
        return bytes.toByteArray();
    }

    /** Sends requests on one keep-alive connection until stopping. */
    static void client(int port, int seed) {
        long basket = seed * 1_000_003L;
        byte[] buffer = new byte[64 * 1024];
        while (!stopping) {
            try (Socket socket = new Socket(InetAddress.getLoopbackAddress(), port)) {
                socket.setTcpNoDelay(true);
                OutputStream out = socket.getOutputStream();
                InputStream in = new BufferedInputStream(socket.getInputStream(), 64 * 1024);
                while (!stopping) {
                    basket = basket * 6364136223846793005L + 1442695040888963407L;
                    String request = "GET /quote?basket=" + Math.floorMod(basket, 1_000_000L)
                        + " HTTP/1.1\r\nHost: localhost\r\nAccept-Encoding: gzip\r\n\r\n";
                    out.write(request.getBytes(StandardCharsets.US_ASCII));
                    out.flush();
                    readResponse(in, buffer);
                }
            } catch (IOException e) {
                if (!stopping) {
                    throw new RuntimeException(e);
                }
            }
        }
    }

    /** Reads one response: its headers, then Content-Length bytes of body. */
    static void readResponse(InputStream in, byte[] buffer) throws IOException {
        StringBuilder headers = new StringBuilder();
        int last4 = 0;
        while (true) {
            int b = in.read();
            if (b < 0) {
                throw new IOException("connection closed");
            }
            headers.append((char) b);
            last4 = (last4 << 8) | b;
            if (last4 == 0x0D0A0D0A) {
                break;
            }
        }
        int length = -1;
        for (String line : headers.toString().split("\r\n")) {
            int colon = line.indexOf(':');
            if (colon > 0 && line.substring(0, colon).equalsIgnoreCase("Content-Length")) {
                length = Integer.parseInt(line.substring(colon + 1).trim());
            }
        }
        if (length < 0) {
            throw new IOException("no Content-Length in " + headers);
        }
        while (length > 0) {
            int read = in.read(buffer, 0, Math.min(buffer.length, length));
            if (read < 0) {
                throw new IOException("connection closed in a body");
            }
            length -= read;
        }
    }
}
