//! The live page as a person uses it, in headless Chromium driven through
//! the DevTools protocol (`pcct_tests::devtools`): the embedded flame
//! graph's own search (its "Search" button, a prompt answered with a
//! method) highlights that method's frames, a click on a frame zooms to
//! it, and both survive a reload (DOM checks in the embedded document,
//! screenshots); with a token, the login form lets the right token in (a
//! session cookie scripts cannot read) and keeps a wrong one out. The
//! first screen answers "where does the time go": the flame graph is on
//! top and as wide as the page, the hot lists fold their rows under 0.1 %,
//! and each section links to the documentation page (served by the agent)
//! that explains it.

use std::time::{Duration, Instant};

use pcct_tests::browser::png_dimensions;
use pcct_tests::devtools::{Browser, Page};
use pcct_tests::http::{start_served, Client, Served};
use pcct_tests::{assert_no_hs_err, one_jdk, poll_until, Fixture, Jdk, Jvm};
use serde_json::Value;

const HOTTEST: &str = "LiveTarget.alpha";
const SOON: Duration = Duration::from_secs(60);
const WINDOW: (u32, u32) = (1280, 1600);

/// LiveTarget with `options`, once its busy thread's hottest method is
/// the API's first hot method.
fn live_target(jdk: &Jdk, fixture: &Fixture, options: &str, client_token: Option<&str>) -> (Served, Client) {
    let mut served = start_served(Jvm::new(jdk, fixture, "LiveTarget"), fixture, options);
    served.jvm.wait_for_stdout_line("ready", SOON);
    let client = match client_token {
        Some(token) => served.client.clone().with_token(token),
        None => served.client.clone(),
    };
    poll_until(Instant::now() + SOON, || {
        let hot = client.get_json("/api/hot-methods?limit=1");
        (hot["profile"]["samples"].as_u64().unwrap_or(0) >= 300 && hot["methods"][0]["method"]["display"] == HOTTEST)
            .then_some(())
    })
    .unwrap_or_else(|| panic!("{HOTTEST} is not the hottest method within {SOON:?}"));
    (served, client)
}

fn finish(served: Served, fixture: &Fixture) {
    let finished = served.jvm.wait_with_deadline(Duration::from_secs(60));
    finished.assert_success();
    assert_no_hs_err(fixture.dir());
}

/// JavaScript: the embedded flame graph's document.
const FLAME: &str = "document.getElementById('flame').contentDocument";

/// Waits until the embedded flame graph has drawn its frames.
/// Drawn, and its script initialised: inferno's `init` (run at the SVG's
/// load) sets `searchbtn` and moves the search button to the graph's right
/// edge, so a click computed before it can miss the button (a CI run
/// timed out waiting for the search prompt, 2026-11-26).
fn wait_for_flame_graph(page: &mut Page<'_>) {
    let ready = format!("(() => {{ const d = {FLAME}; const w = document.getElementById('flame').contentWindow; return !!(d && d.getElementById('frames') && d.getElementById('frames').children.length > 3 && d.getElementById('search') && w && w.searchbtn && w.known_font_width !== undefined); }})()");
    let (_, ok) = page.wait_for(&ready, Instant::now() + SOON);
    assert!(ok, "the embedded flame graph never drew its frames");
}

/// Page coordinates of the centre of the embedded document's element
/// chosen by the JavaScript `finder` (given `d`, the document).
fn centre_in_flame(page: &mut Page<'_>, finder: &str) -> (f64, f64) {
    let script = format!(
        "(() => {{ const o = document.getElementById('flame'); const d = o.contentDocument; \
         const e = ({finder})(d); if (!e) return null; e.scrollIntoView({{ block: 'center' }}); const r = o.getBoundingClientRect(); const b = e.getBoundingClientRect(); \
         return [r.left + o.clientLeft + b.left + b.width / 2, r.top + o.clientTop + b.top + b.height / 2]; }})()"
    );
    let value = page.evaluate(&script);
    let point = value.as_array().unwrap_or_else(|| panic!("no element for {finder}"));
    (point[0].as_f64().unwrap(), point[1].as_f64().unwrap())
}

