//! The live page (`GET /`) and `/flamegraph.svg` of a profiled JVM
//! (LiveTarget.java, hottest method LiveTarget.alpha) in headless
//! Chromium: the page's scripts fetch /api/* and fill the hot-methods table
//! (its first row is the hottest method), the recent samples name the Java
//! thread, the resource selector lists every resource, a screenshot is a
//! real picture, and the flame graph names the hottest method, fetched
//! over HTTP and loaded in the browser.

use std::time::{Duration, Instant};

use pcct_tests::browser::{png_dimensions, Chromium};
use pcct_tests::http::start_served;
use pcct_tests::{one_jdk, poll_until, Fixture, Jvm};

const HOTTEST: &str = "LiveTarget.alpha";

/// The element of `dom` that starts with `opening` (up to its closing `</tag>`).
fn element<'a>(dom: &'a str, opening: &str, tag: &str) -> Option<&'a str> {
    let start = dom.find(opening)?;
    let end = dom[start..].find(&format!("</{tag}>"))? + start;
    Some(&dom[start..end])
}

/// The method names of the page's hot-methods table, in order.
fn hot_method_rows(dom: &str) -> Vec<String> {
    let Some(table) = element(dom, "<table id=\"methods\">", "table") else { return Vec::new() };
    table.split("<td class=\"name\">").skip(1).filter_map(|cell| cell.split('<').next()).map(str::to_string).collect()
}

one_jdk! {
    fn page_and_flame_graph_show_the_hottest_method_in_chromium(jdk) {
        let fixture = Fixture::new("http-page");
        let mut served = start_served(Jvm::new(jdk, &fixture, "LiveTarget"), &fixture, "interval=1ms");
        served.jvm.wait_for_stdout_line("ready", Duration::from_secs(30));
        let client = served.client.clone();
        // The API knows the answer before the browser is asked.
        poll_until(Instant::now() + Duration::from_secs(30), || {
            let hot = client.get_json("/api/hot-methods?limit=1");
            (hot["profile"]["samples"].as_u64().unwrap_or(0) >= 300 && hot["methods"][0]["method"]["display"] == HOTTEST)
                .then_some(())
        })
        .unwrap_or_else(|| panic!("{HOTTEST} is not the hottest method within 30 s"));
        let base = client.base_url();
        let chromium = Chromium::new(fixture.dir());

        // The rendered DOM: the page's fetches completed (virtual time waits
        // for them); if a run still shows no rows, run again with a doubled
        // budget, until a deadline.
        let (dom, ready) = chromium.dump_dom_until(&format!("{base}/"), Duration::from_secs(3), Instant::now() + Duration::from_secs(90), |dom| {
            !hot_method_rows(dom).is_empty() && dom.contains("<td class=\"name\">busy</td>")
        });
        let rows = hot_method_rows(&dom);
        assert!(ready, "JDK {}: the page's hot-methods table stayed empty:\n{dom}", jdk.major);
        assert_eq!(rows.first().map(String::as_str), Some(HOTTEST), "JDK {}: rows {rows:?}", jdk.major);
        let status = element(&dom, "<div id=\"status\">", "div").unwrap_or_default();
        assert!(status.contains("sampling (cpu, every 1.00 ms)") && status.contains("samples"), "status line: {status}");
        assert!(dom.contains("<div id=\"error\"></div>"), "the page shows an error:\n{dom}");
        // The flame graph is embedded as an <object> (its own scripts run;
        // tests/tests/page_interactive.rs searches and zooms it).
        assert!(dom.contains("<object id=\"flame\" type=\"image/svg+xml\"") && dom.contains("data=\"/flamegraph.svg?metric="), "no embedded flame graph:\n{dom}");
        // Recent samples name the Java thread.
        let samples = element(&dom, "<table id=\"samples\">", "table").unwrap_or_default();
        assert!(samples.contains("<td class=\"name\">busy</td>"), "no sample of the thread named busy:\n{samples}");
        // The resource selector lists every resource the server names.
        let metrics = element(&dom, "<select id=\"metric\">", "select").unwrap_or_default();
        for metric in pcct::Metric::ALL {
            assert!(metrics.contains(&format!("value=\"{}\"", metric.name())), "{metrics}");
        }
        assert!(element(&dom, "<table id=\"edges\">", "table").is_some_and(|t| t.contains("LiveTarget.busy → LiveTarget.alpha")), "hot edges");

        // A screenshot: a PNG of the window's size, and not a blank one (a
        // blank 1280x1024 PNG is a few KB; this page with its tables and
        // flame graph is well over 100 KB).
        let shot_path = fixture.path("page.png");
        let shot = chromium.screenshot(&format!("{base}/"), &shot_path, Duration::from_secs(3));
        assert_eq!(png_dimensions(&shot), Some(chromium.window), "{} is not a {:?} PNG", shot_path.display(), chromium.window);
        assert!(shot.len() > 40_000, "the screenshot is only {} bytes: blank?", shot.len());

        // The flame graph: over HTTP, and loaded in the browser.
        let svg = client.get("/flamegraph.svg").expect("GET /flamegraph.svg");
        assert_eq!(svg.status, 200);
        assert_eq!(svg.header("content-type"), Some("image/svg+xml"));
        let text = svg.text();
        assert!(text.contains("<svg") && text.contains(HOTTEST), "the flame graph lacks {HOTTEST}");
        let svg_dom = chromium.dump_dom(&format!("{base}/flamegraph.svg"), Duration::from_secs(2));
        assert!(svg_dom.contains("<svg") && svg_dom.contains(HOTTEST), "JDK {}: Chromium's flame graph lacks {HOTTEST}:\n{svg_dom}", jdk.major);

        let finished = served.jvm.wait_with_deadline(Duration::from_secs(60));
        finished.assert_success();
    }
}
