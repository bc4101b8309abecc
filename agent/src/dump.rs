//! Writing the profile to `file` at VM death: complete or not at all
//! (written to a temporary file beside it, then renamed), and the check at
//! start-up that it can be written at all.
//!
//! The temporary is made by `tempfile`: created new (`O_EXCL`: never an
//! existing file, never through a symlink someone planted), mode 0600, a
//! random name (two JVMs writing beside each other never share one), and
//! removed if anything fails. The rename replaces `file` itself, not what
//! a symlink there points to.
//!
//! The exporters stream into a buffered file under the profile lock: no
//! copy of the arena and nothing the size of the output is held in memory,
//! so the dump adds only a weight per node (the cum pass) to the agent's
//! memory at the moment the JVM is exiting. The sampler has stopped by
//! then; the lock keeps out only HTTP readers, for as long as the write
//! takes. With the live heap on, the profile is copied first, so the file
//! holds the live heap's resources as every view does (the profile itself
//! never holds them, see `pcct_sampler::live_heap`).

#![forbid(unsafe_code)]

use pcct::export::json::ExtraField;
use pcct::export::{self, Format, ReportOptions};
use pcct_jit::live::AdviceReport;
use pcct_jit::profile::EdgeContexts;
use pcct_sampler::Shared;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use tempfile::NamedTempFile;

/// Writes the profile in `shared` to `path` as `format` (reports written
/// as `report` says); returns the format written.
pub fn write(shared: &Shared, format: Format, report: ReportOptions, path: &Path) -> std::io::Result<Format> {
    let mut temporary = temporary_beside(path)?;
    write_file(shared, format, report, temporary.as_file_mut())?;
    temporary.persist(path).map_err(|error| error.error)?;
    Ok(format)
}

/// At start-up: can `path` be written at VM death? A temporary file is
/// made beside it and removed, so a missing or read-only directory is
/// found now, not when the run is over.
pub fn check_writable(path: &Path) -> std::io::Result<()> {
    temporary_beside(path).map(drop)
}

/// A new temporary file in `path`'s directory, named after it.
fn temporary_beside(path: &Path) -> std::io::Result<NamedTempFile> {
    let directory = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let name = path.file_name().map(|name| format!(".{}.", name.to_string_lossy())).unwrap_or_default();
    tempfile::Builder::new().prefix(&name).suffix(".tmp").tempfile_in(directory)
}

/// Hot edges weighed for the JSON profile's JIT advice.
const ADVICE_EDGES: usize = 1024;

/// The JIT advice over the hottest edges, every share, for `pcct advise`.
/// The edges are copied under the profile lock, joined after it (the
/// inline table's lock is never taken under the profile's).
fn jit_advice(shared: &Shared) -> AdviceReport {
    let (contexts, methods) = {
        let profile = shared.profile.lock();
        let edges = profile.tree.top_edges(ADVICE_EDGES);
        (EdgeContexts::copy_for_advice(&profile.tree, &edges, 100_000), std::sync::Arc::clone(&profile.methods))
    };
    let now = pcct_sampler::timer::now_ns();
    let advice = pcct_jit::profile::advice(&shared.jit, &methods, &contexts, 0.0, ADVICE_EDGES, now);
    AdviceReport { jit: shared.jit.summary(), min_share: 0.0, advice }
}

fn write_file(shared: &Shared, format: Format, report: ReportOptions, file: &mut File) -> std::io::Result<()> {
    let mut out = BufWriter::with_capacity(1 << 20, file);
    let jit = (format == Format::Json).then(|| jit_advice(shared));
    let live = shared.live.status();
    shared.fold_live_heap();
    {
        let profile = shared.profile.lock();
        if format == Format::Json {
            // The JSON profile also carries the sampler's counters, the VM
            // and the JIT advice, each serialized as it is written.
            let counters = shared.counters.snapshot();
            let vm = shared.vm.lock().clone();
            let vm =
                serde_json::json!({"name": vm.jvm_name, "version": vm.jvm_version, "pid": vm.pid, "native": vm.native});
            let collection = export::pprof::PprofContext::of_tree(&profile.tree, interval_ns(shared));
            let collection = export::json::Collection {
                interval_ns: collection.period_ns,
                started_unix_ns: collection.time_nanos,
                duration_ns: collection.duration_nanos,
            };
            let mut extra: Vec<(&str, &dyn ExtraField)> =
                vec![("sampler", &counters), ("live_heap", &live), ("vm", &vm)];
            if let Some(jit) = &jit {
                extra.push(("jit_advice", jit));
            }
            extra.push(("collection", &collection));
            export::json::write_to(&mut out, &profile.tree, &profile.methods, &extra)?;
        } else if format == Format::Pprof {
            let context = export::pprof::PprofContext::of_tree(&profile.tree, interval_ns(shared));
            export::pprof::write_to(&mut out, &profile.tree, &profile.methods, &report, &context)?;
        } else {
            export::write_to(&mut out, format, &profile.tree, &profile.methods, &report)?;
        }
    }
    out.flush()?;
    out.into_inner().map_err(|error| error.into_error())?.sync_all()
}

