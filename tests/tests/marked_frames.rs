//! Marked frames on a real JVM (LoopShort.java; the paper's Section 5.1 and
//! pcct/tests/figure6.rs `a_loop_calling_a_short_method_weights_only_new_calls`):
//! main -> loop runs for the whole program, loop -> shortCall is called
//! millions of times. An edge is weighted by the samples in which its call
//! was new since the thread's previous sample: main -> loop was new once;
//! loop -> shortCall is new whenever the previous sample was in loop's own
//! body (about half of shortCall's samples, as loop and shortCall do equal
//! work).

use std::time::Duration;

use pcct_tests::{per_jdk, Fixture, Jvm, Profile, QUIET_HTTP};

per_jdk! {
    fn only_new_calls_weigh_on_edges(jdk) {
        let fixture = Fixture::new("marked-frames");
        let profile_path = fixture.path("p.json");
        let finished = Jvm::new(jdk, &fixture, "LoopShort")
            .arg("3")
            .agent(format!("interval=1ms,file={},{QUIET_HTTP}", profile_path.display()))
            .run(Duration::from_secs(90));
        finished.assert_success();
        let profile = Profile::read(&profile_path);

        let loops = profile.nodes_of("LoopShort", "loop");
        let shorts = profile.nodes_of("LoopShort", "shortCall");
        let context = format!("JDK {}:\n{}{}", jdk.major, profile.describe(&loops), profile.describe(&shorts));
        assert_eq!(loops.len(), 1, "one context of loop\n{context}");
        assert_eq!(shorts.len(), 1, "one context of shortCall\n{context}");
        let (looping, short) = (loops[0], shorts[0]);
        assert_eq!(short.parent, Some(looping.id), "shortCall is called by loop\n{context}");
        assert!(profile.parent(looping).is_some_and(|p| profile.is(p, "LoopShort", "main")), "loop under main\n{context}");

        // Enough samples to judge.
        assert!(looping.cum.samples >= 500, "too few samples\n{context}");
        // The loop was entered once: its edge was new in one sample.
        assert_eq!(looping.edge.samples, 1, "edge main -> loop\n{context}");
        // The old prefix is not re-walked: main's edge too.
        let main = profile.parent(looping).expect("main");
        assert_eq!(main.edge.samples, 1, "edge into main\n{context}");
        // shortCall: new in a large share of its samples (a quarter of all
        // samples is expected, half of its own), never more than all of them.
        let share_new = short.edge.samples as f64 / short.self_weight.samples as f64;
        assert!(short.edge.samples <= short.self_weight.samples, "{context}");
        assert!((0.25..=0.75).contains(&share_new), "edge loop -> shortCall new in {:.0} % of its samples\n{context}", share_new * 100.0);
    }
}
