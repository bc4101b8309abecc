//! The shipped Grafana dashboard, Prometheus configuration and alert rules
//! (`dashboards/`) against a real Prometheus scraping a real JVM.
//!
//! - promtool accepts `prometheus.yml` (with `alerts.yml`, which it names
//!   relative to itself, and the file_sd example) and `alerts.yml`;
//! - the dashboard has what Grafana needs: unique panel ids, non-overlapping
//!   grid positions, the `${datasource}` variable on every panel and target,
//!   a known unit, a description and valid thresholds on every panel, an
//!   expression on every target that filters each selector by `$job` and
//!   `$instance`, and the datasource/job/instance variables;
//! - a Prometheus on loopback scrapes every second a JVM running the demo
//!   workload (`demo/Demo.java`, JDK 17, interval=1ms) and loads
//!   `alerts.yml`; after a few scrapes every expression of every panel
//!   target and template variable (read from the JSON, so a new panel is
//!   covered without touching this test) returns data, with the labels its
//!   legend names, and returns nothing for another job; every alert rule
//!   (read from Prometheus, which loaded the shipped file) evaluates without
//!   error, and with its comparisons turned into `bool` comparisons returns
//!   data carrying the labels its annotations name: so the expression
//!   matches the agent's series and only its thresholds keep it quiet.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use pcct_tests::prometheus::{assert_promtool, json, Json, Prometheus, Rule, Sample, ScrapeConfig};
use pcct_tests::{assert_no_hs_err, jdk17, poll_until, Fixture, Jvm};

/// The Grafana unit ids the dashboard may use (all in Grafana's
/// `valueFormats/categories.ts`).
const UNITS: &[&str] = &[
    "none",
    "short",
    "percent",
    "percentunit",
    "s",
    "ms",
    "µs",
    "ns",
    "ops",
    "reqps",
    "bytes",
    "decbytes",
    "Bps",
    "bool",
];

/// The job the alert rules and the test's scrape configuration use.
const JOB: &str = "pcct";

/// `$__rate_interval`: Grafana would use four scrape intervals (4 s); a
/// wider window keeps two points in it when scrapes are slow under load.
const RATE_INTERVAL: &str = "30s";

/// Alert severities the rules may carry.
const SEVERITIES: &[&str] = &["critical", "warning", "info"];

fn dashboards_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../dashboards")
}

fn read(name: &str) -> String {
    let path = dashboards_dir().join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

fn dashboard() -> Json {
    json::parse(&read("pcct-overview.json")).unwrap_or_else(|e| panic!("pcct-overview.json is not JSON: {e}"))
}

fn text<'a>(value: &'a Json, key: &str) -> &'a str {
    value.get(key).and_then(Json::as_str).unwrap_or("")
}

fn items<'a>(value: &'a Json, key: &str) -> &'a [Json] {
    value.get(key).and_then(Json::as_array).map_or(&[], Vec::as_slice)
}

/// Every panel, rows included, with the panels of collapsed rows.
fn all_panels(dashboard: &Json) -> Vec<&Json> {
    let mut out = Vec::new();
    for panel in items(dashboard, "panels") {
        out.push(panel);
        out.extend(items(panel, "panels"));
    }
    out
}

fn is_row(panel: &Json) -> bool {
    text(panel, "type") == "row"
}

fn panel_name(panel: &Json) -> String {
    format!("panel {} {:?}", panel.get("id").and_then(Json::as_f64).unwrap_or(-1.0), text(panel, "title"))
}

fn variable<'a>(dashboard: &'a Json, name: &str) -> Option<&'a Json> {
    dashboard.get("templating").map(|t| items(t, "list")).unwrap_or(&[]).iter().find(|v| text(v, "name") == name)
}

fn uses_datasource_variable(value: &Json) -> bool {
    value.get("datasource").is_some_and(|ds| text(ds, "uid") == "${datasource}" && text(ds, "type") == "prometheus")
}

/// The number of alert rules in `alerts.yml` (lines `- alert: Name`).
fn alert_rules_in_file() -> usize {
    read("alerts.yml").lines().filter(|line| line.trim_start().starts_with("- alert:")).count()
}

// ------------------------------------------------------------------ PromQL text

