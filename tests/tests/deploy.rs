//! The Kubernetes example in `deploy/`, checked by the tools that read it:
//! the manifest by `kubernetes-validate` (the API's own schemas, offline),
//! the Prometheus configuration by `promtool check config`; and the agent
//! options the manifest gives `JAVA_TOOL_OPTIONS` run in a real JVM, which
//! then answers the two scrapers as they ask (the pprof window with the
//! token, as Alloy's pyroscope.scrape asks; /metrics, as Prometheus does).
//! Grafana Alloy's own parser is not available offline: its file is
//! checked against the manifest (path, port annotation, token file) only.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use pcct::export::pprof;
use pcct_tests::http::start_served;
use pcct_tests::{assert_no_hs_err, one_jdk, Fixture, Jvm};

fn deploy(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy").join(file)
}

fn read(file: &str) -> String {
    std::fs::read_to_string(deploy(file)).unwrap_or_else(|e| panic!("cannot read deploy/{file}: {e}"))
}

fn run(tool: &str, args: &[&str], install: &str) -> String {
    let output = Command::new(tool)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {tool} ({e}): run scripts/install-test-deps {install}"));
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "{tool} {args:?} failed:\n{text}");
    text
}

#[test]
fn the_manifest_passes_the_kubernetes_schemas() {
    let manifest = deploy("kubernetes/pcct-jvm.yaml");
    let text = run("kubernetes-validate", &["--strict", manifest.to_str().unwrap()], "deploy");
    for resource in ["deployment/shop", "service/shop-pcct"] {
        assert!(text.contains(&format!("passed for resource {resource}")), "{text}");
    }
}

/// No token is in the repository: the manifest names the Secret it takes
/// them from, and holds none.
#[test]
fn the_manifest_holds_no_secret_value() {
    let manifest = read("kubernetes/pcct-jvm.yaml");
    for needle in ["kind: Secret", "stringData", "\n  data:", "change-me"] {
        assert!(!manifest.contains(needle), "the manifest holds a secret value ({needle:?})");
    }
    assert!(
        manifest.contains("secretName: pcct-tokens") && manifest.contains("kubectl create secret generic pcct-tokens")
    );
}

#[test]
fn the_prometheus_configuration_passes_promtool() {
    let config = deploy("prometheus/prometheus.yml");
    let text = run("promtool", &["check", "config", "--syntax-only", config.to_str().unwrap()], "prometheus");
    assert!(text.contains("SUCCESS"), "{text}");
}

#[test]
fn the_alloy_configuration_asks_what_the_manifest_serves() {
    let alloy = read("alloy/pcct.alloy");
    let manifest = read("kubernetes/pcct-jvm.yaml");
    let depth = alloy.chars().try_fold(0i32, |depth, c| match c {
        '{' => Some(depth + 1),
        '}' => (depth > 0).then_some(depth - 1),
        _ => Some(depth),
    });
    assert_eq!(depth, Some(0), "unbalanced braces in deploy/alloy/pcct.alloy");
    for (needle, in_manifest) in [
        ("path    = \"/debug/pprof/profile\"", None),
        ("__meta_kubernetes_pod_annotation_pcct_io_scrape", Some("pcct.io/scrape: \"true\"")),
        ("__meta_kubernetes_pod_annotation_pcct_io_port", Some("pcct.io/port: \"7070\"")),
        ("bearer_token_file = \"/etc/pcct/token\"", Some("secretName: pcct-tokens")),
    ] {
        assert!(alloy.contains(needle), "the Alloy file lacks {needle}");
        if let Some(wanted) = in_manifest {
            assert!(manifest.contains(wanted), "the manifest lacks {wanted}");
        }
    }
}

/// The agent options of the manifest's JAVA_TOOL_OPTIONS.
fn manifest_agent_options() -> String {
    let manifest = read("kubernetes/pcct-jvm.yaml");
    let start = manifest.find("-agentpath:/agent/libpcct_agent.so=").expect("an -agentpath in the manifest");
    let line = manifest[start..].lines().next().unwrap();
    line.split_once('=').unwrap().1.trim().to_string()
}

one_jdk! {
    /// The manifest's options, with the pod's paths and names replaced by
    /// the test's (and the listening address by loopback, the port by any
    /// free one), serve a token-protected pprof window and /metrics.
    fn the_manifests_agent_options_serve_both_scrapers(jdk) {
        let fixture = Fixture::new("deploy");
        let token_file = fixture.path("token");
        let read_token_file = fixture.path("read-token");
        for (file, token) in [(&token_file, "a-deploy-test-token"), (&read_token_file, "a-deploy-read-token")] {
            std::fs::write(file, format!("{token}\n")).expect("token");
            std::fs::set_permissions(file, std::os::unix::fs::PermissionsExt::from_mode(0o400)).expect("chmod");
        }
        let options = manifest_agent_options()
            .replace("/agent/token", token_file.to_str().unwrap())
            .replace("/agent/read-token", read_token_file.to_str().unwrap())
            .replace("$(POD_NAME)", "shop-1")
            .replace("bind=0.0.0.0", "bind=127.0.0.1")
            .replace("port=7070", "port=0")
            .replace(",quiet=on", "");
        assert!(options.contains("token_file=") && options.contains("app=shop"), "{options}");
        let mut served = start_served(Jvm::new(jdk, &fixture, "LiveTarget"), &fixture, &options);
        served.jvm.wait_for_stdout_line("ready", Duration::from_secs(60));
        let anonymous = served.client.clone();
        assert_eq!(anonymous.get("/debug/pprof/profile?seconds=1").expect("answer").status, 401);
        // The scrapers hold the read-only token: it reads, and cannot change the JVM.
        let client = served.client.clone().with_token("a-deploy-read-token");
        assert_eq!(client.post("/api/purge", "").expect("an answer").status, 403);
        let window = client.get("/debug/pprof/profile?seconds=2").expect("a window");
        assert_eq!(window.status, 200, "{}", window.text());
        let profile = pprof::decode(&window.body).expect("pprof");
        assert!(profile.sample.iter().map(|s| s.value[0]).sum::<i64>() > 0, "an empty window");
        let metrics = client.get("/metrics").expect("metrics");
        assert!(metrics.status == 200 && metrics.text().contains("pcct_samples_total"));
        assert_eq!(client.get_json("/api/status")["settings"]["instance"], "shop-1");
        let finished = served.jvm.wait_with_deadline(Duration::from_secs(60));
        finished.assert_success();
        assert_no_hs_err(fixture.dir());
    }
}
