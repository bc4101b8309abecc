//! Class-unloading churn while sampling at 1 ms (ClassChurn.java: a class
//! defined again and again in throwaway loaders, called, dropped, with
//! System.gc()). No crash, exit 0, the profile parses, and every frame is
//! either a resolved Java method or `[unloaded]` (besides the root and the
//! pseudo-frames of failed stack walks).

use std::time::Duration;

use pcct::MethodKind;
use pcct_tests::{per_jdk, Fixture, Jvm, Profile, QUIET_HTTP};

/// Pseudo-frames allowed in the profile: the root, `[unloaded]`, and one
/// per AsyncGetCallTrace failure (samples, not frames with a name); and
/// `[break_<reason>]` roots of partial stacks.
const ALLOWED_PSEUDO: &[&str] = &[
    "[root]",
    "[unloaded]",
    "[no_Java_frame]",
    "[no_class_load]",
    "[gc_active]",
    "[unknown_not_Java]",
    "[not_walkable_not_Java]",
    "[unknown_Java]",
    "[not_walkable_Java]",
    "[unknown_state]",
    "[thread_exit]",
    "[deoptimization]",
    "[safepoint]",
    "[agct_error]",
];

per_jdk! {
    fn churned_classes_are_named_or_unloaded(jdk) {
        let fixture = Fixture::new("class-churn");
        let profile_path = fixture.path("p.json");
        let finished = Jvm::new(jdk, &fixture, "ClassChurn")
            .arg("3")
            .agent(format!("interval=1ms,file={},{QUIET_HTTP}", profile_path.display()))
            .run(Duration::from_secs(90));
        finished.assert_success();
        let classes = finished.stdout_value("classes");
        assert!(classes >= 100, "only {classes} classes defined\n{}", finished.report());
        let summary = finished.summary();
        let profile = Profile::read(&profile_path);

        for node in profile.nodes() {
            let method = profile.method_of(node);
            let ok = match method.kind {
                MethodKind::Java => !method.class.is_empty() && !method.name.is_empty() && !method.name.starts_with('['),
                // `[break_<reason>]`: the top of a stack only pcct's own walker could read.
                MethodKind::Pseudo => {
                    ALLOWED_PSEUDO.contains(&method.name.as_str()) || method.name.starts_with("[break_")
                }
                // An allocated type or a monitor's class, named as Java writes it.
                MethodKind::Type => !method.name.is_empty() && !method.name.starts_with('['),
                // A function of a library (`native=on`, not asked for here).
                MethodKind::Native => false,
            };
            assert!(
                ok,
                "JDK {}: a frame is neither named nor [unloaded]: {method:?}\n{}{}",
                jdk.major,
                profile.describe(&[node]),
                summary.line
            );
        }
        // The churned class was sampled while it lived.
        assert!(
            profile.cum_of("ChurnHelper", "churnWork").samples > 0,
            "ChurnHelper.churnWork was never sampled:\n{}",
            profile.top_methods(10)
        );
    }
}
