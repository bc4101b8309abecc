/**
 * Compresses a 64 KiB buffer the given number of times with
 * java.util.zip.Deflater (tests/tests/native_frames.rs): nearly all its CPU
 * is in zlib, below Deflater.deflateBytesBytes (about 2 ms a time). One
 * deflation first, then a pause: the JDK loads the library at the first
 * Deflater, and a profiler that has not read it yet cannot unwind it; the
 * pause lets it read the library before the measured deflations.
 *
 * Usage: java Deflating <times>. Prints "deflated=N" at the end.
 */
import java.util.Random;
import java.util.zip.Deflater;

public class Deflating {
    public static void main(String[] args) throws InterruptedException {
        byte[] input = new byte[1 << 16];
        Random random = new Random(1);
        for (int i = 0; i < input.length; i++) {
            input[i] = (byte) ('a' + random.nextInt(16));
        }
        byte[] output = new byte[1 << 17];
        long times = Long.parseLong(args[0]);
        long deflated = deflate(input, output);
        Thread.sleep(200);
        for (long time = 0; time < times; time++) {
            deflated += deflate(input, output);
        }
        System.out.println("deflated=" + deflated);
    }

    static long deflate(byte[] input, byte[] output) {
        Deflater deflater = new Deflater(6);
        deflater.setInput(input);
        deflater.finish();
        long deflated = 0;
        while (!deflater.finished()) {
            deflated += deflater.deflate(output);
        }
        deflater.end();
        return deflated;
    }
}
