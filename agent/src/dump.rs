//! Writing the profile to `file` at VM death: complete or not at all
//! (written to a temporary file beside it, then renamed).
//!
//! The exporters stream into a buffered file under the profile lock: no
//! copy of the arena and nothing the size of the output is held in memory,
//! so the dump adds only a weight per node (the cum pass) to the agent's
//! memory at the moment the JVM is exiting. The sampler has stopped by
//! then; the lock keeps out only HTTP readers, for as long as the write takes.

#![forbid(unsafe_code)]

use pcct::export::{self, Format, ReportOptions};
use pcct::Metric;
use pcct_sampler::Shared;
use std::io::{BufWriter, Write};
use std::path::Path;

/// Writes the profile in `shared` to `path` as `format` (reports weighed by
/// `metric`); returns the format written.
pub fn write(shared: &Shared, format: Format, metric: Metric, path: &Path) -> std::io::Result<Format> {
    let temporary = path.with_extension(format!("{}.tmp", std::process::id()));
    let written = write_file(shared, format, metric, &temporary).and_then(|()| std::fs::rename(&temporary, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written.map(|()| format)
}

fn write_file(shared: &Shared, format: Format, metric: Metric, path: &Path) -> std::io::Result<()> {
    let mut out = BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
    {
        let profile = shared.profile.lock();
        if format == Format::Json {
            // The JSON profile also carries the sampler's counters and the VM.
            let mut extra = serde_json::Map::new();
            let counters = serde_json::to_value(shared.counters.snapshot()).unwrap_or_default();
            extra.insert("sampler".to_string(), counters);
            let vm = shared.vm.lock().clone();
            extra.insert(
                "vm".to_string(),
                serde_json::json!({"name": vm.jvm_name, "version": vm.jvm_version, "pid": vm.pid}),
            );
            export::json::write_to(&mut out, &profile.tree, &profile.methods, &extra)?;
        } else {
            let options = ReportOptions { metric, min_cum_share: 0.0 };
            export::write_to(&mut out, format, &profile.tree, &profile.methods, &options)?;
        }
    }
    out.flush()?;
    out.into_inner().map_err(|error| error.into_error())?.sync_all()
}
