//! Writing the profile to `file` at VM death: complete or not at all
//! (written to a temporary file beside it, then renamed).

use std::io::Write;
use std::path::Path;

use pcct::export::{self, Format, ReportOptions};

use crate::agent::Agent;

pub fn write(agent: &Agent, path: &Path) -> std::io::Result<Format> {
    let format = agent.options.dump_format();
    let profile = agent.shared.snapshot();
    let options = ReportOptions { metric: agent.options.report_metric(), min_cum_share: 0.0 };
    let text = if format == Format::Json {
        // The JSON profile also carries the sampler's counters and the VM.
        let mut extra = serde_json::Map::new();
        let counters = serde_json::to_value(agent.shared.counters.snapshot()).unwrap_or_default();
        extra.insert("sampler".to_string(), counters);
        let vm = agent.shared.vm.lock().clone();
        extra.insert(
            "vm".to_string(),
            serde_json::json!({"name": vm.jvm_name, "version": vm.jvm_version, "pid": vm.pid}),
        );
        export::json::write_with(&profile.tree, &profile.methods, &extra)
    } else {
        export::write(format, &profile.tree, &profile.methods, &options)
    };
    let temporary = path.with_extension(format!("{}.tmp", std::process::id()));
    {
        let mut file = std::fs::File::create(&temporary)?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
    }
    std::fs::rename(&temporary, path)?;
    Ok(format)
}