/// The sampling interval in force.
fn interval_ns(shared: &Shared) -> u64 {
    shared.control.interval().as_nanos() as u64
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use pcct::{Frame, Weight};
    use pcct_sampler::SamplerConfig;

    use super::*;
    use pcct::Metric;

    fn report(metric: Metric) -> ReportOptions {
        ReportOptions { metric, min_cum_share: 0.0, annotate: false }
    }

    /// A profile with one recorded stack, main -> work.
    fn shared_with_a_sample() -> Shared {
        let shared = Shared::new(SamplerConfig::default()).expect("a profile");
        let mut profile = shared.profile.lock();
        let methods = std::sync::Arc::make_mut(&mut profile.methods);
        let main = methods.intern("Main", "main", "([Ljava/lang/String;)V");
        let work = methods.intern("Main", "work", "()V");
        let stack = [Frame::new(main, 3), Frame::new(work, 0)];
        let weight = Weight::sample(1_000_000, 1_000_000);
        profile.tree.record(&mut pcct::Marks::new(), &stack, weight).expect("recorded");
        drop(profile);
        shared
    }

    fn temporaries_in(directory: &Path) -> Vec<String> {
        let names = std::fs::read_dir(directory).expect("list").map(|entry| entry.expect("entry").file_name());
        names.map(|name| name.to_string_lossy().into_owned()).filter(|name| name.ends_with(".tmp")).collect()
    }

    #[test]
    fn the_profile_is_written_whole_with_owner_only_permissions_and_no_temporary_left() {
        let directory = tempfile::tempdir().expect("a directory");
        let path = directory.path().join("p.collapsed");
        let shared = shared_with_a_sample();
        assert_eq!(
            write(&shared, Format::Collapsed, report(Metric::Samples), &path).expect("written"),
            Format::Collapsed
        );
        let text = std::fs::read_to_string(&path).expect("read");
        assert!(text.contains("Main.main;Main.work 1"), "{text}");
        assert_eq!(std::fs::metadata(&path).expect("stat").permissions().mode() & 0o777, 0o600);
        assert!(temporaries_in(directory.path()).is_empty());
    }

    #[test]
    fn pprof_and_json_dumps_say_when_and_how_often_they_sampled() {
        let directory = tempfile::tempdir().expect("a directory");
        let shared = shared_with_a_sample();
        let path = directory.path().join("p.pb.gz");
        write(&shared, Format::Pprof, report(Metric::CpuNs), &path).expect("written");
        let profile = export::pprof::decode(&std::fs::read(&path).expect("read")).expect("pprof");
        assert_eq!(profile.period, shared.control.interval().as_nanos() as i64);
        assert!(profile.time_nanos > 1_600_000_000_000_000_000, "{}", profile.time_nanos);
        assert_eq!(profile.sample.len(), 1);
        assert_eq!(profile.sample[0].value[0], 1);
        let path = directory.path().join("p.json");
        write(&shared, Format::Json, report(Metric::CpuNs), &path).expect("written");
        let json = export::json::parse(&std::fs::read_to_string(&path).expect("read")).expect("json");
        let collection = json.collection.expect("a collection");
        assert_eq!(collection.interval_ns as i64, profile.period);
        assert!(collection.started_unix_ns > 1_600_000_000_000_000_000);
    }

    #[test]
    fn a_symlink_at_the_path_is_replaced_not_followed() {
        let directory = tempfile::tempdir().expect("a directory");
        let victim = directory.path().join("victim");
        std::fs::write(&victim, "keep me").expect("victim");
        let path = directory.path().join("p.json");
        std::os::unix::fs::symlink(&victim, &path).expect("symlink");
        write(&shared_with_a_sample(), Format::Json, report(Metric::Samples), &path).expect("written");
        assert_eq!(std::fs::read_to_string(&victim).expect("victim"), "keep me");
        assert!(!std::fs::symlink_metadata(&path).expect("stat").file_type().is_symlink());
    }

    #[test]
    fn a_directory_that_cannot_take_the_file_is_found_at_start_up() {
        let missing = Path::new("/nonexistent-pcct-directory/p.json");
        assert!(check_writable(missing).is_err());
        assert!(write(&shared_with_a_sample(), Format::Json, report(Metric::Samples), missing).is_err());
        let directory = tempfile::tempdir().expect("a directory");
        let path = directory.path().join("p.json");
        check_writable(&path).expect("writable");
        assert!(!path.exists(), "the check leaves nothing behind");
        assert!(temporaries_in(directory.path()).is_empty());
    }
}
