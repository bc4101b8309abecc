// Converts the execution samples of a JFR recording into the stack lines
// `pcct import-stacks` reads: time_ns<TAB>thread<TAB>frame<TAB>frame... with
// frames root first, each `class|method|descriptor|bci`. Used by the
// benchmark harness to measure JFR's precision with pcct's correlation.
//
// JFR cuts stacks deeper than its stackdepth (64 frames unless the JVM ran
// with -XX:FlightRecorderOptions:stackdepth=N; the harness passes 512, as
// deep as pcct walks by default). Truncated stacks are counted, so a JFR
// precision measured on cut stacks is visible as such.
//
// Usage: java JfrStacks.java <recording.jfr> <out.stacks>
// Prints on stdout one JSON line: {"samples":N,"truncated":T}.

import java.io.BufferedWriter;
import java.io.FileWriter;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedStackTrace;
import jdk.jfr.consumer.RecordedThread;
import jdk.jfr.consumer.RecordingFile;

public class JfrStacks {
    public static void main(String[] args) throws Exception {
        long events = 0;
        long truncated = 0;
        try (RecordingFile recording = new RecordingFile(Path.of(args[0]));
             BufferedWriter out = new BufferedWriter(new FileWriter(args[1]), 1 << 20)) {
            while (recording.hasMoreEvents()) {
                RecordedEvent event = recording.readEvent();
                String type = event.getEventType().getName();
                if (!type.equals("jdk.ExecutionSample") && !type.equals("jdk.CPUTimeSample")) continue;
                RecordedStackTrace stack = event.getStackTrace();
                if (stack == null) continue;
                if (stack.isTruncated()) truncated++;
                RecordedThread thread = event.hasField("sampledThread") ? event.getThread("sampledThread") : event.getThread();
                long tid = thread == null ? 0 : thread.getJavaThreadId();
                Instant start = event.getStartTime();
                long nanos = start.getEpochSecond() * 1_000_000_000L + start.getNano();
                StringBuilder line = new StringBuilder();
                line.append(nanos).append('\t').append(tid);
                List<RecordedFrame> frames = stack.getFrames();
                for (int i = frames.size() - 1; i >= 0; i--) {
                    RecordedFrame frame = frames.get(i);
                    if (!frame.isJavaFrame()) continue;
                    line.append('\t').append(frame.getMethod().getType().getName())
                        .append('|').append(frame.getMethod().getName())
                        .append('|').append(frame.getMethod().getDescriptor())
                        .append('|').append(frame.getBytecodeIndex());
                }
                out.write(line.toString());
                out.newLine();
                events++;
            }
        }
        double share = events == 0 ? 0.0 : (double) truncated / events;
        System.err.printf("JfrStacks: %d samples, %d truncated (%.2f%%)%n", events, truncated, 100 * share);
        System.out.println("{\"samples\":" + events + ",\"truncated\":" + truncated + "}");
    }
}
