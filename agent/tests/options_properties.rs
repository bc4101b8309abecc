//! The option parser on arbitrary input: it never panics, every rejection
//! is one line that names the offending item, whatever it accepts is within
//! the documented ranges, and the startup syntax (`key=value,...`) and the
//! jcmd syntax (`key:value;...`) always mean the same thing.

use std::time::Duration;

use pcct_agent::options::{keys, Options};
use proptest::prelude::*;
use proptest::sample::select;

/// Values: anything without a separator, and near-misses of real values
/// (numbers with and without units, huge numbers, signs, exponents).
fn values() -> impl Strategy<Value = String> {
    prop_oneof![
        "[^,;]{0,30}",
        "[0-9]{1,25}(ns|us|ms|s|m|min|k|m|g|kb|)",
        "-?[0-9.e+]{1,20}[a-z]{0,3}",
        "(on|off|true|false|yes|no|0|1|cpu|wall|pcct|methods|drop|purge|json|xarc|SIGPROF|SIGRTMIN\\+[0-9]{1,3})",
        "[0-9]{1,3}\\.[0-9]{1,3}\\.[0-9]{1,3}\\.[0-9]{1,3}",
    ]
}

/// Every accepted option is within its documented range.
fn assert_in_range(options: &Options) -> Result<(), TestCaseError> {
    prop_assert!((Duration::from_micros(100)..=Duration::from_secs(1)).contains(&options.interval));
    prop_assert!((1..=4096).contains(&options.depth));
    prop_assert!(options.walk_limit.is_none_or(|limit| (1..=4096).contains(&limit)));
    prop_assert!(options.purge.is_none_or(|period| period >= Duration::from_millis(100)));
    prop_assert!((64 << 10..=16usize << 30).contains(&options.arena_bytes));
    prop_assert!((0.0..=1.0).contains(&options.idle_share));
    prop_assert!(options.max_spin <= Duration::from_micros(200));
    prop_assert!((0.0..=0.9).contains(&options.jitter));
    prop_assert!((16..=1_000_000).contains(&options.recent));
    prop_assert!((16..=100_000).contains(&options.hot_list));
    prop_assert!((256 << 10..=4usize << 30).contains(&options.methods_limit));
    prop_assert!(options.metrics_top <= 100);
    prop_assert!(options.format.is_none() || options.file.is_some());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn arbitrary_text_never_panics_and_a_rejection_is_one_line(text in any::<String>()) {
        match Options::parse(&text) {
            Ok(options) => assert_in_range(&options)?,
            Err(error) => {
                let line = error.to_string();
                prop_assert!(!line.contains(['\n', '\r']), "more than one line: {line:?}");
                prop_assert!(line.chars().count() < 2000, "not a short line: {} characters", line.len());
                prop_assert!(!error.allowed.is_empty());
            }
        }
    }

    #[test]
    fn a_known_option_with_any_value_is_accepted_in_range_or_refused_by_name(
        key in select(keys().collect::<Vec<_>>()),
        value in values(),
    ) {
        match Options::parse(&format!("{key}={value}")) {
            Ok(options) => assert_in_range(&options)?,
            Err(error) => {
                prop_assert!(error.item.starts_with(key), "{key}={value:?} refused as {:?}", error.item);
                prop_assert!(!error.to_string().contains('\n'));
            }
        }
    }

    #[test]
    fn both_syntaxes_mean_the_same(
        items in prop::collection::vec((select(keys().collect::<Vec<_>>()), values()), 0..6),
    ) {
        let startup = items.iter().map(|(key, value)| format!("{key}={value}")).collect::<Vec<_>>().join(",");
        let jcmd = items.iter().map(|(key, value)| format!("{key}:{value}")).collect::<Vec<_>>().join(";");
        let (a, b) = (Options::parse(&startup), Options::parse(&jcmd));
        match (&a, &b) {
            (Ok(a), Ok(b)) => prop_assert_eq!(a, b),
            (Err(a), Err(b)) => prop_assert_eq!(&a.allowed, &b.allowed, "{} / {}", a, b),
            _ => prop_assert!(false, "{startup:?} -> {a:?} but {jcmd:?} -> {b:?}"),
        }
    }

    #[test]
    fn unknown_keys_are_refused_by_name(key in "[a-z_]{1,12}", value in "[a-z0-9]{0,8}") {
        prop_assume!(!keys().any(|known| known == key));
        let error = Options::parse(&format!("interval=1ms,{key}={value}")).expect_err("an unknown key");
        prop_assert!(error.item.starts_with(&key));
        prop_assert!(error.allowed.contains("known options"));
    }
}

#[test]
fn control_characters_are_escaped_in_the_message() {
    let error = Options::parse("mode=fa\nst").expect_err("not a mode");
    let line = error.to_string();
    assert!(!line.contains('\n'), "{line:?}");
    assert!(line.contains("mode=fa\\nst"), "{line}");
}
