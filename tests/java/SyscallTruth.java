import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/**
 * Ground truth for time in system calls (tests/tests/syscall_truth.rs).
 *
 * One thread repeats three methods, and measures the CPU time each takes
 * (its own thread CPU clock, user and system, read around every call):
 *
 *   spin      Java arithmetic, no system call
 *   readBig   reads a 64 MiB file in 32 MiB reads: each read is a kernel
 *             copy of 5-15 ms, many sampling intervals long, with the
 *             thread in the kernel all along
 *   stat      File.exists on 200 files in a directory 24 levels deep:
 *             short system calls, most of their time the kernel's path walk
 *
 * so the truth is measured, not constructed: the CPU of each method over
 * the three, from the clock reads (outside the three methods, so their
 * samples are in main and counted for none). A profiler that counts a
 * sample as one interval loses the intervals that run out during a long
 * read (they reach the thread as one signal at the read's return) and
 * gives readBig a third of its CPU.
 *
 * Usage: java SyscallTruth <directory> <CPU seconds>. Prints spin_ns=,
 * read_ns=, stat_ns= (the CPU of each) at the end.
 */
public class SyscallTruth {
    static long sink;

    static void spin(int n) {
        long x = sink | 1;
        for (int i = 0; i < n; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
            x ^= x >>> 29;
        }
        sink += x;
    }

    static void readBig(File file, byte[] buffer) throws IOException {
        try (RandomAccessFile in = new RandomAccessFile(file, "r")) {
            int n;
            while ((n = in.read(buffer, 0, buffer.length)) > 0) {
                sink += buffer[n - 1];
            }
        }
    }

    static void stat(File[] files) {
        for (int round = 0; round < 20; round++) {
            for (File file : files) {
                if (file.exists()) {
                    sink++;
                }
            }
        }
    }

    public static void main(String[] args) throws Exception {
        File directory = new File(args[0]);
        long cpuBudget = (long) (Double.parseDouble(args[1]) * 1e9);
        File deep = directory;
        for (int i = 0; i < 24; i++) {
            deep = new File(deep, "d" + i);
        }
        if (!deep.mkdirs()) {
            throw new IOException("cannot make " + deep);
        }
        File[] files = new File[200];
        for (int i = 0; i < files.length; i++) {
            files[i] = new File(deep, "f" + i);
            files[i].createNewFile();
        }
        File big = new File(directory, "big");
        byte[] buffer = new byte[32 << 20];
        try (FileOutputStream out = new FileOutputStream(big)) {
            out.write(buffer);
            out.write(buffer);
        }
        ThreadMXBean clock = ManagementFactory.getThreadMXBean();
        long[] cpu = new long[3];
        long start = clock.getCurrentThreadCpuTime();
        while (clock.getCurrentThreadCpuTime() - start < cpuBudget) {
            long t0 = clock.getCurrentThreadCpuTime();
            spin(4_000_000);
            long t1 = clock.getCurrentThreadCpuTime();
            readBig(big, buffer);
            long t2 = clock.getCurrentThreadCpuTime();
            stat(files);
            long t3 = clock.getCurrentThreadCpuTime();
            cpu[0] += t1 - t0;
            cpu[1] += t2 - t1;
            cpu[2] += t3 - t2;
        }
        System.out.println("spin_ns=" + cpu[0]);
        System.out.println("read_ns=" + cpu[1]);
        System.out.println("stat_ns=" + cpu[2]);
        System.out.println("sink=" + (sink & 1));
        big.delete();
    }
}
