//! Class-unloading churn while the HTTP API is queried continuously: the
//! agent names method ids of classes that are being unloaded (ClassChurn
//! defines ChurnHelper again and again in throwaway loaders, with
//! System.gc()), while three clients ask for hot methods, edges, contexts,
//! trees, recent samples, every report, the flame graph, status and metrics
//! on fresh connections. No crash, exit 0, no server error, every JSON
//! answer parses, names of the churned class are served while it lives, and
//! the profile parses with every frame named or `[unloaded]`. Allocations
//! are sampled every 8 KiB meanwhile (their stacks hold the churned
//! class's methods too) and asked for by resource over HTTP. With inline
//! records on (the default), the churned classes' compiled code is loaded
//! into the inline table and unloaded from it meanwhile.

use pcct::MethodKind;
use pcct_tests::stress::{
    arg_seconds, assert_exit_code, deadline_for, load_seconds, profile_json, sampler_counter, wait_for_addr_file,
    Hammer, BUSY_ROUTES,
};
use pcct_tests::{per_jdk, Fixture, Jvm, Profile};

per_jdk! {
    fn class_churn_while_http_is_queried(jdk) {
        let seconds = load_seconds(4.0);
        let fixture = Fixture::new("stress-class-churn");
        let (profile_path, addr_path) = (fixture.path("p.json"), fixture.path("addr"));
        let jvm = Jvm::new(jdk, &fixture, "ClassChurn")
            .arg(arg_seconds(seconds))
            .agent(format!(
                "interval=1ms,alloc=8k,port=0,addr_file={},file={}",
                addr_path.display(),
                profile_path.display()
            ))
            .spawn();
        let address = wait_for_addr_file(&addr_path, deadline_for(0.0));
        let hammer = Hammer::start(address, BUSY_ROUTES, 3, Some("ChurnHelper"));
        let finished = jvm.wait_with_deadline(deadline_for(seconds));
        let stats = hammer.stop();
        assert_exit_code(&finished, 0);

        eprintln!("JDK {}: HTTP while churning: {stats:?}", jdk.major);
        assert!(stats.ok() >= 20, "JDK {}: too few answers: {stats:?}", jdk.major);
        assert_eq!(stats.failed_while_serving, 0, "JDK {}: failed connections: {stats:?}", jdk.major);
        assert_eq!(stats.server_errors(), 0, "JDK {}: server errors: {:?}", jdk.major, stats.first_server_error);
        assert!(stats.bad_json.is_empty(), "JDK {}: answers that are not JSON: {:?}", jdk.major, stats.bad_json);
        assert!(stats.watched > 0, "JDK {}: no answer named the churned class ChurnHelper: {stats:?}", jdk.major);

        let classes = finished.stdout_value("classes");
        assert!(classes >= 100, "only {classes} classes defined\n{}", finished.report());
        let profile = Profile::read(&profile_path);
        for node in profile.nodes() {
            let method = profile.method_of(node);
            let named = match method.kind {
                MethodKind::Java => !method.class.is_empty() && !method.name.is_empty(),
                MethodKind::Pseudo => method.name.starts_with('[') && method.name != "[unknown_method]",
                // An allocated type or a monitor's class, named as Java writes it.
                MethodKind::Type => !method.name.is_empty() && !method.name.starts_with('['),
                // A function of a library, or the library where it has no
                // symbol (`native=on`: not asked for here, but a soak with
                // PCCT_EXTRA_OPTIONS adds it).
                MethodKind::Native => !method.class.is_empty() && !method.name.is_empty(),
            };
            assert!(named, "JDK {}: a frame is neither named nor [unloaded]: {method:?}", jdk.major);
        }
        assert!(profile.cum_of("ChurnHelper", "churnWork").samples > 0, "{}", profile.top_methods(10));
        let json = profile_json(&profile_path);
        // Allocations sampled every 8 KiB meanwhile, their frames named
        // (or [unloaded]) like the samples'.
        assert!(sampler_counter(&json, "allocations_recorded") > 0, "JDK {}: no allocation recorded", jdk.major);
        eprintln!(
            "JDK {}: {classes} classes, methods resolved {} unloaded {} failed {}; code loaded {} unloaded {}, inline records kept {} malformed {}",
            jdk.major,
            sampler_counter(&json, "methods_resolved"),
            sampler_counter(&json, "methods_unloaded"),
            sampler_counter(&json, "methods_failed"),
            sampler_counter(&json, "methods_compiled"),
            sampler_counter(&json, "code_unloaded"),
            sampler_counter(&json, "inline_records_kept"),
            sampler_counter(&json, "inline_records_malformed"),
        );
        // Inline records are on by default: the churned classes' compiled
        // code was loaded and unloaded (their records dropped) meanwhile.
        assert!(sampler_counter(&json, "code_unloaded") > 0, "JDK {}: no compiled code unloaded while churning", jdk.major);
        assert_eq!(sampler_counter(&json, "inline_records_malformed"), 0);
        // The table keeps a VM id only while code names it: the ids of
        // churned classes whose code was unloaded are gone.
        let table = &json["jit_advice"]["jit"]["table"];
        eprintln!("JDK {}: inline table at exit: {table}", jdk.major);
        let (ids, codes) = (table["vm_ids"].as_u64().expect("vm_ids"), table["codes"].as_u64().expect("codes"));
        assert!(codes > 0 && ids > 0, "JDK {}: an empty inline table: {table}", jdk.major);
    }
}