/// For each byte of a PromQL expression: whether it is code, that is outside
/// string literals, label matchers `{...}` and ranges `[...]`.
fn code_mask(expr: &str) -> Vec<bool> {
    let bytes = expr.as_bytes();
    let mut mask = vec![false; bytes.len()];
    let mut quote: Option<u8> = None;
    let mut escaped = false;
    let mut nesting = 0usize;
    for (i, &byte) in bytes.iter().enumerate() {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if byte == b'\\' {
                escaped = true;
            } else if byte == q {
                quote = None;
            }
            continue;
        }
        match byte {
            b'"' | b'\'' | b'`' => quote = Some(byte),
            b'{' | b'[' => nesting += 1,
            b'}' | b']' => nesting = nesting.saturating_sub(1),
            _ => mask[i] = nesting == 0,
        }
    }
    mask
}

/// The label matchers of every selector: the text between `{` and `}`
/// outside string literals.
fn selectors(expr: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut quote: Option<u8> = None;
    let mut escaped = false;
    let mut start = None;
    for (i, &byte) in expr.as_bytes().iter().enumerate() {
        match quote {
            Some(_) if escaped => escaped = false,
            Some(_) if byte == b'\\' => escaped = true,
            Some(q) if byte == q => quote = None,
            Some(_) => {}
            None => match byte {
                b'"' | b'\'' | b'`' => quote = Some(byte),
                b'{' => start = Some(i + 1),
                b'}' => out.extend(start.take().map(|from| &expr[from..i])),
                _ => {}
            },
        }
    }
    out
}

/// The metric names (`pcct_*`, `up`) used without a label matcher.
fn unfiltered_metrics(expr: &str) -> Vec<String> {
    let mask = code_mask(expr);
    let bytes = expr.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let starts = mask[i] && (bytes[i].is_ascii_alphabetic() || bytes[i] == b'_');
        let after_word = i > 0 && (bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
        if !starts || after_word {
            i += 1;
            continue;
        }
        let end =
            (i..bytes.len()).find(|&j| !(bytes[j].is_ascii_alphanumeric() || bytes[j] == b'_')).unwrap_or(bytes.len());
        let word = &expr[i..end];
        let next = expr[end..].trim_start().chars().next();
        if (word.starts_with("pcct_") || word == "up") && next != Some('{') {
            out.push(word.to_string());
        }
        i = end;
    }
    out
}

/// `expr` with every comparison operator made a `bool` comparison, so that
/// it returns 0 or 1 for every element its operands match instead of
/// filtering (`up == 0` becomes `up == bool 0`).
fn with_bool_comparisons(expr: &str) -> String {
    let mask = code_mask(expr);
    let bytes = expr.as_bytes();
    let mut out = String::with_capacity(expr.len() + 16);
    let mut i = 0;
    while i < bytes.len() {
        let two = bytes.get(i..i + 2).filter(|_| mask[i] && mask.get(i + 1) == Some(&true));
        let operator = match (two, bytes[i]) {
            (Some(b"==" | b"!=" | b">=" | b"<="), _) => 2,
            (_, b'>' | b'<') if mask[i] => 1,
            _ => 0,
        };
        if operator == 0 {
            let len = expr[i..].chars().next().map_or(1, char::len_utf8);
            out.push_str(&expr[i..i + len]);
            i += len;
            continue;
        }
        out.push_str(&expr[i..i + operator]);
        i += operator;
        if !expr[i..].trim_start().starts_with("bool") {
            out.push_str(" bool");
        }
    }
    out
}

/// Replaces Grafana's variables (`$name`, `${name}`) with `values`; panics
/// on a variable without a value.
fn substitute(expr: &str, values: &BTreeMap<&str, String>) -> String {
    let mut out = String::new();
    let mut rest = expr;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let (name, consumed) = if let Some(braced) = after.strip_prefix('{') {
            let end = braced.find('}').unwrap_or_else(|| panic!("unclosed ${{ in {expr}"));
            (&braced[..end], end + 2)
        } else {
            let end = after.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(after.len());
            (&after[..end], end)
        };
        let value = values.get(name).unwrap_or_else(|| panic!("unknown variable ${name} in {expr}"));
        out.push_str(value);
        rest = &after[consumed..];
    }
    out.push_str(rest);
    out
}