/// Titles of the frames the flame graph's search highlighted.
fn highlighted(page: &mut Page<'_>) -> Vec<String> {
    let script = format!(
        "(() => {{ const d = {FLAME}; const color = d.defaultView.searchcolor; \
         return [...d.querySelectorAll('#frames rect')].filter(r => r.getAttribute('fill') === color) \
         .map(r => r.parentElement.querySelector('title').textContent); }})()"
    );
    let value = page.evaluate(&script);
    value
        .as_array()
        .map(|titles| titles.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default()
}

/// The zoom state: (the unzoom button shows, frames hidden, widest frame of `method` in %).
fn zoom_state(page: &mut Page<'_>, method: &str) -> (bool, u64, f64) {
    let script = format!(
        "(() => {{ const d = {FLAME}; const g = [...d.getElementById('frames').children]; \
         const mine = g.filter(e => e.querySelector('title').textContent.startsWith('{method} ')) \
         .map(e => parseFloat(e.querySelector('rect').getAttribute('width'))); \
         return [!d.getElementById('unzoom').classList.contains('hide'), g.filter(e => e.classList.contains('hide')).length, Math.max(0, ...mine)]; }})()"
    );
    let value = page.evaluate(&script);
    (value[0].as_bool().unwrap(), value[1].as_u64().unwrap(), value[2].as_f64().unwrap())
}

fn screenshot(page: &mut Page<'_>, fixture: &Fixture, name: &str) -> Vec<u8> {
    let shot = page.screenshot(&fixture.path(name));
    let (width, height) = png_dimensions(&shot).unwrap_or_else(|| panic!("{name} is not a PNG"));
    assert!(width >= WINDOW.0 / 2 && height >= 400, "{name}: {width}x{height}");
    assert!(shot.len() > 40_000, "{name} is only {} bytes: blank?", shot.len());
    shot
}

/// A laptop's first screen.
const FIRST_SCREEN: (u32, u32) = (1280, 800);

one_jdk! {
    fn the_first_screen_shows_where_the_time_goes(jdk) {
        let fixture = Fixture::new("page-first-screen");
        let (served, client) = live_target(jdk, &fixture, "interval=1ms", None);
        let mut browser = Browser::launch(fixture.dir(), FIRST_SCREEN);
        let mut page = browser.open(&format!("{}/", served.client.base_url()));
        page.wait_for("document.getElementById('flame') !== null", Instant::now() + SOON);
        wait_for_flame_graph(&mut page);
        let (_, listed) = page.wait_for("document.querySelectorAll('#methods tbody tr').length > 0", Instant::now() + SOON);
        assert!(listed, "no hot methods listed");
        // The flame graph: the first panel, on the first screen, as wide as the page.
        let layout = page.evaluate(
            "(() => { const f = document.getElementById('flame').getBoundingClientRect(); \
             const m = document.getElementById('methods-panel').getBoundingClientRect(); \
             return [f.top, f.width, m.top, document.documentElement.clientWidth, window.innerHeight]; })()",
        );
        let number = |index: usize| layout[index].as_f64().unwrap_or(f64::NAN);
        let (flame_top, flame_width, methods_top, page_width, screen) = (number(0), number(1), number(2), number(3), number(4));
        assert!(flame_top < screen / 3.0, "the flame graph starts at {flame_top} px of a {screen} px screen");
        assert!(flame_top < methods_top, "the flame graph ({flame_top}) is below the hot methods ({methods_top})");
        assert!(flame_width >= page_width * 0.9, "the flame graph is {flame_width} px wide on a {page_width} px page");
        // No row of a hot list reads 0.0 %: those are folded, and said so.
        let shares = page.evaluate("[...document.querySelectorAll('#methods tbody tr, #edges tbody tr')].map(r => r.innerText)");
        let rows: Vec<&str> = shares.as_array().map(|rows| rows.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
        assert!(rows.iter().all(|row| !row.split_whitespace().any(|word| word == "0.0%")), "rows of 0.0%: {rows:#?}");
        let folded = page.evaluate("document.getElementById('methods-folded').innerText");
        assert!(folded.as_str().is_some_and(|note| note.contains("under 0.1% folded")), "no folded rows said: {folded}");
        // Each section's link names a documentation page the agent serves,
        // and a heading on it.
        let links = page.evaluate("[...document.querySelectorAll('section.panel h2 a.doc')].map(a => a.getAttribute('href'))");
        let links: Vec<&str> = links.as_array().map(|links| links.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
        let sections = page.evaluate("document.querySelectorAll('section.panel').length").as_u64().unwrap_or(0);
        assert_eq!(links.len() as u64, sections, "a section without its documentation link: {links:?}");
        for link in links {
            let (path, anchor) = link.split_once('#').unwrap_or((link, ""));
            let answer = client.get(path).unwrap_or_else(|e| panic!("{path}: {e}"));
            assert_eq!(answer.status, 200, "{link}: {}", answer.text());
            assert!(answer.text().contains(&format!("id=\"{anchor}\"")), "{link}: no such heading on the page");
        }
        screenshot(&mut page, &fixture, "first-screen.png");
        drop(browser);
        finish(served, &fixture);
    }
}

one_jdk! {
    fn the_embedded_flame_graph_searches_and_zooms(jdk) {
        let fixture = Fixture::new("page-flame");
        let (served, _client) = live_target(jdk, &fixture, "interval=1ms", None);
        let mut browser = Browser::launch(fixture.dir(), WINDOW);
        let mut page = browser.open(&format!("{}/", served.client.base_url()));
        // Keep the page from reloading the graph in the middle of the test.
        page.wait_for("document.getElementById('auto') !== null", Instant::now() + SOON);
        page.evaluate("document.getElementById('auto').checked = false");
        wait_for_flame_graph(&mut page);
        assert!(highlighted(&mut page).is_empty());

        // Search: the graph's own button, its prompt answered with the
        // method. (The click that opened a dialog is not answered by
        // Chromium: its answers are not waited for.) A click that opens no
        // prompt within seconds is made again at the button's position
        // then: a click computed while the embedded graph still moved
        // (scrolled into view, laid out) missed it in about one run in
        // three under load.
        let message = (0..5)
            .find_map(|_| {
                let search = centre_in_flame(&mut page, "d => d.getElementById('search')");
                page.click(search.0, search.1);
                page.try_answer_prompt("LiveTarget\\.alpha", Instant::now() + Duration::from_secs(5))
            })
            .expect("no search prompt after five clicks on the search button");
        assert!(message.contains("search term"), "{message}");
        page.wait_for(&format!("{FLAME}.getElementById('matched').textContent.startsWith('Matched:')"), Instant::now() + SOON);
        let found = highlighted(&mut page);
        assert!(!found.is_empty(), "the search highlighted nothing");
        assert!(found.iter().all(|title| title.starts_with(HOTTEST)), "highlighted: {found:?}");
        let matched = page.evaluate(&format!("{FLAME}.getElementById('matched').textContent"));
        assert!(matched.as_str().is_some_and(|text| text.starts_with("Matched:")), "{matched}");
        let searched = screenshot(&mut page, &fixture, "searched.png");

        // Zoom: a click on the busy thread's frame of the hottest method.
        let (zoomed_before, _, width_before) = zoom_state(&mut page, HOTTEST);
        assert!(!zoomed_before && width_before < 99.0, "zoomed before the click ({width_before}%)");
        let frame = centre_in_flame(&mut page, &format!(
            "d => [...d.getElementById('frames').children].filter(e => e.querySelector('title').textContent.startsWith('{HOTTEST} ')).sort((a, b) => b.querySelector('rect').getBBox().width - a.querySelector('rect').getBBox().width)[0]?.querySelector('rect')"
        ));
        let clicks = page.click(frame.0, frame.1);
        page.settle(clicks);
        let (zoomed, hidden, width) = zoom_state(&mut page, HOTTEST);
        assert!(zoomed && hidden > 0 && width > 99.0, "not zoomed: unzoom shown {zoomed}, {hidden} hidden, {HOTTEST} {width}%");
        let state = page.evaluate("document.getElementById('flame').contentWindow.location.search");
        let state = state.as_str().unwrap_or_default().to_string();
        assert!(state.contains("s=") && state.contains("x=") && state.contains("y="), "{state}");
        let zoomed_shot = screenshot(&mut page, &fixture, "zoomed.png");
        assert_ne!(searched, zoomed_shot, "the zoom changed nothing on screen");

        // The reload button keeps the search and the zoom.
        let reload = page.evaluate("(() => { const b = document.getElementById('reload-flame'); b.scrollIntoView(); const r = b.getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; })()");
        let clicks = page.click(reload[0].as_f64().unwrap(), reload[1].as_f64().unwrap());
        page.settle(clicks);
        wait_for_flame_graph(&mut page);
        let (_, restored) = page.wait_for(&format!("!{FLAME}.getElementById('unzoom').classList.contains('hide')"), Instant::now() + SOON);
        assert!(restored, "the zoom did not survive the reload");
        assert!(!highlighted(&mut page).is_empty(), "the search did not survive the reload");

        // The resource selector drives the hot lists and the graph.
        let (_, ranked) = page.wait_for("document.getElementById('methods-resource').textContent === 'cpu_ns'", Instant::now() + SOON);
        assert!(ranked, "hot methods not ranked by the tree's cpu_ns: {}", page.evaluate("document.getElementById('methods-panel').innerText"));
        page.evaluate("(() => { const s = document.getElementById('metric'); s.value = 'wall_ns'; s.dispatchEvent(new Event('change')); })()");
        let (_, switched) = page.wait_for(
            "document.getElementById('methods-resource').textContent === 'wall_ns' && document.getElementById('flame').data.includes('metric=wall_ns')",
            Instant::now() + SOON,
        );
        assert!(switched, "the selector did not switch the hot methods and the graph to wall_ns: {}", page.evaluate("document.getElementById('methods-panel').innerText"));
        drop(browser);
        finish(served, &fixture);
    }
}

const TOKEN: &str = "page-test-token-7";

/// Logs in through the form with `token` (typed, then the button clicked).
fn type_token_and_submit(page: &mut Page<'_>, token: &str) {
    let (_, ok) = page.wait_for("document.getElementById('token') !== null", Instant::now() + SOON);
    assert!(ok, "no login form");
    let field = page.evaluate("(() => { const r = document.getElementById('token').getBoundingClientRect(); return [r.left + 5, r.top + r.height / 2]; })()");
    let clicks = page.click(field[0].as_f64().unwrap(), field[1].as_f64().unwrap());
    page.settle(clicks);
    page.call("Input.insertText", serde_json::json!({ "text": token }));
    let button = page.evaluate("(() => { const r = document.getElementById('login').getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; })()");
    let clicks = page.click(button[0].as_f64().unwrap(), button[1].as_f64().unwrap());
    page.settle(clicks);
}

one_jdk! {
    fn with_a_token_the_login_form_lets_the_right_token_in(jdk) {
        let fixture = Fixture::new("page-login");
        let (served, _client) = live_target(jdk, &fixture, &format!("interval=1ms,token={TOKEN}"), Some(TOKEN));
        let base = served.client.base_url();
        {
            // A wrong token: the form again, and no way in.
            let mut browser = Browser::launch(fixture.dir(), WINDOW);
            let mut page = browser.open(&format!("{base}/"));
            type_token_and_submit(&mut page, "not-the-token");
            let (_, refused) = page.wait_for("document.getElementById('message')?.textContent.includes('not the token') === true", Instant::now() + SOON);
            assert!(refused, "no refusal shown");
            let status = page.evaluate("fetch('/api/status').then(r => r.status)");
            assert_eq!(status, 401);
        }
        let mut browser = Browser::launch(fixture.dir(), WINDOW);
        let mut page = browser.open(&format!("{base}/"));
        type_token_and_submit(&mut page, TOKEN);
        let rows = "document.querySelectorAll('#methods tbody tr').length > 0 && document.getElementById('status').textContent.includes('sampling')";
        let (_, in_) = page.wait_for(rows, Instant::now() + SOON);
        assert!(in_, "the page did not fill after the login: {}", page.evaluate("document.body.innerText"));
        let first = page.evaluate("document.querySelector('#methods tbody tr td').textContent");
        assert_eq!(first, HOTTEST);
        assert_eq!(page.evaluate("document.cookie.includes('pcct_session')"), false, "scripts can read the session cookie");
        assert_eq!(page.evaluate("fetch('/api/status').then(r => r.status)"), 200);
        // The embedded flame graph loads with the session too.
        wait_for_flame_graph(&mut page);
        screenshot(&mut page, &fixture, "logged-in.png");
        // Logging out ends the session. The page, refused at its next poll
        // (every 2 s), goes back to its login form, and that navigation can
        // come before the logout's own answer (its redirect to /login is
        // one more request): it then cuts the evaluation of the logout
        // ("Inspected target navigated or closed", 5 of 40 runs after
        // 5a2ddbf). The logout is sent once either way and answers, when
        // its answer comes, with the login form it redirects to; the test
        // goes on once the page shows that form, its navigation over.
        let logout = page.evaluate_unless_navigated(
            "fetch('/logout', { method: 'POST', headers: { 'Content-Type': 'application/json' } }).then(r => [r.status, new URL(r.url).pathname])",
        );
        if let Some(answer) = logout {
            assert_eq!(answer, serde_json::json!([200, "/login"]), "the logout's answer");
        }
        let (_, back) = page.wait_for("document.getElementById('token') !== null", Instant::now() + SOON);
        assert!(back, "the page did not go back to its login form after the logout: {:?}", page.evaluate_unless_navigated("location.href"));
        assert_eq!(page.evaluate("fetch('/api/status').then(r => r.status)"), 401, "let in after the logout");
        drop(browser);
        finish(served, &fixture);
    }
}
