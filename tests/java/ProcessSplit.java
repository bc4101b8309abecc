import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.concurrent.CountDownLatch;

/**
 * The whole process's CPU, split by thread, with the kernel's own figures
 * (tests/tests/process_split.rs): <threads> workers run GcStorm's allocation
 * storm for <seconds> (keeping the collector busy), then wait while the
 * program reads /proc/self/task/<tid>/stat for every thread (each thread's
 * user and system time, with its kernel name) and the process's CPU. The
 * workers are alive at the reading, so that every thread's CPU is there
 * (run with -XX:-UseDynamicNumberOfCompilerThreads, so are the compilers').
 *
 * Usage: java -Xmx64m ProcessSplit <seconds> <threads>. Prints
 * "startup_cpu_ms <ms>" (the process's CPU when main starts), then lines
 * "thread_cpu_ms <ms> <name>" and "process_cpu_ms <ms>".
 */
public class ProcessSplit {
    /** Milliseconds per clock tick of /proc's CPU times (USER_HZ, 100 on Linux). */
    static final long MS_PER_TICK = 10;

    /** User plus system time in a /proc stat line, in milliseconds. */
    static long cpuMs(String stat) {
        // Fields after the name's closing parenthesis: state is the 3rd field
        // of the line, utime the 14th and stime the 15th.
        String[] fields = stat.substring(stat.lastIndexOf(')') + 2).trim().split("\\s+");
        return (Long.parseLong(fields[11]) + Long.parseLong(fields[12])) * MS_PER_TICK;
    }

    static long processCpuMs() throws IOException {
        return cpuMs(new String(Files.readAllBytes(Paths.get("/proc/self/stat"))));
    }

    public static void main(String[] args) throws Exception {
        // What the JVM used before main (its start, before the agent could
        // sample anything), to be left out of the comparison.
        System.out.println("startup_cpu_ms " + processCpuMs());
        long end = System.nanoTime() + (long) (Double.parseDouble(args[0]) * 1e9);
        int threads = Integer.parseInt(args[1]);
        CountDownLatch stormed = new CountDownLatch(threads);
        CountDownLatch read = new CountDownLatch(1);
        Thread[] workers = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            final int seed = t * 104_729;
            workers[t] = new Thread(() -> {
                GcStorm.sink += GcStorm.storm(end, seed);
                stormed.countDown();
                try {
                    read.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }, "storm-" + t);
            workers[t].start();
        }
        stormed.await();
        try (DirectoryStream<Path> tasks = Files.newDirectoryStream(Paths.get("/proc/self/task"))) {
            for (Path task : tasks) {
                try {
                    String name = new String(Files.readAllBytes(task.resolve("comm"))).trim();
                    String stat = new String(Files.readAllBytes(task.resolve("stat")));
                    System.out.println("thread_cpu_ms " + cpuMs(stat) + " " + name);
                } catch (IOException ended) {
                    // The thread ended between the listing and the read.
                }
            }
        }
        System.out.println("process_cpu_ms " + processCpuMs());
        read.countDown();
        for (Thread worker : workers) {
            worker.join();
        }
    }
}