/// A value as Grafana writes a multi-value variable into `=~"..."`: regex
/// metacharacters escaped with a (PromQL-escaped) backslash.
fn grafana_regex_escape(value: &str) -> String {
    let mut out = String::new();
    for c in value.chars() {
        if c == '\\' {
            out.push_str("\\\\\\\\");
        } else {
            if "$^*{}[]'+?.()|".contains(c) {
                out.push_str("\\\\");
            }
            out.push(c);
        }
    }
    out
}

/// The label names a legend format or annotation template refers to:
/// `{{name}}` and `$labels.name`.
fn referenced_labels(template: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for part in template.split("{{").skip(1) {
        let inside = part.split("}}").next().unwrap_or("").trim();
        if !inside.is_empty() && inside.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            out.insert(inside.to_string());
        }
    }
    for part in template.split("$labels.").skip(1) {
        let name: String = part.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        out.insert(name);
    }
    out
}

#[test]
fn promql_text_helpers() {
    let expr = r#"sum by (instance) (rate(x{a=~"$job", b="}>"}[4s])) > 0.1 and on (job) up{c!="a"} == 0"#;
    assert_eq!(selectors(expr), vec![r#"a=~"$job", b="}>""#, r#"c!="a""#]);
    assert_eq!(
        with_bool_comparisons(expr),
        r#"sum by (instance) (rate(x{a=~"$job", b="}>"}[4s])) > bool 0.1 and on (job) up{c!="a"} == bool 0"#
    );
    assert_eq!(with_bool_comparisons("a >= bool 1"), "a >= bool 1");
    assert_eq!(unfiltered_metrics("sum(pcct_a{x=\"pcct_b\"}) / up + pcct_c"), vec!["up", "pcct_c"]);
    let values = BTreeMap::from([("job", "j".to_string()), ("__rate_interval", "4s".to_string())]);
    assert_eq!(substitute("x{job=~\"$job\"}[$__rate_interval] ${job}", &values), "x{job=~\"j\"}[4s] j");
    assert_eq!(grafana_regex_escape("127.0.0.1:80"), r"127\\.0\\.0\\.1:80");
    let names: Vec<String> = referenced_labels("{{method}} ({{ instance }}) {{ $labels.app }}").into_iter().collect();
    assert_eq!(names, vec!["app", "instance", "method"]);
}

// ------------------------------------------------------------------ promtool

#[test]
fn promtool_accepts_the_scrape_configuration_and_the_alert_rules() {
    let dir = dashboards_dir();
    // promtool resolves rule_files and file_sd files relative to the
    // configuration's directory, whatever the working directory is.
    let (config, rules) = (dir.join("prometheus.yml"), dir.join("alerts.yml"));
    let config = assert_promtool(&[OsStr::new("check"), OsStr::new("config"), config.as_os_str()]);
    assert!(config.contains("SUCCESS: 1 rule files found"), "prometheus.yml must load alerts.yml:\n{config}");
    let rules = assert_promtool(&[OsStr::new("check"), OsStr::new("rules"), rules.as_os_str()]);
    let expected = format!("SUCCESS: {} rules found", alert_rules_in_file());
    assert!(rules.contains(&expected), "expected {expected:?}:\n{rules}");
}

// ------------------------------------------------------------------ dashboard structure

#[test]
fn the_dashboard_has_the_structure_grafana_needs() {
    let dashboard = dashboard();
    let mut problems = Vec::new();
    let schema = dashboard.get("schemaVersion").and_then(Json::as_f64).unwrap_or(0.0);
    if !(36.0..=41.0).contains(&schema) {
        problems.push(format!("schemaVersion {schema} is not one of Grafana 10/11's (36..=41)"));
    }
    for key in ["title", "uid", "description"] {
        if text(&dashboard, key).is_empty() {
            problems.push(format!("no dashboard {key}"));
        }
    }

    match variable(&dashboard, "datasource") {
        Some(v) if text(v, "type") == "datasource" && text(v, "query") == "prometheus" => {}
        other => problems.push(format!("no datasource variable of type datasource for prometheus: {other:?}")),
    }
    for name in ["job", "instance"] {
        match variable(&dashboard, name) {
            Some(v) if text(v, "type") == "query" && uses_datasource_variable(v) => {
                let query = variable_query(v);
                if !query.starts_with("label_values(pcct_build_info") || !query.ends_with(&format!(", {name})")) {
                    problems.push(format!(
                        "variable {name}: query {query:?} is not label_values(pcct_build_info.., {name})"
                    ));
                }
            }
            other => problems.push(format!("no query variable {name} on ${{datasource}}: {other:?}")),
        }
    }

    let panels = all_panels(&dashboard);
    let mut ids = BTreeSet::new();
    let mut cells: BTreeMap<(i64, i64), String> = BTreeMap::new();
    let mut queries = 0;
    for panel in &panels {
        let name = panel_name(panel);
        match panel.get("id").and_then(Json::as_f64) {
            Some(id) if id.fract() == 0.0 && id > 0.0 => {
                if !ids.insert(id as i64) {
                    problems.push(format!("{name}: duplicate id"));
                }
            }
            _ => problems.push(format!("{name}: no positive integer id")),
        }
        if text(panel, "title").is_empty() {
            problems.push(format!("{name}: no title"));
        }
        let grid = |key: &str| panel.get("gridPos").and_then(|g| g.get(key)).and_then(Json::as_f64).map(|v| v as i64);
        match (grid("x"), grid("y"), grid("w"), grid("h")) {
            (Some(x), Some(y), Some(w), Some(h)) if x >= 0 && y >= 0 && w > 0 && h > 0 && x + w <= 24 => {
                for cell_x in x..x + w {
                    for cell_y in y..y + h {
                        if let Some(other) = cells.insert((cell_x, cell_y), name.clone()) {
                            problems.push(format!("{name} overlaps {other} at ({cell_x}, {cell_y})"));
                        }
                    }
                }
            }
            _ => problems.push(format!("{name}: gridPos missing or outside the 24 columns")),
        }
        // Rows only group panels: no queries, units or descriptions.
        if is_row(panel) {
            continue;
        }
        if !uses_datasource_variable(panel) {
            problems.push(format!("{name}: datasource is not {{type: prometheus, uid: ${{datasource}}}}"));
        }
        if text(panel, "description").trim().is_empty() {
            problems.push(format!("{name}: no description"));
        }
        let defaults = panel.get("fieldConfig").and_then(|f| f.get("defaults"));
        let unit = defaults.map_or("", |d| text(d, "unit"));
        if !UNITS.contains(&unit) {
            problems.push(format!("{name}: unit {unit:?} is not one of {UNITS:?}"));
        }
        problems.extend(threshold_problems(&name, defaults.and_then(|d| d.get("thresholds"))));
        let targets = items(panel, "targets");
        if targets.is_empty() {
            problems.push(format!("{name}: no targets"));
        }
        let mut ref_ids = BTreeSet::new();
        for target in targets {
            queries += 1;
            let expr = text(target, "expr");
            if expr.trim().is_empty() {
                problems.push(format!("{name}: a target without expr"));
                continue;
            }
            if !uses_datasource_variable(target) {
                problems.push(format!("{name}: target {expr:?} does not use ${{datasource}}"));
            }
            if !ref_ids.insert(text(target, "refId")) || text(target, "refId").is_empty() {
                problems.push(format!("{name}: missing or duplicate refId in {expr:?}"));
            }
            for selector in selectors(expr) {
                if !selector.contains(r#"job=~"$job""#) || !selector.contains(r#"instance=~"$instance""#) {
                    problems.push(format!("{name}: selector {{{selector}}} does not filter by $job and $instance"));
                }
            }
            for metric in unfiltered_metrics(expr) {
                problems.push(format!("{name}: {metric} without job/instance filter in {expr:?}"));
            }
        }
    }
    assert!(queries >= 20, "only {queries} queries: the dashboard was not read");
    assert!(problems.is_empty(), "pcct-overview.json:\n{}", problems.join("\n"));
}

fn variable_query(variable: &Json) -> String {
    match variable.get("query") {
        Some(Json::String(query)) => query.clone(),
        Some(query) => text(query, "query").to_string(),
        None => String::new(),
    }
}

/// Grafana's thresholds: absolute or percentage, a first step with value
/// null (the base colour), then increasing values, each with a colour.
fn threshold_problems(name: &str, thresholds: Option<&Json>) -> Vec<String> {
    let Some(thresholds) = thresholds else {
        return vec![format!("{name}: no thresholds")];
    };
    let mut problems = Vec::new();
    if !matches!(text(thresholds, "mode"), "absolute" | "percentage") {
        problems.push(format!("{name}: thresholds mode is neither absolute nor percentage"));
    }
    let steps = items(thresholds, "steps");
    if steps.first().and_then(|s| s.get("value")) != Some(&Json::Null) {
        problems.push(format!("{name}: the first threshold step must have value null"));
    }
    let values: Vec<f64> = steps.iter().skip(1).filter_map(|s| s.get("value").and_then(Json::as_f64)).collect();
    if values.len() + 1 != steps.len() || values.windows(2).any(|w| w[0] >= w[1]) {
        problems.push(format!("{name}: threshold values must be numbers in increasing order"));
    }
    if steps.iter().any(|s| text(s, "color").is_empty()) {
        problems.push(format!("{name}: a threshold step without colour"));
    }
    problems
}

// ------------------------------------------------------------------ live

/// The demo workload (`demo/Demo.java`) compiled by JDK 17 beside the test programs.
fn compile_demo(fixture: &Fixture) {
    let source = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../demo/Demo.java");
    let javac = jdk17().javac();
    let output = Command::new(&javac)
        .args(["--release", "17", "-encoding", "UTF-8", "-d"])
        .arg(fixture.classes())
        .arg(&source)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", javac.display()));
    assert!(output.status.success(), "javac Demo.java failed:\n{}", String::from_utf8_lossy(&output.stderr));
}

/// What a query answered, for failure messages.
fn shown(samples: &[Sample]) -> String {
    let shown: Vec<String> = samples.iter().take(3).map(|s| format!("{:?} {}", s.labels, s.value)).collect();
    format!("{} samples: {}", samples.len(), shown.join("; "))
}

/// Samples missing a label the legend or annotation names.
fn missing_labels(template: &str, samples: &[Sample]) -> Vec<String> {
    referenced_labels(template)
        .into_iter()
        .filter(|label| samples.iter().any(|s| !s.labels.contains_key(label)))
        .collect()
}

#[test]
fn every_dashboard_and_alert_expression_returns_data_from_a_live_jvm() {
    let fixture = Fixture::new("dashboards");
    compile_demo(&fixture);
    let addr_file = fixture.path("addr");
    // Much longer than the test: the JVM is killed at the end.
    let mut jvm = Jvm::new(&jdk17(), &fixture, "Demo")
        .arg("600")
        .agent(format!("interval=1ms,port=0,addr_file={}", addr_file.display()))
        .spawn();
    let address = poll_until(Instant::now() + Duration::from_secs(60), || {
        let text = std::fs::read_to_string(&addr_file).ok()?;
        text.trim().parse::<std::net::SocketAddr>().ok().map(|a| a.to_string())
    })
    .unwrap_or_else(|| panic!("no address in {} within 60 s\n{}", addr_file.display(), jvm.stderr()));

    let alerts = dashboards_dir().join("alerts.yml");
    let config = ScrapeConfig::new(JOB, &address).label("app", "demo").rule_file(&alerts);
    let prometheus = Prometheus::start(fixture.dir(), &config);
    prometheus.wait_for_scrapes(6, Instant::now() + Duration::from_secs(90));
    let rules = prometheus.wait_for_rule_evaluation(Instant::now() + Duration::from_secs(60));

    let mut problems = Vec::new();
    let mut evaluated = 0;
    let values = |job: &str| {
        BTreeMap::from([
            ("datasource", "prometheus".to_string()),
            ("job", grafana_regex_escape(job)),
            ("instance", grafana_regex_escape(&address)),
            ("__rate_interval", RATE_INTERVAL.to_string()),
            ("__interval", "1s".to_string()),
            ("__range", "1m".to_string()),
        ])
    };
    let (ours, another_job) = (values(JOB), values("no-such-job"));

    let dashboard = dashboard();
    for panel in all_panels(&dashboard).into_iter().filter(|p| !is_row(p)) {
        for target in items(panel, "targets") {
            let template = text(target, "expr");
            let expr = substitute(template, &ours);
            evaluated += 1;
            match prometheus.query(&expr) {
                Ok(samples) if samples.is_empty() => {
                    problems.push(format!("{}: no data from {expr}", panel_name(panel)))
                }
                Ok(samples) if samples.iter().all(|sample| !sample.value.is_finite()) => problems.push(format!(
                    "{}: only NaN or infinite values from {expr}: {}",
                    panel_name(panel),
                    shown(&samples)
                )),
                Ok(samples) => {
                    let legend = text(target, "legendFormat");
                    for label in missing_labels(legend, &samples) {
                        problems.push(format!(
                            "{}: legend {legend:?} names {label}, which {expr} does not return ({})",
                            panel_name(panel),
                            shown(&samples)
                        ));
                    }
                }
                Err(error) => problems.push(format!("{}: {expr}: {error}", panel_name(panel))),
            }
            // The filters filter: another job's panels are empty.
            match prometheus.query(&substitute(template, &another_job)) {
                Ok(samples) if samples.is_empty() => {}
                other => {
                    problems.push(format!("{}: data for another job from {template}: {other:?}", panel_name(panel)))
                }
            }
        }
    }

    // The template variables: label_values(selector, label).
    for name in ["job", "instance"] {
        let query = variable(&dashboard, name).map(variable_query).unwrap_or_default();
        let inner = query.strip_prefix("label_values(").and_then(|q| q.strip_suffix(')')).unwrap_or("");
        let Some((selector, label)) = inner.rsplit_once(',') else {
            problems.push(format!("variable {name}: cannot read {query:?}"));
            continue;
        };
        let expr = format!("count by ({}) ({})", label.trim(), substitute(selector, &ours));
        evaluated += 1;
        let expected = if name == "job" { JOB } else { address.as_str() };
        match prometheus.query(&expr) {
            Ok(samples) if samples.iter().any(|s| s.labels.get(label.trim()).map(String::as_str) == Some(expected)) => {
            }
            other => problems.push(format!("variable {name}: {expr} does not list {expected}: {other:?}")),
        }
    }

    let in_file = alert_rules_in_file();
    if rules.len() != in_file {
        problems.push(format!("Prometheus loaded {} rules, alerts.yml has {in_file}", rules.len()));
    }
    for rule in &rules {
        evaluated += 1;
        problems.extend(rule_problems(&prometheus, rule));
    }

    assert!(jvm.is_running(), "the JVM exited while being scraped\n{}", jvm.stderr());
    assert!(evaluated >= 30, "only {evaluated} expressions evaluated");
    let log = prometheus.log();
    drop(prometheus);
    drop(jvm);
    assert_no_hs_err(fixture.dir());
    assert!(
        problems.is_empty(),
        "{} of {evaluated} expressions failed:\n{}\n--- Prometheus log ---\n{log}",
        problems.len(),
        problems.join("\n")
    );
}

/// An alert rule as Prometheus loaded and evaluated it: well formed,
/// healthy, and returning data for the JVM when it compares with `bool`.
fn rule_problems(prometheus: &Prometheus, rule: &Rule) -> Vec<String> {
    let name = format!("alert {}", rule.name);
    let mut problems = Vec::new();
    if rule.kind != "alerting" {
        problems.push(format!("{name}: a {} rule", rule.kind));
    }
    if rule.health != "ok" || !rule.last_error.is_empty() {
        problems.push(format!("{name}: health {} {}", rule.health, rule.last_error));
    }
    if rule.duration <= 0.0 {
        problems.push(format!("{name}: no for:"));
    }
    let severity = rule.labels.get("severity").map_or("", String::as_str);
    if !SEVERITIES.contains(&severity) {
        problems.push(format!("{name}: severity {severity:?} is not one of {SEVERITIES:?}"));
    }
    for key in ["summary", "description"] {
        if rule.annotations.get(key).is_none_or(|a| a.trim().is_empty()) {
            problems.push(format!("{name}: no {key} annotation"));
        }
    }
    // As written: evaluates (normally to nothing: the demo is healthy).
    if let Err(error) = prometheus.query(&rule.query) {
        problems.push(format!("{name}: {}: {error}", rule.query));
    }
    // With bool comparisons: one 0/1 element per JVM the operands match, so
    // an empty answer means a wrong metric, label or vector match.
    let expr = with_bool_comparisons(&rule.query);
    match prometheus.query(&expr) {
        Ok(samples) if samples.is_empty() => problems.push(format!("{name}: no data from {expr}")),
        Ok(samples) => {
            for (key, template) in &rule.annotations {
                for label in missing_labels(template, &samples) {
                    problems.push(format!(
                        "{name}: {key} names {label}, which {expr} does not return ({})",
                        shown(&samples)
                    ));
                }
            }
        }
        Err(error) => problems.push(format!("{name}: {expr}: {error}")),
    }
    problems
}
